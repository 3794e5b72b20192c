#include <gtest/gtest.h>

#include <thread>

#include "runtime/bus/subscription_queue.hpp"
#include "runtime/util/clock.hpp"

namespace edgevla {
namespace {

MessagePtr msg(std::uint64_t seq) {
  auto m = std::make_shared<Message>("Blob", 1);
  m->header().seq = seq;
  return m;
}

TEST(QoS, KeepLastDropsOldestAndCounts) {
  auto waker = std::make_shared<Waker>();
  SubscriptionQueue q("/t", "", QoS::keep_last(3), "n", waker);
  for (std::uint64_t i = 1; i <= 5; ++i) q.push(msg(i));
  EXPECT_EQ(q.size(), 3u);
  EXPECT_EQ(q.counters().dropped_overflow.get(), 2u);
  EXPECT_EQ(q.counters().received.get(), 5u);
  EXPECT_EQ(q.pop()->header().seq, 3u);
  EXPECT_EQ(q.pop()->header().seq, 4u);
  EXPECT_EQ(q.pop()->header().seq, 5u);
  EXPECT_EQ(q.pop(), nullptr);
}

TEST(QoS, KeepLatestHoldsOnlyTheNewest) {
  SubscriptionQueue q("/t", "", QoS::keep_latest(), "n", std::make_shared<Waker>());
  for (std::uint64_t i = 1; i <= 10; ++i) q.push(msg(i));
  EXPECT_EQ(q.size(), 1u);
  EXPECT_EQ(q.pop()->header().seq, 10u);
  EXPECT_EQ(q.counters().dropped_overflow.get(), 9u);
}

TEST(QoS, PushWakesTheConsumer) {
  auto waker = std::make_shared<Waker>();
  SubscriptionQueue q("/t", "", QoS::keep_last(3), "n", waker);
  const auto seen = waker->epoch();
  std::thread t([&] { q.push(msg(1)); });
  waker->wait(seen, steady_now_ns() + 5'000'000'000);
  t.join();
  EXPECT_NE(waker->epoch(), seen);
  EXPECT_NE(q.pop(), nullptr);
}

TEST(QoS, ReliableMakesThePublisherWaitForSpace) {
  SubscriptionQueue q("/t", "", QoS::reliable(2, std::chrono::milliseconds(2000)), "n",
                      std::make_shared<Waker>());
  q.push(msg(1));
  q.push(msg(2));
  const std::int64_t t0 = steady_now_ns();
  std::thread consumer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    q.pop();
  });
  EXPECT_TRUE(q.push(msg(3)));  // blocks until the consumer makes room, then succeeds
  consumer.join();
  EXPECT_GE(steady_now_ns() - t0, 40'000'000);
  EXPECT_EQ(q.counters().dropped_timeout.get(), 0u);
  EXPECT_EQ(q.pop()->header().seq, 2u);
  EXPECT_EQ(q.pop()->header().seq, 3u);
}

TEST(QoS, ReliableGivesUpAfterMaxBlockAndCounts) {
  SubscriptionQueue q("/t", "", QoS::reliable(1, std::chrono::milliseconds(20)), "n",
                      std::make_shared<Waker>());
  q.push(msg(1));
  const std::int64_t t0 = steady_now_ns();
  EXPECT_FALSE(q.push(msg(2)));
  EXPECT_GE(steady_now_ns() - t0, 15'000'000);
  EXPECT_EQ(q.counters().dropped_timeout.get(), 1u);
  EXPECT_EQ(q.pop()->header().seq, 2u);
}

TEST(QoS, APublisherThatMustNotWaitDropsInsteadOfBlocking) {
  SubscriptionQueue q("/t", "", QoS::reliable(1, std::chrono::milliseconds(5000)), "n",
                      std::make_shared<Waker>());
  q.push(msg(1));
  const std::int64_t t0 = steady_now_ns();
  EXPECT_FALSE(q.push(msg(2), /*may_wait=*/false));
  EXPECT_LT(steady_now_ns() - t0, 1'000'000'000);
  EXPECT_EQ(q.counters().dropped_timeout.get(), 1u);
  EXPECT_EQ(q.pop()->header().seq, 2u);
}

TEST(QoS, ByteBoundDropsOldestAndStampsArrival) {
  QoS qos = QoS::keep_last(100);
  qos.max_bytes = 3000;
  SubscriptionQueue q("/t", "", qos, "n", std::make_shared<Waker>());
  auto sized = [](std::uint64_t seq, std::int64_t n) {
    auto m = std::make_shared<Message>("Blob", 1);
    m->header().seq = seq;
    m->set_tensor("data", *Tensor::empty(DType::kU8, Shape{n}));
    return MessagePtr(m);
  };
  const std::int64_t before = wall_now_ns();
  q.push(sized(1, 1000));
  q.push(sized(2, 1000));
  q.push(sized(3, 1000));
  q.push(sized(4, 1500));  // needs 1500 more: the two oldest go
  EXPECT_EQ(q.size(), 2u);
  EXPECT_EQ(q.counters().dropped_overflow.get(), 2u);
  auto s = q.pop_stamped();
  EXPECT_EQ(s.message->header().seq, 3u);
  EXPECT_GE(s.arrival_ns, before);
  EXPECT_LE(s.arrival_ns, wall_now_ns());
  q.push(sized(5, 1500));  // 1500 + 1500 fits
  EXPECT_EQ(q.size(), 2u);
  EXPECT_EQ(q.counters().dropped_overflow.get(), 2u);
}

TEST(QoS, Parse) {
  EXPECT_EQ(parse_qos("keep_last:7")->depth, 7u);
  EXPECT_EQ(parse_qos("keep_latest")->depth, 1u);
  auto r = parse_qos("reliable:4:250ms");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->reliability, Reliability::kReliable);
  EXPECT_EQ(r->max_block.count(), 250);
  EXPECT_EQ(parse_qos(r->to_string())->max_block.count(), 250);
  for (const char* bad : {"keep_last:0", "keep_last:x", "best", "reliable:3:9", ""}) {
    auto q = parse_qos(bad);
    ASSERT_FALSE(q.has_value()) << bad;
    EXPECT_NE(q.status().message().find("keep_last:N"), std::string::npos);
  }
}

}  // namespace
}  // namespace edgevla
