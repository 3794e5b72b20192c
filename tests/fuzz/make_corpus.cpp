// Writes the seed corpus for envelope_fuzzer: valid envelopes of every built-in message type
// (made with the msgs:: builders and wire::encode_envelope, so seeds follow the encoder as it
// changes), with inline frames and shm placements under each resolver mode, plus edge cases.
//
//   make_corpus <corpus dir> [<dictionary file>]
//
// The optional dictionary lists the envelope's keys and dtype names for libFuzzer's -dict.
#include <msgpack.hpp>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "msgs/message.hpp"
#include "msgs/schema.hpp"
#include "msgs/types.hpp"
#include "msgs/wire.hpp"
#include "runtime/core/dtype.hpp"
#include "runtime/core/tensor.hpp"
#include "tests/fuzz/fuzz_input.hpp"

namespace {

using namespace edgevla;
using fuzz::ResolverMode;
using Bytes = std::vector<std::uint8_t>;

struct StringOut {
  std::string* out;
  void write(const char* data, std::size_t n) { out->append(data, n); }
};

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "make_corpus: %s\n", what.c_str());
  std::exit(1);
}

template <class T>
T must(Expected<T> e, const char* what) {
  if (!e) die(std::string(what) + ": " + e.status().to_string());
  return std::move(e).value();
}

// A tensor of `dtype` and `shape` whose bytes count up from `seed`.
Tensor pattern(DType dtype, const Shape& shape, unsigned seed = 1) {
  Tensor t = must(Tensor::empty(dtype, shape), "Tensor::empty");
  auto bytes = t.mutable_bytes();
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    bytes[i] = static_cast<std::byte>((seed + i * 7) & 0xff);
  }
  if (dtype == DType::kBool) {
    for (auto& b : bytes) b = static_cast<std::byte>(static_cast<unsigned>(b) & 1u);
  }
  return t;
}

Tensor floats(const Shape& shape, float start, float step) {
  Tensor t = must(Tensor::empty(DType::kF32, shape), "Tensor::empty");
  float* p = t.data<float>();
  for (std::int64_t i = 0; i < t.numel(); ++i) p[i] = start + step * static_cast<float>(i);
  return t;
}

void stamp(Message& m, std::string topic, std::uint64_t seq, int hops) {
  Header& h = m.header();
  h.topic = std::move(topic);
  h.seq = seq;
  h.source_stamp_ns = 1'700'000'000'000'000'000 + static_cast<std::int64_t>(seq);
  h.publish_stamp_ns = h.source_stamp_ns + 2'500'000;
  h.publisher = "robot/4242/1";
  for (int i = 0; i < hops; ++i) {
    h.trace.push_back({"node" + std::to_string(i), h.source_stamp_ns + i * 1000});
  }
}

// How a message's tensors travel in one seed.
enum class Placing { kInline, kShm, kMixed };

struct Writer {
  std::filesystem::path dir;
  int count = 0;

  void write(const Bytes& input) {
    char name[32];
    std::snprintf(name, sizeof name, "seed_%04d", count++);
    std::ofstream out(dir / name, std::ios::binary);
    out.write(reinterpret_cast<const char*>(input.data()), static_cast<std::streamsize>(input.size()));
    if (!out) die("cannot write " + (dir / name).string());
  }

  // Encodes `m` with its tensors placed per `placing` and writes one seed per resolver mode
  // that makes sense for it (all inline: none; with shm: every mode), aligned and not.
  void add(const Message& m, Placing placing) {
    std::vector<wire::TensorPlacement> placements;
    std::vector<Bytes> frames;
    bool any_shm = false;
    for (std::size_t i = 0; i < m.tensors().size(); ++i) {
      const Tensor& t = m.tensors()[i].tensor;
      const bool shm = placing == Placing::kShm || (placing == Placing::kMixed && i % 2 == 1) ||
                       frames.size() == fuzz::kMaxFrames;
      if (shm) {
        ShmLocation loc;
        loc.segment = "/edgevla.1000.4242.1." + std::to_string(i);
        loc.offset = 4096 * i;
        loc.size = t.nbytes();
        loc.generation = static_cast<std::uint32_t>(7 + i);
        placements.emplace_back(loc);
        any_shm = true;
      } else {
        placements.emplace_back(wire::InlineFrame{static_cast<std::uint32_t>(frames.size())});
        const auto b = t.bytes();
        if (b.size() > 0xffff) die("seed tensor too large for the fuzz input format");
        frames.emplace_back(reinterpret_cast<const std::uint8_t*>(b.data()),
                            reinterpret_cast<const std::uint8_t*>(b.data()) + b.size());
      }
    }
    std::string envelope;
    Status st = wire::encode_envelope(m, placements, envelope);
    if (!st) die("encode_envelope: " + st.to_string());
    // The same message as a bag record (every tensor inline under "data"), for decode_record.
    std::string record;
    std::vector<wire::TensorPlacement> inline_bytes(m.tensors().size(), wire::InlineBytes{});
    if (wire::encode_envelope(m, inline_bytes, record).is_ok()) {
      write(fuzz::join_input(ResolverMode::kNone, false, record, {}));
    }
    if (!any_shm) {
      write(fuzz::join_input(ResolverMode::kNone, false, envelope, frames));
      write(fuzz::join_input(ResolverMode::kExact, true, envelope, frames));
      return;
    }
    for (auto mode : {ResolverMode::kNone, ResolverMode::kError, ResolverMode::kExact,
                      ResolverMode::kMisbehave}) {
      write(fuzz::join_input(mode, mode == ResolverMode::kExact, envelope, frames));
    }
  }

  // A seed from raw parts (edge cases the encoder would not produce).
  void raw(std::string_view envelope, const std::vector<Bytes>& frames = {},
           ResolverMode mode = ResolverMode::kNone) {
    write(fuzz::join_input(mode, false, envelope, frames));
  }
};

Message prefix_cache(int layers, DType dtype, std::int64_t prefix) {
  Message m("BackboneOutput", 1);
  m.set_field("family", std::string("pi0"));
  m.set_tensor("kv", pattern(dtype, {layers, 2, prefix, 2, 4}, 3u));
  m.set_tensor("mask", pattern(DType::kBool, {prefix}));
  return m;
}

void write_corpus(Writer& w) {
  // Images: every encoding.
  struct Enc {
    const char* name;
    DType dtype;
    std::int64_t channels;
  };
  for (const Enc& e : {Enc{"rgb8", DType::kU8, 3}, Enc{"bgr8", DType::kU8, 3},
                       Enc{"rgba8", DType::kU8, 4}, Enc{"mono8", DType::kU8, 1},
                       Enc{"mono16", DType::kU16, 1}, Enc{"rgbf32", DType::kF32, 3}}) {
    Message m = must(msgs::Image::make(pattern(e.dtype, {4, 5, e.channels}), e.name, "wrist"),
                     "Image::make");
    m.set_field("frame", std::int64_t{17});
    stamp(m, "camera/wrist", 17, 1);
    w.add(m, Placing::kInline);
    w.add(m, Placing::kShm);
  }
  // An image whose encoding does not match its channels: decodes, then fails validate().
  {
    Message m("Image", 1);
    m.set_tensor("pixels", pattern(DType::kU8, {2, 2, 2}));
    m.set_field("encoding", std::string("rgb8"));
    m.set_field("camera", std::string("front"));
    stamp(m, "camera/front", 1, 0);
    w.add(m, Placing::kInline);
  }

  // Observation with images, tokens and mask.
  {
    Message m = must(msgs::Observation::make(floats({7}, -1.0f, 0.25f)), "Observation::make");
    m.set_tensor("image.wrist", pattern(DType::kU8, {3, 4, 3}));
    m.set_tensor("image.front", floats({3, 2, 2}, 0.0f, 0.5f));
    m.set_tensor("tokens", pattern(DType::kI32, {6}));
    m.set_tensor("token_mask", pattern(DType::kBool, {6}));
    m.set_field("prompt", std::string("pick up the red block"));
    stamp(m, "observation", 9, 2);
    w.add(m, Placing::kInline);
    w.add(m, Placing::kMixed);
    w.add(m, Placing::kShm);
  }

  // Prefix caches in each float dtype the schema accepts.
  for (DType d : {DType::kBF16, DType::kF16, DType::kF32}) {
    Message m = prefix_cache(2, d, 3);
    stamp(m, "vlm/prefix", 5, 3);
    w.add(m, Placing::kInline);
    w.add(m, Placing::kMixed);
  }
  {
    Message m = prefix_cache(1, DType::kBF16, 0);  // an empty prefix: zero-size tensors
    stamp(m, "vlm/prefix", 6, 1);
    w.add(m, Placing::kInline);
  }

  // Action chunks, joint commands, node status.
  {
    Message m = must(msgs::ActionChunk::make(floats({8, 7}, 0.0f, 0.01f), 0.02), "ActionChunk::make");
    m.set_field("observation_seq", std::int64_t{9});
    stamp(m, "actions", 3, 4);
    w.add(m, Placing::kInline);
    w.add(m, Placing::kShm);
  }
  for (DType d : {DType::kF32, DType::kF64}) {
    Message m = must(msgs::JointCommand::make(pattern(d, {7})), "JointCommand::make");
    m.set_tensor("velocity", pattern(d, {7}, 9));
    stamp(m, "joints/command", 100, 5);
    w.add(m, Placing::kInline);
    w.add(m, Placing::kMixed);
  }
  {
    Message m("NodeStatus", 1);
    m.set_field("node", std::string("policy"));
    m.set_field("state", std::string("active"));
    m.set_field("rate_hz", 29.97);
    m.set_field("dropped", std::int64_t{-3});
    m.set_field("healthy", true);
    stamp(m, "status", 1, 0);
    w.add(m, Placing::kInline);
  }

  // An unknown type carrying every dtype, a scalar, a zero-size tensor and a rank-8 tensor.
  {
    Message m("Custom", 7);
    for (int i = 0; i < kNumDTypes; ++i) {
      const auto d = static_cast<DType>(i);
      m.set_tensor(std::string(dtype_name(d)), pattern(d, {2, 3}, static_cast<unsigned>(i)));
    }
    stamp(m, "custom/all_dtypes", 1, 1);
    w.add(m, Placing::kMixed);
  }
  {
    Message m("Custom", 1);
    m.set_tensor("scalar", pattern(DType::kF64, {}));
    m.set_tensor("empty", pattern(DType::kF32, {0, 3}));
    m.set_tensor("rank8", pattern(DType::kU8, {1, 2, 1, 2, 1, 2, 1, 2}));
    m.set_field("pi", 3.14159);
    m.set_field("nan", std::numeric_limits<double>::quiet_NaN());
    m.set_field("big", std::numeric_limits<std::int64_t>::max());
    m.set_field("small", std::numeric_limits<std::int64_t>::min());
    m.set_field("empty", std::string());
    // Integral doubles must stay floats on the wire (msgpack-cxx's pack_double would write
    // these as integers; 2^64 even as undefined behaviour).
    m.set_field("two", 2.0);
    m.set_field("neg_zero", -0.0);
    m.set_field("two_pow_64", 18446744073709551616.0);
    m.set_field("huge", 1e19);
    stamp(m, "", 0, 0);
    m.header().source_stamp_ns = std::numeric_limits<std::int64_t>::min();
    m.header().seq = std::numeric_limits<std::uint64_t>::max();
    w.add(m, Placing::kInline);
    w.add(m, Placing::kMixed);
  }
  {
    Message m("Empty", 0);  // no tensors, no fields, no trace
    w.add(m, Placing::kInline);
  }

  // Malformed edge cases, hand-built.
  {
    Message m = must(msgs::JointCommand::make(pattern(DType::kF32, {4})), "JointCommand::make");
    std::string env;
    std::vector<wire::TensorPlacement> at{wire::InlineFrame{0}};
    if (!wire::encode_envelope(m, at, env)) die("encode");
    const Bytes frame(16, 0x3f);
    w.raw(env, {});                                 // frame missing
    w.raw(env, {Bytes(15, 0x3f)});                  // frame one byte short
    w.raw(env + '\xc0', {frame});                   // trailing byte after the map
    w.raw(env.substr(0, env.size() / 2), {frame});  // truncated envelope
    at = {wire::InlineFrame{3}};
    if (!wire::encode_envelope(m, at, env)) die("encode");
    w.raw(env, {frame});  // frame index past the frames
  }
  {
    // A zero-size tensor whose other dims multiply past int64: its strides would overflow.
    std::string env;
    StringOut sink{&env};
    msgpack::packer<StringOut> p(sink);
    p.pack_map(5);
    p.pack("edgevla"); p.pack(1);
    p.pack("type"); p.pack("Custom");
    p.pack("topic"); p.pack("t");
    p.pack("seq"); p.pack(1);
    p.pack("tensors");
    p.pack_array(1);
    p.pack_map(5);
    p.pack("name"); p.pack("zero");
    p.pack("dtype"); p.pack("u8");
    p.pack("shape");
    p.pack_array(3);
    p.pack(0); p.pack(std::uint64_t{1} << 40); p.pack(std::uint64_t{1} << 40);
    p.pack("nbytes"); p.pack(0);
    p.pack("frame"); p.pack(0);
    w.raw(env, {Bytes{}});
  }
  w.raw("");
  w.raw("\x80");                          // an empty map
  w.raw(std::string("\x81\xa7" "edgevla\x02", 10));  // wrong wire version
  w.raw("\x91\x01");                      // an array, not a map
  w.raw(std::string("\xa5topic\x00", 7));  // a topic frame where the envelope should be
}

void write_dictionary(const std::filesystem::path& path) {
  std::ofstream out(path);
  auto entry = [&out](std::string_view s) {
    out << '"';
    for (unsigned char c : s) {
      char buf[8];
      if (c == '"' || c == '\\' || c < 0x20 || c >= 0x7f) {
        std::snprintf(buf, sizeof buf, "\\x%02x", c);
        out << buf;
      } else {
        out << c;
      }
    }
    out << "\"\n";
  };
  // Envelope and descriptor keys as msgpack fixstr (length byte first), and bare.
  for (std::string_view k : {"edgevla", "type", "type_version", "topic", "seq", "src", "pub",
                             "publisher", "trace", "fields", "tensors", "name", "dtype", "shape",
                             "nbytes", "frame", "shm", "segment", "offset", "gen", "pixels",
                             "encoding", "camera", "actions", "family", "mask", "kv",
                             "state", "tokens", "token_mask", "image.", "position"}) {
    std::string fix(1, static_cast<char>(0xa0 | k.size()));
    fix += k;
    entry(fix);
    entry(k);
  }
  for (int i = 0; i < kNumDTypes; ++i) {
    const auto name = dtype_name(static_cast<DType>(i));
    std::string fix(1, static_cast<char>(0xa0 | name.size()));
    fix += name;
    entry(fix);
  }
  for (const MessageSchema* schema : all_schemas()) {
    std::string fix(1, static_cast<char>(0xa0 | schema->type.size()));
    fix += schema->type;
    entry(fix);
  }
  // msgpack headers for large counts and 64-bit integers.
  entry(std::string("\xdc\xff\xff", 3));
  entry(std::string("\xde\xff\xff", 3));
  entry(std::string("\xdd\xff\xff\xff\xff", 5));
  entry(std::string("\xcf\xff\xff\xff\xff\xff\xff\xff\xff", 9));
  entry(std::string("\xcf\x00\x00\x01\x00\x00\x00\x00\x00", 9));
  entry(std::string("\xd3\x80\x00\x00\x00\x00\x00\x00\x00", 9));
  if (!out) die("cannot write " + path.string());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: %s <corpus dir> [<dictionary file>]\n", argv[0]);
    return 2;
  }
  Writer w{argv[1]};
  std::filesystem::create_directories(w.dir);
  write_corpus(w);
  if (argc == 3) write_dictionary(argv[2]);
  std::printf("make_corpus: wrote %d seeds to %s\n", w.count, argv[1]);
  return 0;
}
