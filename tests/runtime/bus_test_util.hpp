// Helpers shared by the bus tests (bus_test.cpp, bus_ring_test.cpp): a bus in a domain, an
// image message, a subscription queue to collect into.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>

#include "msgs/types.hpp"
#include "runtime/bus/bus.hpp"
#include "tests/support/test_util.hpp"

namespace edgevla::testing {

inline std::unique_ptr<Bus> make_bus(const std::string& domain, TcpOptions tcp = {}) {
  BusOptions o;
  o.domain = domain;
  o.tcp = std::move(tcp);
  auto bus = Bus::create(o);
  EXPECT_TRUE(bus.has_value()) << bus.status().to_string();
  return std::move(*bus);
}

inline Message image_message(Bus& bus, int h, int w, std::uint8_t fill, bool loan = true) {
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

// Publishes side x side images until the subscription has propagated and one arrived.
inline void publish_until_received(Bus& pub, TopicWriter& writer, Collector& c, int side, std::uint8_t& fill) {
  ASSERT_TRUE(eventually([&] {
    EXPECT_OK(pub.publish(writer, image_message(pub, side, side, ++fill)));
    return c.queue->size() > 0;
  }));
}

}  // namespace edgevla::testing
