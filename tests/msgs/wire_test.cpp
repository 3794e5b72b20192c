#include "msgs/wire.hpp"

#include <gtest/gtest.h>
#include <msgpack.hpp>

#include <cmath>

#include "msgs/types.hpp"

namespace edgevla::wire {
namespace {

std::span<const std::byte> as_bytes(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

Message sample() {
  Tensor px = *Tensor::empty(DType::kU8, Shape{2, 3, 3});
  for (int i = 0; i < 18; ++i) px.data<std::uint8_t>()[i] = static_cast<std::uint8_t>(i);
  Message m = *msgs::Image::make(px, "rgb8", "base");
  m.set_field("frame", std::int64_t{-4});
  m.set_field("gain", 1.5);
  m.set_field("auto", true);
  Header& h = m.header();
  h.topic = "/cam";
  h.seq = 7;
  h.source_stamp_ns = 100;
  h.publish_stamp_ns = 200;
  h.publisher = "host/1/1";
  h.trace = {{"camera", 150}, {"pre", 190}};
  h.callback_stamp_ns = 180;
  h.inputs = {{"/cam/raw", 120, true}, {"/robot/state", -5, false}};
  h.taken = {{"/robot/state", -5, 150}, {"/cam/raw", 120, 180}};
  h.taken_lost = 3;
  return m;
}

struct Encoded {
  std::string envelope;
  std::vector<Frame> frames;
};

Encoded encode_inline(const Message& m) {
  Encoded e;
  std::vector<TensorPlacement> p;
  for (std::size_t i = 0; i < m.tensors().size(); ++i) {
    p.push_back(InlineFrame{static_cast<std::uint32_t>(i)});
    e.frames.push_back({m.tensors()[i].tensor.bytes(), m.tensors()[i].tensor.buffer()});
  }
  EXPECT_TRUE(encode_envelope(m, p, e.envelope).is_ok());
  return e;
}

TEST(Wire, InlineRoundTripKeepsEverything) {
  const Message m = sample();
  Encoded e = encode_inline(m);
  auto d = decode(as_bytes(e.envelope), e.frames, nullptr);
  ASSERT_TRUE(d.has_value()) << d.status().to_string();
  EXPECT_EQ(d->type(), "Image");
  EXPECT_EQ(d->version(), 1u);
  EXPECT_EQ(d->header().topic, "/cam");
  EXPECT_EQ(d->header().seq, 7u);
  EXPECT_EQ(d->header().source_stamp_ns, 100);
  EXPECT_EQ(d->header().publish_stamp_ns, 200);
  EXPECT_EQ(d->header().publisher, "host/1/1");
  EXPECT_EQ(d->header().trace, m.header().trace);
  EXPECT_EQ(d->header().callback_stamp_ns, 180);
  EXPECT_EQ(d->header().inputs, m.header().inputs);
  EXPECT_EQ(d->header().taken, m.header().taken);
  EXPECT_EQ(d->header().taken_lost, 3u);
  EXPECT_EQ(*d->int_field("frame"), -4);
  EXPECT_EQ(*d->number_field("gain"), 1.5);
  EXPECT_EQ(*d->bool_field("auto"), true);
  const Tensor& px = *d->tensor("pixels");
  EXPECT_EQ(px.shape(), (Shape{2, 3, 3}));
  // Zero copy: the tensor views the frame's bytes.
  EXPECT_EQ(px.raw_data(), e.frames[0].bytes.data());
  EXPECT_TRUE(validate(*d, msgs::Image::schema()).is_ok());
}

TEST(Wire, ShmDescriptorGoesThroughTheResolver) {
  const Message m = sample();
  ShmLocation loc{"/edgevla.0.1.1.0", 4096, 18, 42};
  std::string env;
  std::vector<TensorPlacement> p = {loc};
  ASSERT_TRUE(encode_envelope(m, p, env).is_ok());
  ShmLocation seen;
  auto backing = *Buffer::allocate_heap(18);
  auto d = decode(as_bytes(env), {}, [&](const ShmLocation& l) -> Expected<BufferPtr> {
    seen = l;
    return backing;
  });
  ASSERT_TRUE(d.has_value()) << d.status().to_string();
  EXPECT_EQ(seen.segment, loc.segment);
  EXPECT_EQ(seen.offset, 4096u);
  EXPECT_EQ(seen.size, 18u);
  EXPECT_EQ(seen.generation, 42u);
  EXPECT_EQ(d->tensor("pixels")->raw_data(), backing->data());
  // Without a resolver (tcp), a shm descriptor is a clear error.
  auto no = decode(as_bytes(env), {}, nullptr);
  ASSERT_FALSE(no.has_value());
  EXPECT_NE(no.status().message().find("shared memory"), std::string::npos);
  // A resolver error (vanished segment) is passed on with the tensor's name.
  auto gone = decode(as_bytes(env), {}, [](const ShmLocation&) -> Expected<BufferPtr> {
    return not_found("segment vanished");
  });
  ASSERT_FALSE(gone.has_value());
  EXPECT_NE(gone.status().message().find("pixels"), std::string::npos);
}

TEST(Wire, FrameSizeMustMatchShape) {
  Encoded e = encode_inline(sample());
  e.frames[0].bytes = e.frames[0].bytes.first(17);
  auto d = decode(as_bytes(e.envelope), e.frames, nullptr);
  ASSERT_FALSE(d.has_value());
  EXPECT_EQ(d.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(d.status().message().find("frame holds 17"), std::string::npos);
  auto missing = decode(as_bytes(e.envelope), {}, nullptr);
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.status().message().find("frame 0"), std::string::npos);
}

TEST(Wire, TruncatedAndGarbageEnvelopesAreErrors) {
  Encoded e = encode_inline(sample());
  for (std::size_t cut : {std::size_t{0}, std::size_t{1}, e.envelope.size() / 2, e.envelope.size() - 1}) {
    auto d = decode(as_bytes(e.envelope.substr(0, cut)), e.frames, nullptr);
    EXPECT_FALSE(d.has_value()) << "cut at " << cut;
  }
  auto trailing = decode(as_bytes(e.envelope + "x"), e.frames, nullptr);
  ASSERT_FALSE(trailing.has_value());
  EXPECT_NE(trailing.status().message().find("trailing"), std::string::npos);
  EXPECT_FALSE(decode(as_bytes(std::string("\x93\x01\x02\x03")), {}, nullptr).has_value());
}

// Builds envelopes by hand to reach each check.
std::string envelope_with(const std::function<void(msgpack::packer<msgpack::sbuffer>&)>& tensor,
                          std::uint32_t wire = kWireVersion, bool extra_key = false) {
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> p(buf);
  p.pack_map(extra_key ? 7 : 6);
  p.pack(std::string("edgevla"));
  p.pack(wire);
  p.pack(std::string("type"));
  p.pack(std::string("Blob"));
  p.pack(std::string("type_version"));
  p.pack(1);
  p.pack(std::string("topic"));
  p.pack(std::string("/x"));
  p.pack(std::string("seq"));
  p.pack(1);
  p.pack(std::string("tensors"));
  p.pack_array(1);
  tensor(p);
  if (extra_key) {
    p.pack(std::string("from_the_future"));
    p.pack(std::vector<int>{1, 2, 3});
  }
  return std::string(buf.data(), buf.size());
}

void pack_desc(msgpack::packer<msgpack::sbuffer>& p, const std::string& dtype, std::vector<std::uint64_t> shape,
               std::uint64_t nbytes) {
  p.pack_map(5);
  p.pack(std::string("name"));
  p.pack(std::string("t"));
  p.pack(std::string("dtype"));
  p.pack(dtype);
  p.pack(std::string("shape"));
  p.pack(shape);
  p.pack(std::string("nbytes"));
  p.pack(nbytes);
  p.pack(std::string("frame"));
  p.pack(0);
}

TEST(Wire, DescriptorChecks) {
  std::vector<std::byte> bytes(16);
  std::vector<Frame> frames = {{bytes, nullptr}};
  auto ok = decode(as_bytes(envelope_with([](auto& p) { pack_desc(p, "f32", {2, 2}, 16); }, kWireVersion, true)),
                   frames, nullptr);
  EXPECT_TRUE(ok.has_value()) << ok.status().to_string();  // unknown keys are ignored

  auto dtype = decode(as_bytes(envelope_with([](auto& p) { pack_desc(p, "float99", {4}, 16); })), frames, nullptr);
  ASSERT_FALSE(dtype.has_value());
  EXPECT_NE(dtype.status().message().find("float99"), std::string::npos);

  auto mismatch = decode(as_bytes(envelope_with([](auto& p) { pack_desc(p, "f32", {3}, 16); })), frames, nullptr);
  ASSERT_FALSE(mismatch.has_value());
  EXPECT_NE(mismatch.status().message().find("needs 12 bytes"), std::string::npos);

  auto huge = decode(as_bytes(envelope_with([](auto& p) {
                       pack_desc(p, "f64", {1ull << 30, 1ull << 30, 1ull << 30}, 16);
                     })),
                     frames, nullptr);
  EXPECT_FALSE(huge.has_value());

  auto version = decode(as_bytes(envelope_with([](auto& p) { pack_desc(p, "f32", {4}, 16); }, 9)), frames, nullptr);
  ASSERT_FALSE(version.has_value());
  EXPECT_NE(version.status().message().find("wire version 9"), std::string::npos);
}

TEST(Wire, RepeatedKeysAreRejected) {
  std::vector<std::byte> bytes(16);
  std::vector<Frame> frames = {{bytes, nullptr}};
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> p(buf);
  p.pack_map(6);
  p.pack(std::string("edgevla"));
  p.pack(1);
  p.pack(std::string("type"));
  p.pack(std::string("Blob"));
  p.pack(std::string("topic"));
  p.pack(std::string("/x"));
  p.pack(std::string("seq"));
  p.pack(1);
  p.pack(std::string("trace"));
  p.pack_array(0);
  p.pack(std::string("trace"));
  p.pack_array(0);
  auto d = decode(as_bytes(std::string(buf.data(), buf.size())), frames, nullptr);
  ASSERT_FALSE(d.has_value());
  EXPECT_NE(d.status().message().find("'trace' appears more than once"), std::string::npos);
}

// A NodeStatus envelope whose header key `key` holds a one-entry array with the raw msgpack
// bytes `entry`.
std::string envelope_with_entry(const std::string& key, const std::string& entry) {
  msgpack::sbuffer sb;
  msgpack::packer<msgpack::sbuffer> p(sb);
  p.pack_map(6);
  p.pack(std::string("edgevla")); p.pack(1);
  p.pack(std::string("type")); p.pack(std::string("NodeStatus"));
  p.pack(std::string("topic")); p.pack(std::string("/s"));
  p.pack(std::string("seq")); p.pack(1);
  p.pack(std::string("fields")); p.pack_map(2);
  p.pack(std::string("node")); p.pack(std::string("n"));
  p.pack(std::string("state")); p.pack(std::string("active"));
  p.pack(key); p.pack_array(1);
  sb.write(entry.data(), entry.size());
  return std::string(sb.data(), sb.size());
}

TEST(Wire, MalformedInputMarksAreErrors) {
  // "in" must be an array of [topic, pub, trigger].
  for (const std::string& bad : {std::string("\x93\xa1x\x01\x01"),         // trigger not a bool
                                 std::string("\x92\xa1x\x01"),               // two entries
                                 std::string("\x93\x01\x01\xc3")}) {         // topic not a string
    const std::string env = envelope_with_entry("in", bad);
    auto d = decode(as_bytes(env), {}, nullptr);
    ASSERT_FALSE(d.has_value());
    EXPECT_NE(d.status().message().find("envelope 'in"), std::string::npos) << d.status().message();
  }
}

TEST(Wire, MalformedTakenInputsAreErrors) {
  // "tk" must be an array of [topic, pub, cb] with integer stamps.
  for (const std::string& bad : {std::string("\x93\xa1x\x01\xc3"),   // cb not an integer
                                 std::string("\x92\xa1x\x01"),         // two entries
                                 std::string("\x93\x01\x01\x01")}) {  // topic not a string
    const std::string env = envelope_with_entry("tk", bad);
    auto d = decode(as_bytes(env), {}, nullptr);
    ASSERT_FALSE(d.has_value());
    EXPECT_NE(d.status().message().find("tk"), std::string::npos) << d.status().message();
  }
}

TEST(Wire, FloatFieldsStayFloatsAcrossTheWire) {
  Message m = sample();
  m.set_field("whole", 2.0);
  m.set_field("negzero", -0.0);
  m.set_field("huge", 1e19);
  Encoded e = encode_inline(m);
  auto d = decode(as_bytes(e.envelope), e.frames, nullptr);
  ASSERT_TRUE(d.has_value()) << d.status().to_string();
  ASSERT_TRUE(std::holds_alternative<double>(*d->field("whole")));
  EXPECT_EQ(std::get<double>(*d->field("whole")), 2.0);
  EXPECT_TRUE(std::signbit(std::get<double>(*d->field("negzero"))));
  EXPECT_EQ(std::get<double>(*d->field("huge")), 1e19);
}

TEST(Wire, TopicFrame) {
  const std::string f = topic_frame("/a/b");
  ASSERT_EQ(f.size(), 5u);
  auto t = parse_topic_frame(as_bytes(f));
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(*t, "/a/b");
  EXPECT_FALSE(parse_topic_frame(as_bytes(std::string("/a/b"))).has_value());
  EXPECT_FALSE(parse_topic_frame({}).has_value());
}

}  // namespace
}  // namespace edgevla::wire
