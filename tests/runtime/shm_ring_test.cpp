// The shared-memory ring: order and contents across laps, full and oversized records, many
// producer threads and a producer process, the consumer's sleep and wake-up, producers that die
// or stall between claim and publish, the segment's mode and lifetime, and bad names.
#include "runtime/shm/ring.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/shm/segment.hpp"

namespace edgevla::shm {
namespace {

std::string unique_tag(const char* what) {
  static std::atomic<int> n{0};
  return std::string(what) + "." + std::to_string(::getpid()) + "." + std::to_string(n.fetch_add(1));
}

std::span<const std::byte> bytes(const std::string& s) { return std::as_bytes(std::span(s.data(), s.size())); }

std::string record(int producer, int i, std::size_t size) {
  std::string r = std::to_string(producer) + ":" + std::to_string(i) + ":";
  while (r.size() < size) r.push_back(static_cast<char>('a' + (r.size() + static_cast<std::size_t>(i)) % 26));
  r.resize(std::max(size, r.size()));
  return r;
}

TEST(ShmRing, RecordsArriveInOrderAcrossManyLaps) {
  auto ring = Ring::create(ring_name(::getpid(), unique_tag("order")), {.slots = 8, .slot_bytes = 256});
  ASSERT_TRUE(ring.has_value()) << ring.status().to_string();
  Ring& r = **ring;
  std::string got;
  EXPECT_FALSE(r.pop(got, 0)) << "an empty ring has nothing";
  for (int i = 0; i < 100; ++i) {
    const std::string a = record(0, i, static_cast<std::size_t>(i % 7) * 30);
    const std::string b = "|tail" + std::to_string(i);
    const std::span<const std::byte> parts[] = {bytes(a), bytes(b)};
    ASSERT_TRUE(r.push(parts).is_ok()) << i;
    ASSERT_TRUE(r.pop(got, 0)) << i;
    EXPECT_EQ(got, a + b) << i;
  }
  const RingCounters c = r.counters();
  EXPECT_EQ(c.pushed, 100u);
  EXPECT_EQ(c.popped, 100u);
  EXPECT_EQ(c.skipped, 0u);
}

TEST(ShmRing, AFullRingAndAnOversizedRecordAreRefusedByName) {
  auto ring = Ring::create(ring_name(::getpid(), unique_tag("full")), {.slots = 4, .slot_bytes = 64});
  ASSERT_TRUE(ring.has_value()) << ring.status().to_string();
  Ring& r = **ring;
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(r.push(bytes(record(0, i, 10))).is_ok());
  const Status full = r.push(bytes(record(0, 4, 10)));
  EXPECT_EQ(full.code(), StatusCode::kResourceExhausted) << full.to_string();
  EXPECT_NE(full.message().find("is full"), std::string::npos) << full.to_string();
  // Half the ring's bytes at most (2 slots of 64): 129 bytes are refused by size.
  EXPECT_EQ(r.max_record_bytes(), 128u);
  const Status big = r.push(bytes(std::string(129, 'x')));
  EXPECT_EQ(big.code(), StatusCode::kInvalidArgument) << big.to_string();
  EXPECT_NE(big.message().find("129 bytes"), std::string::npos) << big.to_string();
  EXPECT_NE(big.message().find("128 bytes at most"), std::string::npos) << big.to_string();
  std::string got;
  ASSERT_TRUE(r.pop(got, 0));
  EXPECT_EQ(got, record(0, 0, 10));
  EXPECT_TRUE(r.push(bytes(record(0, 4, 10))).is_ok()) << "a taken record frees its slot";
  for (int i = 1; i <= 4; ++i) {
    ASSERT_TRUE(r.pop(got, 0));
    EXPECT_EQ(got, record(0, i, 10));
  }
  EXPECT_EQ(r.counters().full, 1u);
  EXPECT_EQ(r.counters().too_big, 1u);
}

// Records larger than a slot take consecutive slots: contents and order survive laps, mixed
// with one-slot records; a record finds the ring full when its slots are not all free, and
// the slots a taken record frees let it in.
TEST(ShmRing, RecordsLargerThanASlotSpanSlots) {
  auto ring = Ring::create(ring_name(::getpid(), unique_tag("span")), {.slots = 8, .slot_bytes = 64});
  ASSERT_TRUE(ring.has_value()) << ring.status().to_string();
  Ring& r = **ring;
  const std::size_t sizes[] = {10, 64, 65, 200, 1, 256, 128, 129, 63, 190};
  std::string got;
  for (int lap = 0; lap < 20; ++lap) {  // positions wrap the 8 slots many times
    for (int i = 0; i < 10; ++i) {
      const std::string rec = record(lap, i, sizes[i]);
      ASSERT_TRUE(r.push(bytes(rec)).is_ok()) << "lap " << lap << " record " << i;
      ASSERT_TRUE(r.pop(got, 0)) << "lap " << lap << " record " << i;
      ASSERT_EQ(got, rec) << "lap " << lap << " record " << i;
    }
  }
  // Two 4-slot records fill the ring: a one-slot record finds it full. Taking the first frees
  // 4 slots: a 3-slot record fits, then a 2-slot one does not, a one-slot one does.
  const std::string a = record(1, 1, 250), b = record(1, 2, 256);
  ASSERT_TRUE(r.push(bytes(a)).is_ok());
  ASSERT_TRUE(r.push(bytes(b)).is_ok());
  EXPECT_EQ(r.push(bytes(std::string("x"))).code(), StatusCode::kResourceExhausted);
  ASSERT_TRUE(r.pop(got, 0));
  EXPECT_EQ(got, a);
  const std::string c = record(1, 3, 180);  // 3 slots of the 4 just freed
  ASSERT_TRUE(r.push(bytes(c)).is_ok());
  EXPECT_EQ(r.push(bytes(record(1, 4, 100))).code(), StatusCode::kResourceExhausted) << "1 slot free, 2 needed";
  ASSERT_TRUE(r.push(bytes(std::string("y"))).is_ok()) << "the last free slot takes a one-slot record";
  for (const std::string& want : {b, c, std::string("y")}) {
    ASSERT_TRUE(r.pop(got, 0));
    EXPECT_EQ(got, want);
  }
  EXPECT_FALSE(r.pop(got, 0));
  EXPECT_EQ(r.counters().skipped, 0u);
}

// Producer threads pushing records of one to three slots: each producer's records arrive
// whole and in order, nothing is skipped.
TEST(ShmRing, ManyProducersOfMultiSlotRecordsLoseNothing) {
  const std::string name = ring_name(::getpid(), unique_tag("mpspan"));
  auto consumer = Ring::create(name, {.slots = 16, .slot_bytes = 128});
  ASSERT_TRUE(consumer.has_value()) << consumer.status().to_string();
  constexpr int kProducers = 3, kEach = 3000;
  std::atomic<int> failed{0};
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      auto ring = Ring::open(name);
      if (!ring) {
        failed.fetch_add(1);
        return;
      }
      for (int i = 0; i < kEach && failed.load() == 0; ++i) {
        const std::string rec = record(p, i, 20 + static_cast<std::size_t>((i * 37 + p * 11) % 360));
        Status st;
        while ((st = (*ring)->push(bytes(rec))).code() == StatusCode::kResourceExhausted && failed.load() == 0) {
          std::this_thread::yield();
        }
        if (!st.is_ok()) {
          ADD_FAILURE() << "producer " << p << " record " << i << ": " << st.to_string();
          failed.fetch_add(1);
        }
      }
    });
  }
  std::vector<int> next(kProducers, 0);
  std::string got;
  for (int received = 0; received < kProducers * kEach && failed.load() == 0; ++received) {
    if (!(*consumer)->pop(got, 5'000'000'000)) {
      ADD_FAILURE() << "consumer stalled after " << received << " records";
      failed.fetch_add(1);
      break;
    }
    int p = -1, i = -1;
    if (std::sscanf(got.c_str(), "%d:%d:", &p, &i) != 2 || p < 0 || p >= kProducers) {
      ADD_FAILURE() << "garbled record of " << got.size() << " bytes";
      failed.fetch_add(1);
      break;
    }
    EXPECT_EQ(i, next[static_cast<std::size_t>(p)]) << "producer " << p << " out of order";
    EXPECT_EQ(got, record(p, i, 20 + static_cast<std::size_t>((i * 37 + p * 11) % 360))) << "record " << p << ":" << i;
    next[static_cast<std::size_t>(p)] = i + 1;
  }
  for (auto& t : producers) t.join();
  EXPECT_EQ((*consumer)->counters().skipped, 0u);
}

TEST(ShmRing, ManyProducerThreadsLoseNothingAndKeepTheirOrder) {
  const std::string name = ring_name(::getpid(), unique_tag("mp"));
  auto consumer = Ring::create(name, {.slots = 16, .slot_bytes = 128});
  ASSERT_TRUE(consumer.has_value()) << consumer.status().to_string();
  constexpr int kProducers = 4, kEach = 5000;
  // A producer that fails says why and stops; the consumer then stops too, and every thread is
  // joined before the test returns (a failure is a message, never an abort).
  std::mutex mu;
  std::vector<std::string> failures;
  std::atomic<int> failed{0};
  std::vector<RingCounters> producer_counters(kProducers);
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      auto fail = [&](const std::string& why) {
        std::lock_guard lock(mu);
        failures.push_back("producer " + std::to_string(p) + ": " + why);
        failed.fetch_add(1);
      };
      auto ring = Ring::open(name);
      if (!ring) return fail(ring.status().to_string());
      for (int i = 0; i < kEach && failed.load() == 0; ++i) {
        const std::string rec = std::to_string(p) + " " + std::to_string(i);
        Status st;
        while ((st = (*ring)->push(bytes(rec))).code() == StatusCode::kResourceExhausted && failed.load() == 0) {
          std::this_thread::yield();
        }
        if (!st.is_ok() && failed.load() == 0) return fail("record " + std::to_string(i) + ": " + st.to_string());
      }
      producer_counters[static_cast<std::size_t>(p)] = (*ring)->counters();
    });
  }
  std::vector<int> next(kProducers, 0);
  std::string got;
  int received = 0;
  std::string stall;
  while (received < kProducers * kEach && failed.load() == 0) {
    if (!(*consumer)->pop(got, 5'000'000'000)) {
      const RingCounters c = (*consumer)->counters();
      stall = "consumer stalled after " + std::to_string(received) + " records (popped " + std::to_string(c.popped) +
              ", skipped " + std::to_string(c.skipped) + ")";
      failed.fetch_add(1);
      break;
    }
    int p = -1, i = -1;
    if (std::sscanf(got.c_str(), "%d %d", &p, &i) != 2 || p < 0 || p >= kProducers) {
      stall = "garbled record '" + got + "'";
      failed.fetch_add(1);
      break;
    }
    EXPECT_EQ(i, next[static_cast<std::size_t>(p)]) << "producer " << p << " out of order";
    next[static_cast<std::size_t>(p)] = i + 1;
    ++received;
  }
  for (auto& t : producers) t.join();
  EXPECT_TRUE(stall.empty()) << stall;
  for (const std::string& f : failures) ADD_FAILURE() << f;
  if (!stall.empty()) {
    for (int p = 0; p < kProducers; ++p) {
      const RingCounters& c = producer_counters[static_cast<std::size_t>(p)];
      ADD_FAILURE() << "producer " << p << ": pushed " << c.pushed << ", full " << c.full << ", lost " << c.lost
                    << ", wakes " << c.wakes;
    }
  }
  std::string extra;
  EXPECT_FALSE((*consumer)->pop(extra, 0));
}

TEST(ShmRing, AProducerProcessDeliversAndWakesASleepingConsumer) {
  const std::string name = ring_name(::getpid(), unique_tag("proc"));
  auto consumer = Ring::create(name, {.slots = 8, .slot_bytes = 4096});
  ASSERT_TRUE(consumer.has_value()) << consumer.status().to_string();
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto ring = Ring::open(name);
    if (!ring) ::_exit(2);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the consumer is asleep by now
    for (int i = 0; i < 50; ++i) {
      const std::string rec = record(1, i, 3000);
      while (!(*ring)->push(bytes(rec)).is_ok()) std::this_thread::yield();
    }
    ::_exit((*ring)->counters().wakes > 0 ? 0 : 3);
  }
  std::string got;
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE((*consumer)->pop(got, 10'000'000'000));
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_LT(waited, std::chrono::seconds(5)) << "the producer's push must wake the sleeping consumer";
  EXPECT_EQ(got, record(1, 0, 3000));
  for (int i = 1; i < 50; ++i) {
    ASSERT_TRUE((*consumer)->pop(got, 10'000'000'000)) << i;
    EXPECT_EQ(got, record(1, i, 3000)) << i;
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
}

// A producer that claimed a slot and died before publishing: the consumer skips the slot
// (counted) and the records behind it flow.
TEST(ShmRing, ADeadProducersClaimIsSkipped) {
  const std::string name = ring_name(::getpid(), unique_tag("dead"));
  auto consumer = Ring::create(name, {.slots = 8, .slot_bytes = 64, .stale_claim_ns = 60'000'000'000});
  ASSERT_TRUE(consumer.has_value()) << consumer.status().to_string();
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Claims slot 0 and dies before publishing it.
    auto ring = Ring::open(name);
    if (!ring) ::_exit(2);
    ::_exit((*ring)->reserve().has_value() ? 0 : 3);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  auto producer = Ring::open(name);
  ASSERT_TRUE(producer.has_value());
  ASSERT_TRUE((*producer)->push(bytes(std::string("after"))).is_ok());
  std::string got;
  ASSERT_TRUE((*consumer)->pop(got, 2'000'000'000)) << "a dead producer's claim must not block the ring";
  EXPECT_EQ(got, "after");
  EXPECT_EQ((*consumer)->counters().skipped, 1u);
}

// A consumer that polls without pause may look at the ring's very first record between its
// claim and the owner word the producer writes next, when the slot's word is still zero: that
// must read as "being written", not as a dead producer's claim (the record was once lost so).
TEST(ShmRing, APollingConsumerNeverSkipsTheFirstRecordsFreshClaim) {
  for (int trial = 0; trial < 400; ++trial) {
    const std::string name = ring_name(::getpid(), unique_tag("first"));
    auto consumer = Ring::create(name, {.slots = 8, .slot_bytes = 64, .stale_claim_ns = 60'000'000'000});
    ASSERT_TRUE(consumer.has_value()) << consumer.status().to_string();
    auto producer = Ring::open(name);
    ASSERT_TRUE(producer.has_value());
    std::atomic<bool> go{false};
    std::thread push([&] {
      while (!go.load()) {
      }
      ASSERT_TRUE((*producer)->push(bytes(std::string("first"))).is_ok()) << "trial " << trial;
    });
    std::string got;
    go.store(true);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!(*consumer)->pop(got, 0) && std::chrono::steady_clock::now() < until) {
    }
    push.join();
    ASSERT_EQ(got, "first") << "trial " << trial;
    ASSERT_EQ((*consumer)->counters().skipped, 0u) << "trial " << trial;
  }
}

// A live producer stalled between claim and publish past the limit: its slot is skipped and
// its late publish fails by name; nothing after it is lost.
TEST(ShmRing, AStalledClaimIsSkippedAfterTheLimitAndItsPublishFails) {
  const std::string name = ring_name(::getpid(), unique_tag("stall"));
  auto consumer = Ring::create(name, {.slots = 8, .slot_bytes = 64, .stale_claim_ns = 50'000'000});
  ASSERT_TRUE(consumer.has_value()) << consumer.status().to_string();
  auto stalled = Ring::open(name);
  ASSERT_TRUE(stalled.has_value());
  auto pending = (*stalled)->reserve();
  ASSERT_TRUE(pending.has_value()) << pending.status().to_string();
  ASSERT_TRUE((*stalled)->push(bytes(std::string("behind"))).is_ok());
  std::string got;
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE((*consumer)->pop(got, 5'000'000'000));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(40));
  EXPECT_EQ(got, "behind");
  EXPECT_EQ((*consumer)->counters().skipped, 1u);
  std::memcpy(pending->data, "late", 4);
  const Status late = (*stalled)->commit(*pending, 4);
  EXPECT_EQ(late.code(), StatusCode::kDataLoss) << late.to_string();
  EXPECT_EQ((*stalled)->counters().lost, 1u);
  ASSERT_TRUE((*stalled)->push(bytes(std::string("next"))).is_ok());
  ASSERT_TRUE((*consumer)->pop(got, 1'000'000'000));
  EXPECT_EQ(got, "next");
}

TEST(ShmRing, WakeReleasesAWaitingConsumer) {
  auto ring = Ring::create(ring_name(::getpid(), unique_tag("wake")), {.slots = 4, .slot_bytes = 64});
  ASSERT_TRUE(ring.has_value());
  std::atomic<bool> returned{false};
  std::thread t([&] {
    std::string got;
    EXPECT_FALSE((*ring)->pop(got, 30'000'000'000));
    returned = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  (*ring)->wake();
  t.join();
  EXPECT_TRUE(returned.load());
}

TEST(ShmRing, TheSegmentIsOwnerOnlyAndGoesWithItsConsumer) {
  const std::string name = ring_name(::getpid(), unique_tag("mode"));
  {
    auto ring = Ring::create(name, {.slots = 4, .slot_bytes = 64});
    ASSERT_TRUE(ring.has_value());
    struct stat st {};
    ASSERT_EQ(::stat(("/dev/shm" + name).c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    EXPECT_EQ((*ring)->owner_pid(), ::getpid());
    auto again = Ring::create(name, {.slots = 4, .slot_bytes = 64});
    EXPECT_FALSE(again.has_value()) << "a ring's name is taken while it exists";
  }
  auto gone = Ring::open(name);
  ASSERT_FALSE(gone.has_value());
  EXPECT_EQ(gone.status().code(), StatusCode::kNotFound) << gone.status().to_string();
}

TEST(ShmRing, BadOptionsAndForeignSegmentsAreRefused) {
  EXPECT_FALSE(Ring::create(ring_name(::getpid(), unique_tag("bad")), {.slots = 6}).has_value());
  EXPECT_FALSE(Ring::create(ring_name(::getpid(), unique_tag("bad")), {.slots = 4, .slot_bytes = 8}).has_value());
  // A pool segment is not a ring.
  const std::string seg = segment_prefix() + std::to_string(::getpid()) + ".notaring." + unique_tag("x");
  auto s = Segment::create(seg, 4096);
  ASSERT_TRUE(s.has_value()) << s.status().to_string();
  auto r = Ring::open(seg);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().to_string();
  EXPECT_NE(r.status().message().find("not an edgevla ring"), std::string::npos);
}

}  // namespace
}  // namespace edgevla::shm
