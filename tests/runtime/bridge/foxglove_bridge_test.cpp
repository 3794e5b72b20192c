// The Foxglove bridge in one process: a bus with a publisher, the bridge, and a WebSocket
// client (Boost.Beast) speaking foxglove.websocket.v1. The npm client in tests/mcap_js
// (run_bridge.sh) checks the same server against a live multi-process graph.
#include <gtest/gtest.h>

#include <cstring>
#include <future>
#include <thread>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <nlohmann/json.hpp>

#include "msgs/types.hpp"
#include "runtime/bridge/foxglove_bridge.hpp"
#include "runtime/util/clock.hpp"
#include "tests/support/test_util.hpp"

namespace edgevla::bridge {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;
using nlohmann::json;

std::unique_ptr<Bus> make_bus(const std::string& tag) {
  BusOptions o;
  o.domain = testing::unique_domain(tag);
  return std::move(*Bus::create(o));
}

Message frame(int h, int w, std::uint8_t v) {
  Tensor px = *Tensor::empty(DType::kU8, Shape{h, w, 3});
  std::memset(px.raw_data(), v, px.nbytes());
  return *msgs::Image::make(px, "rgb8", "base");
}

struct Client {
  asio::io_context io;
  websocket::stream<tcp::socket> ws{io};
  explicit Client(int port) {
    tcp::resolver resolver(io);
    asio::connect(ws.next_layer(), resolver.resolve("127.0.0.1", std::to_string(port)));
    ws.set_option(websocket::stream_base::decorator(
        [](websocket::request_type& r) { r.set(beast::http::field::sec_websocket_protocol, kFoxgloveSubprotocol); }));
    ws.handshake("127.0.0.1", "/");
  }
  // The next message; binary ones as raw bytes, text ones as JSON.
  std::pair<bool, std::string> next() {
    beast::flat_buffer b;
    ws.read(b);
    return {ws.got_binary(), beast::buffers_to_string(b.data())};
  }
  json next_text() {
    for (;;) {
      auto [binary, data] = next();
      if (!binary) return json::parse(data);
    }
  }
  void send(const json& j) {
    ws.text(true);
    ws.write(asio::buffer(j.dump()));
  }
};

// Publishes frames on `topic` until `done` (a thread, stopped by the destructor).
struct Publisher {
  std::atomic<bool> stop{false};
  std::thread thread;
  Publisher(Bus& bus, const std::string& topic, int h, int w, int period_ms) {
    thread = std::thread([&bus, topic, h, w, period_ms, this] {
      auto pub = *bus.advertise(topic, "Image", "camera");
      for (int i = 0; !stop.load(); ++i) {
        if (Status s = bus.publish(*pub, frame(h, w, static_cast<std::uint8_t>(i))); !s.is_ok() && i == 0) {
          ADD_FAILURE() << s.to_string();
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(period_ms));
      }
    });
  }
  ~Publisher() {
    stop.store(true);
    thread.join();
  }
};

// A bridge on a free port for /cam, frames sent as foxglove.RawImage (~1.2 MB of JSON for a
// 480x640 frame), 4 MB queued per client at most.
FoxgloveBridgeOptions raw_camera_bridge() {
  FoxgloveBridgeOptions o;
  o.port = 0;
  o.topics = {"/cam"};
  o.foxglove.images = bag::FoxgloveImages::kRaw;
  o.max_client_queue_bytes = 4 << 20;
  return o;
}

// Reads the server's messages until /cam/raw is advertised, and subscribes to it.
void subscribe_to_raw_camera(Client& c) {
  (void)c.next_text();  // serverInfo
  std::uint32_t image = 0;
  while (image == 0) {
    const json adv = c.next_text();  // held: a range-for over a temporary's member would dangle
    for (const auto& ch : adv["channels"]) {
      if (ch["topic"] == "/cam/raw") image = ch["id"];
    }
  }
  c.send({{"op", "subscribe"}, {"subscriptions", {{{"id", 1}, {"channelId", image}}}}});
}

TEST(FoxgloveBridge, ServesATopicToASubscriber) {
  auto bus = make_bus("bridge");
  FoxgloveBridgeOptions o;
  o.port = 0;
  o.topics = {"/cam"};
  o.foxglove.images = bag::FoxgloveImages::kRaw;
  auto b = FoxgloveBridge::start(*bus, o);
  ASSERT_TRUE(b.has_value()) << b.status().to_string();
  ASSERT_GT((*b)->port(), 0);
  Publisher pub(*bus, "/cam", 4, 6, 10);
  Client c((*b)->port());
  const json info = c.next_text();
  EXPECT_EQ(info["op"], "serverInfo");
  EXPECT_TRUE(info["capabilities"].empty());
  // Channels of the topic are advertised once its first message is seen.
  std::uint32_t image = 0;
  while (image == 0) {
    const json j = c.next_text();
    ASSERT_EQ(j["op"], "advertise") << j.dump();
    for (const auto& ch : j["channels"]) {
      if (ch["topic"] == "/cam/raw") {
        EXPECT_EQ(ch["schemaName"], "foxglove.RawImage");
        EXPECT_EQ(ch["encoding"], "json");
        EXPECT_EQ(ch["schemaEncoding"], "jsonschema");
        image = ch["id"];
      }
    }
  }
  c.send({{"op", "subscribe"}, {"subscriptions", {{{"id", 7}, {"channelId", image}}}}});
  for (int got = 0; got < 3;) {
    auto [binary, data] = c.next();
    if (!binary) continue;
    ASSERT_GE(data.size(), 13u);
    EXPECT_EQ(static_cast<std::uint8_t>(data[0]), 1);  // message data
    std::uint32_t sub = 0;
    std::memcpy(&sub, data.data() + 1, 4);
    EXPECT_EQ(sub, 7u);
    std::uint64_t t = 0;
    std::memcpy(&t, data.data() + 5, 8);
    EXPECT_NEAR(static_cast<double>(t), static_cast<double>(wall_now_ns()), 10e9);
    const json m = json::parse(data.substr(13));
    EXPECT_EQ(m["width"], 6);
    EXPECT_EQ(m["height"], 4);
    EXPECT_EQ(m["data"].get<std::string>().size(), 96u);  // base64 of 4 x 6 x 3 = 72 bytes
    ++got;
  }
  EXPECT_GE((*b)->stats().sent, 3u);
  EXPECT_EQ((*b)->stats().clients, 1u);
  (*b)->stop();
}

// A client that stops reading loses frames beyond its queue bound; memory stays bounded and
// the connection stays usable.
TEST(FoxgloveBridge, ASlowClientLosesFramesNotMemory) {
  auto bus = make_bus("bridgeslow");
  auto b = std::move(*FoxgloveBridge::start(*bus, raw_camera_bridge()));
  Publisher pub(*bus, "/cam", 480, 640, 5);
  ASSERT_TRUE(testing::eventually([&] { return b->stats().channels > 0; })) << "skipped " << b->stats().skipped;
  Client c(b->port());
  subscribe_to_raw_camera(c);
  // Not reading: socket buffers fill, then the bridge's queue, then frames are dropped.
  ASSERT_TRUE(testing::eventually([&] { return b->stats().dropped_slow > 5; }, std::chrono::seconds(30)))
      << "sent " << b->stats().sent << ", dropped " << b->stats().dropped_slow;
  // Reading again, frames still come.
  for (int got = 0; got < 3;) got += c.next().first ? 1 : 0;
  b->stop();
}

// A publisher faster than the conversion keeps the bridge's queue from ever emptying: stop()
// still returns. It once waited for an empty queue: forever under AddressSanitizer, where a raw
// frame's conversion takes longer than the next frame's publish (a fast build on two cores lets
// the queue run empty now and then, and stop() got through).
TEST(FoxgloveBridge, StopReturnsWhileAPublisherOutpacesTheConversion) {
  auto bus = make_bus("bridgestop");
  auto b = std::move(*FoxgloveBridge::start(*bus, raw_camera_bridge()));
  // One frame published again and again without a pause: each publish costs microseconds, each
  // conversion to a raw image message milliseconds.
  std::atomic<bool> publishing{true};
  std::thread pub([&] {
    auto w = *bus->advertise("/cam", "Image", "camera");
    const Message f = frame(480, 640, 7);
    while (publishing.load()) (void)bus->publish(*w, Message(f));
  });
  ASSERT_TRUE(testing::eventually([&] { return b->stats().channels > 0; }));
  Client c(b->port());
  subscribe_to_raw_camera(c);
  ASSERT_TRUE(testing::eventually([&] { return b->stats().sent + b->stats().dropped_slow > 3; }));
  auto stopped = std::async(std::launch::async, [&] { b->stop(); });
  const bool returned = stopped.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
  publishing.store(false);  // lets a stop() that waits for an empty queue end: a failure does not hang
  pub.join();
  stopped.wait();
  EXPECT_TRUE(returned) << "stop() waited for the publisher";
}

// Read-only unless asked: with publish_topics a client advertises a json channel on an
// allowed topic and its messages reach the bus as edgevla messages; anything else is refused
// with a status naming why, and a read-only bridge refuses client messages altogether.
TEST(FoxgloveBridge, ClientsPublishOnlyWhereAllowed) {
  auto bus = make_bus("bridgepub");
  auto prompts = std::make_shared<SubscriptionQueue>("/prompt", "Prompt", QoS::keep_last(10), "t",
                                                     std::make_shared<Waker>());
  auto states = std::make_shared<SubscriptionQueue>("/state", "RobotState", QoS::keep_last(10), "t",
                                                    std::make_shared<Waker>());
  ASSERT_OK(bus->attach(prompts));
  ASSERT_OK(bus->attach(states));
  FoxgloveBridgeOptions o;
  o.port = 0;
  o.topics = {"/none"};
  o.publish_topics = {"/prompt", "/state"};
  auto b = FoxgloveBridge::start(*bus, o);
  ASSERT_TRUE(b.has_value()) << b.status().to_string();
  Client c((*b)->port());
  const json info = c.next_text();
  ASSERT_EQ(info["op"], "serverInfo");
  EXPECT_EQ(info["capabilities"], json::array({"clientPublish"}));
  EXPECT_EQ(info["supportedEncodings"], json::array({"json"}));
  c.send({{"op", "advertise"},
          {"channels", json::array({{{"id", 1}, {"topic", "/prompt"}, {"encoding", "json"}, {"schemaName", "Prompt"}},
                                    {{"id", 2}, {"topic", "/state"}, {"encoding", "json"}, {"schemaName", "RobotState"}},
                                    {{"id", 3}, {"topic", "/robot/command"}, {"encoding", "json"},
                                     {"schemaName", "Prompt"}}})}});
  const json refused = c.next_text();
  EXPECT_EQ(refused["op"], "status");
  EXPECT_NE(refused["message"].get<std::string>().find("may not publish to '/robot/command'"), std::string::npos)
      << refused.dump();
  const auto message = [&](std::uint32_t channel, const json& j) {
    std::string f(1, '\x01');
    for (int i = 0; i < 4; ++i) f.push_back(static_cast<char>((channel >> (8 * i)) & 0xff));
    f += j.dump();
    c.ws.binary(true);
    c.ws.write(asio::buffer(f));
  };
  message(1, {{"text", "put the cup in the bin"}});
  message(2, {{"position", {0.5, -1.25, 2.0}}});
  ASSERT_TRUE(testing::eventually([&] { return prompts->size() > 0 && states->size() > 0; }));
  EXPECT_EQ(msgs::Prompt(prompts->pop()).text(), "put the cup in the bin");
  const MessagePtr st = states->pop();
  const Tensor& p = *st->tensor("position");
  ASSERT_EQ(p.numel(), 3);
  EXPECT_EQ(p.data<float>()[1], -1.25f);
  EXPECT_EQ(st->header().publisher.empty(), false);
  // Bad messages: each one status, nothing on the bus.
  message(2, {{"position", {1.0, "x"}}});
  EXPECT_NE(c.next_text()["message"].get<std::string>().find("not a finite number"), std::string::npos);
  message(9, {{"text", "a"}});
  EXPECT_NE(c.next_text()["message"].get<std::string>().find("did not advertise"), std::string::npos);
  EXPECT_EQ((*b)->stats().client_published, 2u);
  EXPECT_EQ((*b)->stats().client_rejected, 3u);
  EXPECT_EQ(prompts->size(), 0u);
  EXPECT_EQ(states->size(), 0u);
  (*b)->stop();

  // The default bridge is read-only.
  FoxgloveBridgeOptions ro;
  ro.port = 0;
  ro.topics = {"/none"};
  auto r = FoxgloveBridge::start(*bus, ro);
  ASSERT_TRUE(r.has_value()) << r.status().to_string();
  Client d((*r)->port());
  EXPECT_TRUE(d.next_text()["capabilities"].empty());
  d.send({{"op", "advertise"},
          {"channels", json::array({{{"id", 1}, {"topic", "/prompt"}, {"encoding", "json"}, {"schemaName", "Prompt"}}})}});
  EXPECT_NE(d.next_text()["message"].get<std::string>().find("read-only"), std::string::npos);
}

TEST(FoxgloveBridge, StartErrorsNameTheFix) {
  auto bus = make_bus("bridgeerr");
  FoxgloveBridgeOptions o;
  o.port = 0;
  auto first = std::move(*FoxgloveBridge::start(*bus, o));
  o.port = first->port();
  auto taken = FoxgloveBridge::start(*bus, o);
  ASSERT_FALSE(taken.has_value());
  EXPECT_NE(taken.status().message().find("cannot listen on 127.0.0.1:" + std::to_string(o.port)), std::string::npos)
      << taken.status().message();
  EXPECT_NE(taken.status().message().find("--port"), std::string::npos);
  o.port = 0;
  o.host = "localhost.invalid";
  auto host = FoxgloveBridge::start(*bus, o);
  ASSERT_FALSE(host.has_value());
  EXPECT_NE(host.status().message().find("not an IP address"), std::string::npos);
  o.host = "127.0.0.1";
  o.port = 70000;
  EXPECT_FALSE(FoxgloveBridge::start(*bus, o).has_value());
  first->stop();
}

}  // namespace
}  // namespace edgevla::bridge
