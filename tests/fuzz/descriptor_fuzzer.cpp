// libFuzzer target for the wire format's shared-memory descriptors and the sequence peek
// (msgs/wire.cpp: decode's "shm" descriptors, peek_sequence).
//
// Inputs split as envelope_fuzzer's do (fuzz_input.hpp), so the two share seeds. Properties:
// no crash, hang, leak or UB; peek_sequence never fails on an envelope decode accepts and
// agrees with its publisher and sequence; every descriptor decode hands the resolver names a
// block of exactly its tensor's size; re-encoding the decoded message with the same shm
// placements hands the resolver the same descriptors again (segment, offset, size,
// generation), so what a publisher writes is what a subscriber maps.
//
// Seeds (tests/fuzz/corpus/descriptor/): the envelope seeds with shm placements.
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "msgs/message.hpp"
#include "msgs/wire.hpp"
#include "tests/fuzz/fuzz_input.hpp"
#include "tests/fuzz/fuzz_util.hpp"

namespace {

using namespace edgevla;
constexpr const char* kTarget = "descriptor_fuzzer";
constexpr std::uint64_t kShmCap = 64 * 1024;

wire::Frame heap_frame(std::span<const std::uint8_t> bytes) {
  std::shared_ptr<std::byte[]> block(new std::byte[bytes.size()]);
  if (!bytes.empty()) std::memcpy(block.get(), bytes.data(), bytes.size());
  return {std::span<const std::byte>(block.get(), bytes.size()), block};
}

// A resolver that hands out zero-filled heap blocks and remembers what it was asked for.
wire::ShmResolver recording(std::vector<ShmLocation>& seen) {
  return [&seen](const ShmLocation& loc) -> Expected<BufferPtr> {
    seen.push_back(loc);
    if (loc.size > kShmCap) return resource_exhausted("shm block too large for the fuzz pool");
    const auto size = static_cast<std::size_t>(loc.size);
    std::shared_ptr<std::byte[]> block(new std::byte[size]());
    Buffer::Options o;
    o.kind = BufferKind::kSharedMemory;
    o.writable = false;
    o.shm = loc;
    o.release = [block]() mutable { block.reset(); };
    std::byte* data = block.get();
    return std::make_shared<Buffer>(data, size, std::move(o));
  };
}

bool same_loc(const ShmLocation& a, const ShmLocation& b) {
  return a.segment == b.segment && a.offset == b.offset && a.size == b.size && a.generation == b.generation;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const fuzz::Split in = fuzz::split_input({data, size});
  const wire::Frame envelope = heap_frame(in.envelope);
  auto peeked = wire::peek_sequence(envelope.bytes);
  if (!peeked) FUZZ_CHECK(!peeked.status().message().empty(), "");

  std::vector<wire::Frame> frames;
  for (const auto& f : in.frames) frames.push_back(heap_frame(f));
  std::vector<ShmLocation> seen;
  auto decoded = wire::decode(envelope.bytes, frames, recording(seen));
  if (!decoded) {
    FUZZ_CHECK(!decoded.status().message().empty(), "");
    return 0;
  }
  const Message& m = *decoded;
  FUZZ_CHECK(peeked.has_value(), peeked.status().to_string());
  FUZZ_CHECK(peeked->publisher == m.header().publisher, "");
  FUZZ_CHECK(peeked->seq == m.header().seq, "");

  // Which tensors came from shared memory, in order, and their descriptors.
  std::vector<wire::TensorPlacement> placements;
  std::vector<wire::Frame> inline_frames;
  std::size_t shm_index = 0;
  for (const NamedTensor& nt : m.tensors()) {
    const BufferPtr& b = nt.tensor.buffer();
    if (b && b->kind() == BufferKind::kSharedMemory) {
      FUZZ_CHECK(shm_index < seen.size(), nt.name);
      const ShmLocation& loc = seen[shm_index++];
      FUZZ_CHECK(loc.size == nt.tensor.nbytes(), nt.name + ": descriptor size " + std::to_string(loc.size) +
                                                     " for " + std::to_string(nt.tensor.nbytes()) + " bytes");
      placements.emplace_back(loc);
    } else {
      placements.emplace_back(wire::InlineFrame{static_cast<std::uint32_t>(inline_frames.size())});
      inline_frames.push_back({nt.tensor.bytes(), nt.tensor.buffer()});
    }
  }
  FUZZ_CHECK(shm_index == seen.size(), "the resolver was asked for blocks no tensor uses");
  std::string again;
  const Status st = wire::encode_envelope(m, placements, again);
  FUZZ_CHECK(st.is_ok(), st.to_string());
  std::vector<ShmLocation> seen_again;
  auto redecoded = wire::decode(std::as_bytes(std::span<const char>(again)), inline_frames, recording(seen_again));
  if (!redecoded) return 0;  // a message over the decoder's bounds (see envelope_fuzzer)
  FUZZ_CHECK(seen_again.size() == seen.size(), "");
  for (std::size_t i = 0; i < seen.size(); ++i) FUZZ_CHECK(same_loc(seen[i], seen_again[i]), seen[i].segment);
  return 0;
}
