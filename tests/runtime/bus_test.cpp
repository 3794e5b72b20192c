#include "runtime/bus/bus.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <filesystem>
#include <mutex>
#include <thread>

#include "msgs/types.hpp"
#include "runtime/shm/segment.hpp"
#include "tests/runtime/bus_test_util.hpp"
#include "tests/support/test_util.hpp"

namespace edgevla {
namespace {

using testing::Collector;
using testing::eventually;
using testing::image_message;
using testing::make_bus;
using testing::publish_until_received;
using testing::unique_domain;


TEST(Bus, InProcessHandsOverTheSameBuffer) {
  auto bus = make_bus(unique_domain("inproc"));
  auto writer = bus->advertise("/cam", "Image", "src");
  ASSERT_TRUE(writer.has_value());
  Collector c("/cam", "Image");
  ASSERT_OK(bus->attach(c.queue));
  Message m = image_message(*bus, 4, 4, 7);
  const std::byte* sent = m.tensor("pixels")->raw_data();
  ASSERT_OK(bus->publish(**writer, std::move(m)));
  MessagePtr got = c.queue->pop();
  ASSERT_NE(got, nullptr);
  EXPECT_EQ(got->tensor("pixels")->raw_data(), sent);  // zero copy: same bytes
  EXPECT_EQ(got->header().seq, 1u);
  EXPECT_EQ(got->header().topic, "/cam");
  ASSERT_EQ(got->header().trace.size(), 1u);
  EXPECT_EQ(got->header().trace[0].node, "src");
}

TEST(Bus, RejectsWrongTypeOnSubscriptionAndCountsIt) {
  auto bus = make_bus(unique_domain("type"));
  auto writer = bus->advertise("/cam", "Image", "src");
  Collector c("/cam", "ActionChunk");
  ASSERT_OK(bus->attach(c.queue));
  ASSERT_OK(bus->publish(**writer, image_message(*bus, 2, 2, 1)));
  EXPECT_EQ(c.queue->pop(), nullptr);
  EXPECT_EQ(c.queue->counters().rejected.get(), 1u);
}


TEST(Bus, CrossBusOverIpcUsesSharedMemory) {
  const auto domain = unique_domain("ipc");
  auto pub = make_bus(domain);
  auto sub = make_bus(domain);
  auto writer = pub->advertise("/cam", "Image", "src");
  Collector c("/cam", "Image");
  ASSERT_OK(sub->attach(c.queue));
  std::uint8_t fill = 0;
  publish_until_received(*pub, **writer, c, 64, fill);
  MessagePtr got = c.queue->pop();
  ASSERT_NE(got, nullptr);
  const Tensor& px = *got->tensor("pixels");
  EXPECT_EQ(px.buffer()->kind(), BufferKind::kSharedMemory);
  EXPECT_EQ(px.shape(), (Shape{64, 64, 3}));
  const auto v = px.data<std::uint8_t>()[0];
  for (std::int64_t i = 0; i < px.numel(); ++i) ASSERT_EQ(px.data<std::uint8_t>()[i], v);
}

// Two key pairs, each allowing the other (the tcp security itself: tcp_security_test).
struct TcpPair {
  CurveKeyPair a = *generate_curve_key_pair();
  CurveKeyPair b = *generate_curve_key_pair();
  TcpOptions listener() const { return {.listen = "*", .key = a, .allowed_keys = {b.public_key}}; }
  TcpOptions peer_of(const std::string& endpoint) const { return {.peers = {{endpoint, a.public_key}}, .key = b}; }
};

TEST(Bus, CrossBusOverTcpSendsInlineFrames) {
  const TcpPair keys;
  auto pub = make_bus(unique_domain("tcpa"), keys.listener());
  const std::string endpoint = pub->tcp_endpoint();
  ASSERT_TRUE(endpoint.starts_with("tcp://127.0.0.1:")) << endpoint;
  auto sub = make_bus(unique_domain("tcpb"), keys.peer_of(endpoint));
  auto writer = pub->advertise("/cam", "Image", "src");
  Collector c("/cam", "Image");
  ASSERT_OK(sub->attach(c.queue));
  ASSERT_TRUE(eventually([&] {
    EXPECT_OK(pub->publish(**writer, image_message(*pub, 32, 32, 9, /*loan=*/false)));
    return c.queue->size() > 0;
  }));
  MessagePtr got = c.queue->pop();
  const Tensor& px = *got->tensor("pixels");
  EXPECT_EQ(px.buffer()->kind(), BufferKind::kExternal);
  EXPECT_EQ(px.data<std::uint8_t>()[100], 9);
}

}  // namespace
}  // namespace edgevla

// Malformed traffic from another process: a raw ZeroMQ publisher registered under a fake
// bus id injects frames; the receiving bus must reject each one with a counter and keep
// delivering good messages.
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include <msgpack.hpp>

#include "msgs/wire.hpp"
#include "runtime/shm/pool.hpp"

namespace edgevla {
namespace {

class FakePeer {
 public:
  explicit FakePeer(const std::string& domain) {
    reg_ = std::make_unique<Registry>(*Registry::open(Registry::default_dir(domain)));
    entry_.bus_id = "fakehost/" + std::to_string(::getpid()) + "/9" + std::to_string(++n_);
    entry_.pid = static_cast<std::uint32_t>(::getpid());
    entry_.process = "fake";
    entry_.data_endpoint = "ipc://" + reg_->path_for(entry_.bus_id, ".pub");
    pub_.set(zmq::sockopt::linger, 0);
    pub_.bind(entry_.data_endpoint);
    EXPECT_TRUE(reg_->write(entry_).is_ok());
  }
  ~FakePeer() { reg_->remove(entry_); }

  // Sends until `done` holds (the subscription needs time to reach us).
  void send_until(const std::vector<std::string>& frames, const std::function<bool()>& done) {
    ASSERT_TRUE(testing::eventually([&] {
      send(frames);
      return done();
    }));
  }
  void send(const std::vector<std::string>& frames) {
    for (std::size_t i = 0; i < frames.size(); ++i) {
      pub_.send(zmq::buffer(frames[i]), i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
    }
  }

 private:
  static inline int n_ = 0;
  std::unique_ptr<Registry> reg_;
  RegistryEntry entry_;
  zmq::context_t ctx_{1};
  zmq::socket_t pub_{ctx_, zmq::socket_type::pub};
};

std::vector<std::string> encode(Message m, std::uint64_t seq, const std::string& topic = "/cam") {
  m.header().topic = topic;
  m.header().seq = seq;
  m.header().publisher = "fake";
  std::vector<wire::TensorPlacement> p;
  std::vector<std::string> frames = {wire::topic_frame(topic), ""};
  for (std::size_t i = 0; i < m.tensors().size(); ++i) {
    p.push_back(wire::InlineFrame{static_cast<std::uint32_t>(i)});
    const auto b = m.tensors()[i].tensor.bytes();
    frames.emplace_back(reinterpret_cast<const char*>(b.data()), b.size());
  }
  EXPECT_TRUE(wire::encode_envelope(m, p, frames[1]).is_ok());
  return frames;
}

Message small_image(std::uint8_t v) {
  Tensor px = *Tensor::empty(DType::kU8, Shape{2, 2, 3});
  std::memset(px.raw_data(), v, px.nbytes());
  return *msgs::Image::make(px, "rgb8", "base");
}

TEST(BusBadInput, EachMalformedMessageIsRejectedAndCountedAndGoodOnesStillFlow) {
  const auto domain = unique_domain("bad");
  auto bus = make_bus(domain);
  Collector c("/cam", "Image");
  ASSERT_OK(bus->attach(c.queue));
  FakePeer peer(domain);
  std::uint64_t seq = 1;
  peer.send_until(encode(small_image(1), seq++), [&] { return c.queue->size() > 0; });
  while (c.queue->pop()) {
  }
  // Malformed messages are rejected; a descriptor of a segment that does not exist (its
  // publisher gone) is a transport drop. Either way it is counted and the next message flows.
  const auto rejected = [&] { return c.queue->counters().rejected.get() + c.queue->counters().dropped_transport.get(); };
  std::uint64_t expect = rejected();

  auto check = [&](const std::vector<std::string>& frames, const char* what) {
    peer.send(frames);
    ASSERT_TRUE(testing::eventually([&] { return rejected() > expect; })) << what;
    expect = rejected();
  };
  // Garbage envelope.
  check({wire::topic_frame("/cam"), "\xc1\xc1garbage"}, "garbage");
  // Envelope claims more bytes than the frame holds.
  auto short_frame = encode(small_image(2), seq++);
  short_frame[2].resize(5);
  check(short_frame, "short frame");
  // Unknown dtype.
  auto bad_dtype = encode(small_image(3), seq++);
  const auto pos = bad_dtype[1].find("u8");
  ASSERT_NE(pos, std::string::npos);
  bad_dtype[1].replace(pos, 2, "q8");
  check(bad_dtype, "unknown dtype");
  // Shared-memory descriptor pointing outside its segment.
  {
    auto pool = shm::Pool::create({shm::segment_prefix() + std::to_string(::getpid()) + ".fake", 1 << 20, 1'000'000'000});
    auto block = *pool->allocate(4096);
    Message m = small_image(4);
    Tensor big = *Tensor::empty(DType::kU8, Shape{100, 100, 3});  // 30000 bytes, segment holds 4096
    m.set_tensor("pixels", big);
    m.header().topic = "/cam";
    m.header().seq = seq++;
    ShmLocation loc = *block->shm();
    loc.size = big.nbytes();
    std::vector<wire::TensorPlacement> p = {loc};
    std::string env;
    ASSERT_TRUE(wire::encode_envelope(m, p, env).is_ok());
    check({wire::topic_frame("/cam"), env}, "descriptor outside segment");
    // A segment that does not exist.
    loc.segment = shm::segment_prefix() + "999999999.7.7";
    loc.size = 12;
    Message m2 = small_image(5);
    m2.header().topic = "/cam";
    m2.header().seq = seq++;
    std::vector<wire::TensorPlacement> p2 = {loc};
    ASSERT_TRUE(wire::encode_envelope(m2, p2, env).is_ok());
    check({wire::topic_frame("/cam"), env}, "vanished segment");
  }
  // Wrong message type for this subscription.
  Message chunk = *msgs::ActionChunk::make(*Tensor::empty(DType::kF32, Shape{4, 2}), 0.02);
  check(encode(chunk, seq++), "wrong type");
  // A schema violation (Image without its camera field).
  Message no_camera = small_image(6);
  no_camera.set_field("camera", std::int64_t{1});
  check(encode(no_camera, seq++), "schema");
  // Only one frame.
  check({wire::topic_frame("/cam")}, "one frame");

  // After all that, a good message is still delivered.
  peer.send_until(encode(small_image(9), seq++), [&] { return c.queue->size() > 0; });
  MessagePtr good = c.queue->pop();
  ASSERT_NE(good, nullptr);
  EXPECT_EQ(good->tensor("pixels")->data<std::uint8_t>()[0], 9);
}

TEST(BusBadInput, SequenceGapsAreCountedAsLost) {
  const auto domain = unique_domain("gap");
  auto bus = make_bus(domain);
  Collector c("/cam", "Image");
  ASSERT_OK(bus->attach(c.queue));
  FakePeer peer(domain);
  peer.send_until(encode(small_image(1), 1), [&] { return c.queue->size() > 0; });
  // Whatever warm-up copies arrived, the next ones jump from 1 to 5: 3 lost.
  peer.send(encode(small_image(2), 5));
  ASSERT_TRUE(testing::eventually([&] { return c.queue->counters().lost.get() >= 3; }));
  EXPECT_EQ(c.queue->counters().lost.get(), 3u);
  // A repeated sequence number (e.g. the same message over two transports) is dropped silently.
  peer.send(encode(small_image(3), 5));
  peer.send(encode(small_image(4), 6));
  ASSERT_TRUE(testing::eventually([&] {
    MessagePtr m;
    while (auto x = c.queue->pop()) m = x;
    return m && m->header().seq == 6;
  }));
}

TEST(Bus, TopicCarriesOneType) {
  auto bus = make_bus(unique_domain("onetype"));
  auto a = bus->advertise("/x", "Image", "a");
  ASSERT_TRUE(a.has_value());
  auto b = bus->advertise("/x", "ActionChunk", "b");
  ASSERT_FALSE(b.has_value());
  EXPECT_NE(b.status().message().find("node 'a'"), std::string::npos);
  EXPECT_FALSE(bus->advertise("no-slash", "Image", "a").has_value());
}

TEST(Bus, PublishValidatesAgainstTheSchema) {
  auto bus = make_bus(unique_domain("validate"));
  auto w = *bus->advertise("/x", "Image", "cam");
  Message m = small_image(1);
  m.set_tensor("pixels", *Tensor::empty(DType::kU8, Shape{2, 2}));
  auto s = bus->publish(*w, std::move(m));
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("node 'cam'"), std::string::npos);
  EXPECT_EQ(w->counters().errors.get(), 1u);
  EXPECT_FALSE(bus->publish(*w, Message("ActionChunk", 1)).is_ok());
}

TEST(Bus, HeapTensorsAreCopiedIntoSharedMemoryOnceForOtherProcesses) {
  const auto domain = unique_domain("heapcopy");
  auto pub = make_bus(domain);
  auto sub = make_bus(domain);
  auto w = *pub->advertise("/cam", "Image", "src");
  Collector c("/cam", "Image");
  ASSERT_OK(sub->attach(c.queue));
  ASSERT_TRUE(eventually([&] {
    EXPECT_OK(pub->publish(*w, image_message(*pub, 64, 64, 3, /*loan=*/false)));
    return c.queue->size() > 0;
  }));
  EXPECT_GE(w->counters().copied_to_shm.get(), 1u);
  EXPECT_EQ(c.queue->pop()->tensor("pixels")->buffer()->kind(), BufferKind::kSharedMemory);
}

}  // namespace
}  // namespace edgevla

#include <yaml-cpp/yaml.h>

namespace edgevla {
namespace {

TEST(Bus, TwoPublishersOfOneTopicInOneProcessAreBothDelivered) {
  const auto domain = unique_domain("twopub");
  auto pub = make_bus(domain);
  auto sub = make_bus(domain);
  auto a = *pub->advertise("/cam", "Image", "left");
  auto b = *pub->advertise("/cam", "Image", "right");
  EXPECT_NE(a->id(), b->id());
  Collector c("/cam", "Image");
  ASSERT_OK(sub->attach(c.queue));
  ASSERT_TRUE(eventually([&] {
    EXPECT_OK(pub->publish(*a, image_message(*pub, 2, 2, 1)));
    return c.queue->size() > 0;
  }));
  while (c.queue->pop()) {
  }
  // Interleaved sequences (a: n, n+1...; b: 1, 2, ...) must not look like duplicates.
  for (int i = 0; i < 5; ++i) {
    ASSERT_OK(pub->publish(*a, image_message(*pub, 2, 2, 10)));
    ASSERT_OK(pub->publish(*b, image_message(*pub, 2, 2, 20)));
  }
  int from_a = 0, from_b = 0;
  ASSERT_TRUE(eventually([&] {
    while (auto m = c.queue->pop()) {
      const auto v = m->tensor("pixels")->data<std::uint8_t>()[0];  // warm-up copies carry 1
      from_a += v == 10;
      from_b += v == 20;
    }
    return from_a == 5 && from_b == 5;
  })) << from_a << " " << from_b;
  EXPECT_EQ(c.queue->counters().lost.get(), 0u);
}

TEST(Bus, StatsAreValidYaml) {
  const auto domain = unique_domain("statsyaml");
  auto bus = make_bus(domain, TcpPair().listener());
  auto w = *bus->advertise("/cam", "Image", "src");
  Collector c("/cam", "Image");
  ASSERT_OK(bus->attach(c.queue));
  ASSERT_OK(bus->publish(*w, image_message(*bus, 2, 2, 1)));
  const YAML::Node y = YAML::Load(bus->stats_yaml());
  EXPECT_EQ(y["bus"].as<std::string>(), bus->id());
  EXPECT_EQ(y["topics"]["/cam"]["type"].as<std::string>(), "Image");
  EXPECT_EQ(y["topics"]["/cam"]["publishers"][0]["published"].as<int>(), 1);
  EXPECT_EQ(y["topics"]["/cam"]["subscribers"][0]["received"].as<int>(), 1);
  EXPECT_TRUE(y["shm_pool"]["segments"].IsScalar());
  EXPECT_EQ(y["tcp_endpoint"].as<std::string>(), bus->tcp_endpoint());
  EXPECT_EQ(y["tcp_security"].as<std::string>(), "curve");
  EXPECT_EQ(y["transport"]["tcp_keys_refused"].as<int>(), 0);
}

}  // namespace
}  // namespace edgevla

namespace edgevla {
namespace {

TEST(Bus, NeverWaitPublisherIsNotStalledByAReliableSubscriber) {
  auto bus = make_bus(unique_domain("neverwait"));
  PublisherOptions control_loop;
  control_loop.never_wait = true;
  auto fast = *bus->advertise("/cmd", "Image", "controller", control_loop);
  Collector c("/cmd", "Image", QoS::reliable(1, std::chrono::milliseconds(2000)));
  ASSERT_OK(bus->attach(c.queue));
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 5; ++i) ASSERT_OK(bus->publish(*fast, image_message(*bus, 2, 2, 1)));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
  EXPECT_EQ(c.queue->counters().dropped_timeout.get(), 4u);
}

}  // namespace
}  // namespace edgevla

namespace edgevla {
namespace {

TEST(Bus, FullPoolDropsLargeRemoteSendsInsteadOfCopyingThemInline) {
  const auto domain = unique_domain("poolfull");
  BusOptions small;
  small.domain = domain;
  small.shm_pool_bytes = 4 << 20;  // room for two 1.5 MB blocks
  auto pub = std::move(*Bus::create(small));
  auto sub = make_bus(domain);
  auto w = *pub->advertise("/big", "Image", "src");
  Collector slow("/big", "Image", QoS::keep_last(100));  // never pops: holds every block it gets
  ASSERT_OK(sub->attach(slow.queue));
  const auto big = [&] { return image_message(*pub, 512, 1024, 7); };  // 1.5 MB
  ASSERT_TRUE(eventually([&] {
    EXPECT_OK(pub->publish(*w, big()));
    return slow.queue->size() > 0;
  }));
  for (int i = 0; i < 6; ++i) ASSERT_OK(pub->publish(*w, big()));  // publish keeps succeeding
  ASSERT_TRUE(eventually([&] {
    return YAML::Load(pub->stats_yaml())["transport"]["dropped_pool_full"].as<int>() >= 1;
  }));
  EXPECT_EQ(YAML::Load(pub->stats_yaml())["transport"]["inline_fallback"].as<int>(), 0);
  EXPECT_LE(slow.queue->size(), 2u);  // only what fits the pool ever crossed
}

}  // namespace
}  // namespace edgevla

namespace edgevla {
namespace {

TEST(Bus, StridedViewsCrossProcessesAsTheirContiguousBytes) {
  const auto domain = unique_domain("strided");
  auto pub = make_bus(domain);
  auto sub = make_bus(domain);
  auto w = *pub->advertise("/cam", "Image", "src");
  Collector c("/cam", "Image");
  ASSERT_OK(sub->attach(c.queue));
  // Row r of a 128x64x3 image holds the value r; its left half is a strided view.
  Tensor full = *Tensor::empty(DType::kU8, Shape{128, 64, 3});
  for (std::int64_t i = 0; i < full.numel(); ++i) full.data<std::uint8_t>()[i] = static_cast<std::uint8_t>(i / 192);
  Tensor cols = *full.slice(1, 0, 32);  // [128, 32, 3]: each row skips 32 pixels
  ASSERT_FALSE(cols.is_contiguous());
  Message m = *msgs::Image::make(cols, "rgb8", "base");
  ASSERT_TRUE(eventually([&] {
    Message copy = m;
    EXPECT_OK(pub->publish(*w, std::move(copy)));
    return c.queue->size() > 0;
  }));
  MessagePtr got = c.queue->pop();
  const Tensor& px = *got->tensor("pixels");
  ASSERT_EQ(px.shape(), (Shape{128, 32, 3}));
  for (std::int64_t r = 0; r < 128; ++r) {
    ASSERT_EQ(px.data<std::uint8_t>()[r * 96], static_cast<std::uint8_t>(r)) << r;
    ASSERT_EQ(px.data<std::uint8_t>()[r * 96 + 95], static_cast<std::uint8_t>(r)) << r;
  }
}

TEST(Bus, LoanRejectsBadShapes) {
  auto bus = make_bus(unique_domain("loanshape"));
  EXPECT_FALSE(bus->loan(DType::kU8, Shape{-1}).has_value());
  EXPECT_FALSE(bus->loan(DType::kF64, Shape{1ll << 30, 1ll << 30, 1ll << 30}).has_value());
  EXPECT_TRUE(bus->loan(DType::kU8, Shape{0}).has_value());
}

TEST(Bus, AFullReliableQueueDoesNotStallOtherTopicsFromOtherProcesses) {
  const auto domain = unique_domain("reliableremote");
  auto pub = make_bus(domain);
  auto sub = make_bus(domain);
  auto slow_w = *pub->advertise("/slow", "Image", "src");
  auto fast_w = *pub->advertise("/fast", "Image", "src");
  Collector slow("/slow", "Image", QoS::reliable(1, std::chrono::milliseconds(5000)));
  Collector fast("/fast", "Image");
  ASSERT_OK(sub->attach(slow.queue));
  ASSERT_OK(sub->attach(fast.queue));
  ASSERT_TRUE(eventually([&] {
    EXPECT_OK(pub->publish(*slow_w, image_message(*pub, 2, 2, 1)));
    EXPECT_OK(pub->publish(*fast_w, image_message(*pub, 2, 2, 1)));
    return slow.queue->size() > 0 && fast.queue->size() > 0;
  }));
  while (fast.queue->pop()) {
  }
  // /slow's queue is full; three more must not hold up /fast.
  for (int i = 0; i < 3; ++i) ASSERT_OK(pub->publish(*slow_w, image_message(*pub, 2, 2, 2)));
  ASSERT_OK(pub->publish(*fast_w, image_message(*pub, 2, 2, 3)));
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(eventually([&] { return fast.queue->size() > 0; }));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(4));  // not the 5 s wait
  EXPECT_TRUE(eventually([&] { return slow.queue->counters().dropped_timeout.get() >= 3; }));
}

TEST(Bus, DetachedQueueTakesNoMoreMessages) {
  auto bus = make_bus(unique_domain("detach"));
  auto w = *bus->advertise("/cam", "Image", "src");
  Collector c("/cam", "Image");
  ASSERT_OK(bus->attach(c.queue));
  ASSERT_OK(bus->publish(*w, image_message(*bus, 2, 2, 1)));
  bus->detach(c.queue);
  EXPECT_EQ(c.queue->size(), 0u);
  EXPECT_TRUE(c.queue->push(std::make_shared<const Message>(image_message(*bus, 2, 2, 2))));
  EXPECT_EQ(c.queue->size(), 0u);  // a push racing with the detach is dropped
  ASSERT_OK(bus->attach(c.queue));
  ASSERT_OK(bus->publish(*w, image_message(*bus, 2, 2, 3)));
  EXPECT_EQ(c.queue->size(), 1u);
}

}  // namespace
}  // namespace edgevla
