// Subscription roles: observers never slow the pipeline, and every message a publisher sent is
// accounted at each subscriber.
#include <gtest/gtest.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cstring>
#include <thread>

#include "msgs/types.hpp"
#include "runtime/bus/bus.hpp"
#include "runtime/shm/mapper.hpp"
#include "runtime/shm/pool.hpp"
#include "tests/support/test_util.hpp"

namespace edgevla {
namespace {

using testing::eventually;

std::string segment_name(const std::string& tag) {
  static int n = 0;
  return shm::segment_prefix() + std::to_string(::getpid()) + ".o" + tag + std::to_string(++n);
}

int holders_of(const ShmLocation& loc) {
  auto seg = shm::Segment::open(loc.segment);
  if (!seg) return -1;
  int n = 0;
  for (const auto& h : (*seg)->header().holders) n += h.load() != 0 ? 1 : 0;
  return n;
}

// A pool with room for two blocks: one sent to a pipeline subscriber, one only to observers.
// The next allocation takes the observers' block back, never the pipeline's.
TEST(ObserverRole, AShortPoolTakesBackTheObserversBlockNotThePipelines) {
  auto pool = shm::Pool::create({segment_name("short"), 2 * 4096, 60'000'000'000});
  auto for_pipeline = *pool->allocate(4096);
  auto for_observers = *pool->allocate(4096);
  const ShmLocation pipeline_loc = *for_pipeline->shm();
  const ShmLocation observer_loc = *for_observers->shm();
  pool->mark_sent(*for_pipeline, {1, 0}, "/policy/prefix");
  pool->mark_sent(*for_observers, {0, 2}, "/camera/image");
  for_pipeline.reset();
  for_observers.reset();

  auto next = pool->allocate(4096);
  ASSERT_TRUE(next.has_value()) << next.status().to_string();
  EXPECT_EQ((*next)->shm()->segment, observer_loc.segment);
  const auto st = pool->stats();
  ASSERT_EQ(st.observer_reclaims.count("/camera/image"), 1u);
  EXPECT_EQ(st.observer_reclaims.at("/camera/image"), 2u);  // both observers lose that message
  EXPECT_EQ(st.exhausted, 0u);

  // The late observer finds the block reused: a counted transport drop, not torn bytes.
  shm::Mapper late;
  auto got = late.acquire(observer_loc, {.observer = true, .take_pending = true});
  ASSERT_FALSE(got.has_value());
  EXPECT_EQ(got.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(late.stats().recycled_before_read, 1u);

  // The pipeline's block is still there for its receiver, and nothing else fits.
  shm::Mapper receiver;
  auto kept = receiver.acquire(pipeline_loc);
  ASSERT_TRUE(kept.has_value()) << kept.status().to_string();
  auto more = pool->allocate(4096);
  EXPECT_FALSE(more.has_value());
  EXPECT_EQ(pool->stats().exhausted, 1u);
}

// An observer process holds at most `max_observer_holds` blocks; past that it reads a copy and
// the block goes back at once.
TEST(ObserverRole, AnObserverHoldsABoundedNumberOfBlocksAndCopiesTheRest) {
  auto pool = shm::Pool::create({segment_name("bound"), 64 << 20, 60'000'000'000});
  std::vector<BufferPtr> blocks;
  std::vector<ShmLocation> locs;
  for (int i = 0; i < 4; ++i) {
    blocks.push_back(*pool->allocate(8192));
    std::memset(blocks.back()->data(), 10 + i, 8192);
    locs.push_back(*blocks.back()->shm());
    pool->mark_sent(*blocks.back(), {0, 1}, "/camera/image");
  }
  shm::Mapper observer(1024, /*max_observer_holds=*/2);
  std::vector<BufferPtr> got;
  for (const auto& loc : locs) {
    auto b = observer.acquire(loc, {.observer = true, .take_pending = true});
    ASSERT_TRUE(b.has_value()) << b.status().to_string();
    got.push_back(*b);
  }
  EXPECT_EQ(got[0]->kind(), BufferKind::kSharedMemory);
  EXPECT_EQ(got[1]->kind(), BufferKind::kSharedMemory);
  EXPECT_NE(got[2]->kind(), BufferKind::kSharedMemory);
  EXPECT_NE(got[3]->kind(), BufferKind::kSharedMemory);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(std::to_integer<int>(got[i]->data()[8191]), 10 + i) << "block " << i;
  }
  const auto st = observer.stats();
  EXPECT_EQ(st.observer_holds, 2u);
  EXPECT_EQ(st.observer_copies, 2u);
  EXPECT_EQ(holders_of(locs[0]), 1);
  EXPECT_EQ(holders_of(locs[2]), 0);  // copied: the slot went back at once
  // A pipeline subscriber of the same process sharing an observer's hold lifts it off the bound.
  auto shared = observer.acquire(locs[0], {.observer = false, .take_pending = false});
  ASSERT_TRUE(shared.has_value());
  EXPECT_EQ(observer.stats().observer_holds, 1u);
  got.clear();
  shared->reset();
  EXPECT_EQ(observer.stats().observer_holds, 0u);
  EXPECT_EQ(holders_of(locs[0]), 0);
}

Message big_image(Bus& bus, std::uint8_t fill) {
  Tensor px = *bus.loan(DType::kU8, Shape{512, 1024, 3});  // 1.5 MB: one pool block each
  std::memset(px.raw_data(), fill, px.nbytes());
  return *msgs::Image::make(px, "rgb8", "base");
}

struct Tap {
  std::shared_ptr<Waker> waker = std::make_shared<Waker>();
  std::shared_ptr<SubscriptionQueue> queue;
  explicit Tap(QoS qos) : queue(std::make_shared<SubscriptionQueue>("/cam", "Image", qos, "tap", waker)) {}
  const SubscriptionCounters& c() const { return queue->counters(); }
  // Every message sent since the first one this subscriber saw, accounted once.
  std::uint64_t accounted() const {
    return c().received.get() + c().rejected.get() + c().dropped_transport.get() + c().lost.get();
  }
  std::uint64_t received_split() const {
    return c().taken.get() + c().dropped_overflow.get() + c().dropped_timeout.get() + queue->size();
  }
};

struct Graph {
  std::unique_ptr<Bus> publisher, pipeline, watcher;
  std::shared_ptr<TopicWriter> writer;
  Tap consumer{QoS::keep_last(100)};
  Tap stuck;  // never takes anything
  std::uint64_t first_seq = 0;

  Graph(const std::string& domain, QoS stuck_qos) : stuck(stuck_qos) {
    BusOptions o;
    o.domain = domain;
    BusOptions small = o;
    small.shm_pool_bytes = 6 << 20;  // room for four 1.5 MB blocks
    publisher = std::move(*Bus::create(small));
    pipeline = std::move(*Bus::create(o));
    BusOptions w = o;
    w.observer_max_holds = 1;
    watcher = std::move(*Bus::create(w));
    writer = *publisher->advertise("/cam", "Image", "camera");
    EXPECT_OK(pipeline->attach(consumer.queue));
    EXPECT_OK(watcher->attach(stuck.queue));
  }
  // Publishes until both subscribers got something (subscriptions propagate asynchronously).
  bool connect() {
    std::uint8_t fill = 0;
    return eventually([&] {
      EXPECT_OK(publisher->publish(*writer, big_image(*publisher, ++fill)));
      while (auto m = consumer.queue->pop()) {
        if (first_seq == 0) first_seq = m->header().seq;
      }
      return first_seq != 0 && stuck.c().received.get() + stuck.c().dropped_transport.get() > 0;
    });
  }
  // Messages sent since the consumer's first one.
  std::uint64_t sent_to_consumer() const { return writer->counters().published.get() - first_seq + 1; }
};

// A pipeline subscriber and an observer that never reads: the observer loses, never the
// pipeline. Without the observer role (the same subscriber as a pipeline one), the pipeline
// subscriber loses messages: the test would fail.
TEST(ObserverRole, AnObserverThatNeverReadsCannotStarveThePipeline) {
  for (const bool observer : {true, false}) {
    SCOPED_TRACE(observer ? "observer" : "pipeline-role reader");
    QoS qos = QoS::keep_last(1000);
    Graph g(testing::unique_domain(observer ? "obs" : "noobs"), observer ? qos.as_observer() : qos);
    ASSERT_TRUE(g.connect());
    eventually([&] { return g.consumer.accounted() >= g.sent_to_consumer(); });  // warm-up settled
    const auto received_before = g.consumer.c().received.get();
    const auto sent_before = g.sent_to_consumer();
    constexpr int kMessages = 24;
    for (int i = 0; i < kMessages; ++i) {
      ASSERT_OK(g.publisher->publish(*g.writer, big_image(*g.publisher, static_cast<std::uint8_t>(i))));
      // The consumer takes what arrives, as its node would (bounded wait: a lost message never comes).
      const bool arrived = eventually([&] {
        while (g.consumer.queue->pop()) {
        }
        return g.consumer.c().received.get() - received_before >= g.sent_to_consumer() - sent_before;
      }, std::chrono::milliseconds(static_cast<int>(1000 * testing::time_scale())));
      if (!arrived && !observer) break;  // starved, as expected without the role
    }
    const auto missing = (g.sent_to_consumer() - sent_before) - (g.consumer.c().received.get() - received_before);
    const auto pub_stats = YAML::Load(g.publisher->stats_yaml());
    if (observer) {
      EXPECT_EQ(missing, 0u) << g.publisher->stats_yaml();
      EXPECT_EQ(g.consumer.c().lost.get() + g.consumer.c().dropped_transport.get(), 0u);
      EXPECT_EQ(pub_stats["transport"]["dropped_pool_full"].as<int>(), 0) << g.publisher->stats_yaml();
      // The observer holds at most one block (plus, for a moment, the one it is copying out);
      // what it could not hold it copied or lost (counted).
      EXPECT_TRUE(eventually([&] {
        return YAML::Load(g.watcher->stats_yaml())["shm_mapper"]["observer_holds"].as<int>() <= 1;
      })) << g.watcher->stats_yaml();
      const auto w = YAML::Load(g.watcher->stats_yaml());
      EXPECT_GT(w["shm_mapper"]["observer_copies"].as<int>() + g.stuck.c().dropped_transport.get(), 0);
    } else {
      EXPECT_GT(missing, 0u) << "a stuck pipeline-role reader pins the pool; the consumer should lose";
      EXPECT_GT(pub_stats["transport"]["dropped_pool_full"].as<int>(), 0);
    }
  }
}

// Every message a publisher sent is accounted at each subscriber: received (then taken,
// dropped by QoS or still queued), rejected, dropped in transport or lost.
TEST(ObserverRole, EveryMessageSentIsAccountedAtEachSubscriber) {
  Graph g(testing::unique_domain("acct"), QoS::keep_last(3).as_observer());
  ASSERT_TRUE(g.connect());
  // A burst with nobody taking anything: the consumer's queue holds every pool block, so the
  // publisher runs out of shared memory and some messages never leave (lost at receivers).
  for (int i = 0; i < 12; ++i) ASSERT_OK(g.publisher->publish(*g.writer, big_image(*g.publisher, 1)));
  std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int>(200 * testing::time_scale())));
  // Drain, then publish until everything sent is accounted (a message lost after the last
  // one seen shows only when a later one arrives, so publish again when accounting stalls).
  while (g.consumer.queue->pop()) {
  }
  ASSERT_TRUE(eventually([&] {
    EXPECT_OK(g.publisher->publish(*g.writer, big_image(*g.publisher, 2)));
    return eventually([&] {
      while (g.consumer.queue->pop()) {
      }
      return g.consumer.accounted() >= g.sent_to_consumer();
    }, std::chrono::milliseconds(static_cast<int>(500 * testing::time_scale())));
  }));
  EXPECT_EQ(g.consumer.accounted(), g.sent_to_consumer());
  EXPECT_EQ(g.consumer.received_split(), g.consumer.c().received.get());
  EXPECT_GT(g.consumer.c().lost.get(), 0u) << "the burst should have run the publisher's pool dry";
  const auto pub = YAML::Load(g.publisher->stats_yaml());
  EXPECT_GT(pub["transport"]["dropped_pool_full"].as<int>(), 0);
  // The observer's queue (depth 3) overflowed: QoS drops, counted beside the rest.
  EXPECT_GT(g.stuck.c().dropped_overflow.get(), 0u);
  EXPECT_EQ(g.stuck.received_split(), g.stuck.c().received.get());
}

}  // namespace
}  // namespace edgevla
