#include "runtime/bus/bus.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>

#include "msgs/types.hpp"
#include "tests/support/test_util.hpp"

namespace edgevla {
namespace {

using testing::eventually;
using testing::unique_domain;

std::unique_ptr<Bus> make_bus(const std::string& domain, std::string tcp = "",
                              std::vector<std::string> peers = {}) {
  BusOptions o;
  o.domain = domain;
  o.tcp_listen = std::move(tcp);
  o.tcp_peers = std::move(peers);
  auto bus = Bus::create(o);
  EXPECT_TRUE(bus.has_value()) << bus.status().to_string();
  return std::move(*bus);
}

Message image_message(Bus& bus, int h, int w, std::uint8_t fill, bool loan = true) {
  Tensor px = loan ? *bus.loan(DType::kU8, Shape{h, w, 3}) : *Tensor::empty(DType::kU8, Shape{h, w, 3});
  std::memset(px.raw_data(), fill, px.nbytes());
  return *msgs::Image::make(px, "rgb8", "base");
}

struct Collector {
  std::shared_ptr<Waker> waker = std::make_shared<Waker>();
  std::shared_ptr<SubscriptionQueue> queue;
  Collector(const std::string& topic, const std::string& type, QoS qos = QoS::keep_last(100))
      : queue(std::make_shared<SubscriptionQueue>(topic, type, qos, "collector", waker)) {}
};

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
  // Publish until the subscription has propagated and a message arrives.
  ASSERT_TRUE(eventually([&] {
    EXPECT_OK(pub->publish(**writer, image_message(*pub, 64, 64, ++fill)));
    return c.queue->size() > 0;
  }));
  MessagePtr got = c.queue->pop();
  ASSERT_NE(got, nullptr);
  const Tensor& px = *got->tensor("pixels");
  EXPECT_EQ(px.buffer()->kind(), BufferKind::kSharedMemory);
  EXPECT_EQ(px.shape(), (Shape{64, 64, 3}));
  const auto v = px.data<std::uint8_t>()[0];
  for (std::int64_t i = 0; i < px.numel(); ++i) ASSERT_EQ(px.data<std::uint8_t>()[i], v);
}

TEST(Bus, CrossBusOverTcpSendsInlineFrames) {
  auto pub = make_bus(unique_domain("tcpa"), "tcp://127.0.0.1:*");
  const std::string endpoint = [&] {
    // The bound endpoint is in the registry entry; read it back through stats.
    const std::string y = pub->stats_yaml();
    const auto pos = y.find("tcp_endpoint: ");
    return y.substr(pos + 14, y.find('\n', pos) - pos - 14);
  }();
  auto sub = make_bus(unique_domain("tcpb"), "", {endpoint});
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
