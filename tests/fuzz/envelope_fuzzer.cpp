// libFuzzer target for the message envelope decoder (msgs/wire.cpp).
//
// Properties checked on every input (see fuzz_input.hpp for how an input is split):
//   - wire::decode never crashes, hangs, leaks or hits UB (ASan/UBSan/LSan), and every
//     failure is a non-ok Status with a message;
//   - a decoded message's tensors are defined, contiguous, CPU, exactly nbytes() long and
//     every byte is readable after the harness has dropped its own frame references (so a
//     view past its frame or a dangling frame is caught by ASan);
//   - validate() against the type's schema (when the type is known) does not crash;
//   - re-encoding the decoded message and decoding it again gives the same message.
// wire::parse_topic_frame is fuzzed on the same bytes.
//
// Build and run: tests/fuzz/run_fuzz.sh [seconds].
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "msgs/message.hpp"
#include "msgs/schema.hpp"
#include "msgs/wire.hpp"
#include "runtime/core/tensor.hpp"
#include "tests/fuzz/fuzz_input.hpp"

namespace {

using namespace edgevla;
using fuzz::ResolverMode;

// Largest shm block the resolver hands out; larger descriptors get resource_exhausted, as a
// real pool would for a block it does not have.
constexpr std::uint64_t kShmCap = 64 * 1024;

[[noreturn]] void fail(const char* what, const std::string& detail = {}) {
  std::fprintf(stderr, "envelope_fuzzer: property violated: %s %s\n", what, detail.c_str());
  std::fflush(stderr);
  std::abort();
}

#define FUZZ_CHECK(cond, detail)      \
  do {                                \
    if (!(cond)) fail(#cond, detail); \
  } while (0)

// Exact-size heap copy of `bytes` (plus `pad` bytes in front), so ASan flags any read past the
// end. The returned span views the copy; `owner` keeps it alive.
wire::Frame heap_frame(std::span<const std::uint8_t> bytes, std::size_t pad) {
  std::shared_ptr<std::byte[]> block(new std::byte[pad + bytes.size()]);
  if (!bytes.empty()) std::memcpy(block.get() + pad, bytes.data(), bytes.size());
  return {std::span<const std::byte>(block.get() + pad, bytes.size()), block};
}

BufferPtr heap_shm_buffer(const ShmLocation& loc, std::size_t size) {
  std::shared_ptr<std::byte[]> block(new std::byte[size]);
  for (std::size_t i = 0; i < size; ++i) {
    block[i] = static_cast<std::byte>((i * 131 + loc.generation) & 0xff);
  }
  Buffer::Options o;
  o.kind = BufferKind::kSharedMemory;
  o.writable = false;
  o.shm = loc;
  o.release = [block]() mutable { block.reset(); };
  std::byte* data = block.get();
  return std::make_shared<Buffer>(data, size, std::move(o));
}

wire::ShmResolver make_resolver(ResolverMode mode) {
  switch (mode) {
    case ResolverMode::kNone:
      return {};
    case ResolverMode::kError:
      return [](const ShmLocation& loc) -> Expected<BufferPtr> {
        if (loc.generation % 2 == 0) return not_found("shm segment '" + loc.segment + "' is gone");
        return unavailable("shm block generation " + std::to_string(loc.generation) + " recycled");
      };
    case ResolverMode::kExact:
      return [](const ShmLocation& loc) -> Expected<BufferPtr> {
        if (loc.size > kShmCap) return resource_exhausted("shm block too large for the fuzz pool");
        return heap_shm_buffer(loc, static_cast<std::size_t>(loc.size));
      };
    case ResolverMode::kMisbehave:
      return [](const ShmLocation& loc) -> Expected<BufferPtr> {
        if (loc.size > kShmCap) return resource_exhausted("shm block too large for the fuzz pool");
        if (loc.generation % 3 == 0) return BufferPtr{};  // a null buffer "value"
        const std::size_t size = static_cast<std::size_t>(loc.size);
        if (loc.generation % 3 == 1) return heap_shm_buffer(loc, size + 1);
        return heap_shm_buffer(loc, size == 0 ? 0 : size - 1);
      };
  }
  return {};
}

volatile std::uint8_t g_sink;

// Reads every byte of every tensor and checks its invariants.
void touch_tensors(const Message& m, std::size_t max_tensor_bytes) {
  std::uint8_t acc = 0;
  for (const NamedTensor& nt : m.tensors()) {
    const Tensor& t = nt.tensor;
    FUZZ_CHECK(t.defined(), nt.name);
    FUZZ_CHECK(t.is_contiguous(), nt.name);
    FUZZ_CHECK(t.device().is_cpu(), nt.name);
    FUZZ_CHECK(t.numel() >= 0, nt.name);
    FUZZ_CHECK(t.nbytes() <= max_tensor_bytes, nt.name);
    const auto bytes = t.bytes();
    FUZZ_CHECK(bytes.size() == t.nbytes(), nt.name);
    FUZZ_CHECK(t.offset() + t.nbytes() <= t.buffer()->size(), nt.name);
    for (std::byte b : bytes) acc ^= static_cast<std::uint8_t>(b);
    auto summary = summarize(t);
    FUZZ_CHECK(summary.has_value(), summary.status().to_string());
    (void)t.describe();
  }
  g_sink = acc;
}

bool same_field(const FieldValue& a, const FieldValue& b) {
  if (a.index() != b.index()) return false;
  if (const auto* da = std::get_if<double>(&a)) {
    // Bitwise, so NaN payloads must survive too.
    return std::memcmp(da, &std::get<double>(b), sizeof(double)) == 0;
  }
  return a == b;
}

void check_same(const Message& a, const Message& b) {
  FUZZ_CHECK(a.type() == b.type(), a.type());
  FUZZ_CHECK(a.version() == b.version(), a.type());
  const Header& ha = a.header();
  const Header& hb = b.header();
  FUZZ_CHECK(ha.topic == hb.topic, ha.topic);
  FUZZ_CHECK(ha.seq == hb.seq, "");
  FUZZ_CHECK(ha.source_stamp_ns == hb.source_stamp_ns, "");
  FUZZ_CHECK(ha.publish_stamp_ns == hb.publish_stamp_ns, "");
  FUZZ_CHECK(ha.publisher == hb.publisher, "");
  FUZZ_CHECK(ha.trace == hb.trace, "");
  FUZZ_CHECK(a.fields().size() == b.fields().size(), "");
  for (auto ia = a.fields().begin(), ib = b.fields().begin(); ia != a.fields().end(); ++ia, ++ib) {
    FUZZ_CHECK(ia->first == ib->first, ia->first);
    FUZZ_CHECK(same_field(ia->second, ib->second), ia->first);
  }
  FUZZ_CHECK(a.tensors().size() == b.tensors().size(), "");
  for (std::size_t i = 0; i < a.tensors().size(); ++i) {
    const NamedTensor& x = a.tensors()[i];
    const NamedTensor& y = b.tensors()[i];
    FUZZ_CHECK(x.name == y.name, x.name);
    FUZZ_CHECK(x.tensor.dtype() == y.tensor.dtype(), x.name);
    FUZZ_CHECK(x.tensor.shape() == y.tensor.shape(), x.name);
    const auto bx = x.tensor.bytes();
    const auto by = y.tensor.bytes();
    FUZZ_CHECK(bx.size() == by.size(), x.name);
    FUZZ_CHECK(bx.empty() || std::memcmp(bx.data(), by.data(), bx.size()) == 0, x.name);
  }
}

// encode(decode(x)) decodes to the same message. The encoder does not enforce the decoder's
// count bounds, so a message that already exceeds one (possible when a key repeats: the
// decoder appends each 'trace' and merges each 'fields') may fail to decode again; that
// failure must then name the bound.
void check_round_trip(const Message& m) {
  std::vector<wire::TensorPlacement> placements;
  std::vector<wire::Frame> frames;
  for (std::size_t i = 0; i < m.tensors().size(); ++i) {
    placements.emplace_back(wire::InlineFrame{static_cast<std::uint32_t>(i)});
    const Tensor& t = m.tensors()[i].tensor;
    frames.push_back({t.bytes(), t.buffer()});
  }
  std::string envelope;
  Status st = wire::encode_envelope(m, placements, envelope);
  FUZZ_CHECK(st.is_ok(), st.to_string());
  auto again = wire::decode(std::as_bytes(std::span<const char>(envelope)), frames, nullptr);
  if (!again) {
    const bool over_bound = m.header().trace.size() > wire::kMaxTraceHops ||
                            m.fields().size() > wire::kMaxFields ||
                            envelope.size() > wire::kMaxEnvelopeBytes;
    FUZZ_CHECK(over_bound, again.status().to_string());
    return;
  }
  check_same(m, *again);
}

void fuzz_topic_frame(std::span<const std::uint8_t> bytes) {
  const wire::Frame f = heap_frame(bytes, 0);
  auto topic = wire::parse_topic_frame(f.bytes);
  if (topic) {
    FUZZ_CHECK(!bytes.empty() && bytes.back() == 0, "");
    FUZZ_CHECK(topic->size() == bytes.size() - 1, "");
    // The topic round-trips through topic_frame.
    const std::string again = wire::topic_frame(*topic);
    FUZZ_CHECK(again.size() == bytes.size() &&
                   std::memcmp(again.data(), bytes.data(), bytes.size()) == 0,
               "");
  } else {
    FUZZ_CHECK(!topic.status().is_ok() && !topic.status().message().empty(), "");
  }
}

// The bag-record decoder (tensor bytes inline as msgpack bins, viewed in place).
void fuzz_record(std::span<const std::uint8_t> bytes) {
  const wire::Frame owned = heap_frame(bytes, 0);
  auto decoded = wire::decode_record(owned.bytes, owned.owner);
  if (!decoded) {
    FUZZ_CHECK(!decoded.status().message().empty(), "");
    return;
  }
  touch_tensors(*decoded, bytes.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const fuzz::Split in = fuzz::split_input({data, size});
  fuzz_topic_frame(in.envelope);
  fuzz_record(in.envelope);

  const wire::Frame envelope = heap_frame(in.envelope, 0);
  std::vector<wire::Frame> frames;
  frames.reserve(in.frames.size());
  for (const auto& f : in.frames) frames.push_back(heap_frame(f, in.misalign ? 1 : 0));
  const wire::ShmResolver resolve = make_resolver(in.resolver);

  auto decoded = wire::decode(envelope.bytes, frames, resolve);
  // Drop the harness's own references: decoded tensors must keep their frames alive.
  frames.clear();
  if (!decoded) {
    const Status& st = decoded.status();
    FUZZ_CHECK(!st.is_ok() && !st.message().empty(), st.to_string());
    return 0;
  }
  const Message& m = *decoded;
  // No tensor can be larger than the input (inline) or the resolver's cap (shm).
  touch_tensors(m, std::max<std::size_t>(size, kShmCap));
  for (const auto& [name, value] : m.fields()) (void)field_to_string(value);
  if (const MessageSchema* schema = find_schema(m.type())) {
    const Status st = validate(m, *schema);
    FUZZ_CHECK(st.is_ok() || !st.message().empty(), m.type());
  }
  check_round_trip(m);
  return 0;
}
