#include "runtime/util/cpu_marks.hpp"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <map>
#include <thread>
#include <vector>

#include "runtime/bus/waker.hpp"
#include "runtime/util/thread_pool.hpp"

namespace edgevla {
namespace {

cpu_set_t set_of(std::initializer_list<int> cpus) {
  cpu_set_t s;
  CPU_ZERO(&s);
  for (int c : cpus) CPU_SET(c, &s);
  return s;
}

std::vector<int> allowed_cpus() {
  cpu_set_t s;
  CPU_ZERO(&s);
  EXPECT_EQ(sched_getaffinity(0, sizeof s, &s), 0);
  std::vector<int> out;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &s)) out.push_back(c);
  }
  return out;
}

void pin_to(int cpu) {
  const cpu_set_t one = set_of({cpu});
  ASSERT_EQ(pthread_setaffinity_np(pthread_self(), sizeof one, &one), 0);
}

TEST(CpuMarks, PickTakesTheFirstUnmarkedCpuAfterStartButNeverTheAvoidedOne) {
  const cpu_set_t allowed = set_of({0, 1, 2, 3, 5});
  std::map<int, int> marks{{1, 1}, {2, 2}};
  const auto m = [&](int c) { return marks.count(c) ? marks[c] : 0; };
  EXPECT_EQ(cpu_marks::pick(allowed, 0, 0, m), 3);   // 0 avoided, 1 and 2 marked
  EXPECT_EQ(cpu_marks::pick(allowed, 3, 1, m), 5);   // 4 is not allowed
  EXPECT_EQ(cpu_marks::pick(allowed, -1, 6, m), 0);  // wraps
  marks[0] = marks[3] = marks[5] = 3;
  EXPECT_EQ(cpu_marks::pick(allowed, 0, 0, m), 1);  // every CPU marked: the least marked
  EXPECT_EQ(cpu_marks::pick(set_of({4}), 4, 0, m), -1);  // nowhere else to go
}

TEST(CpuMarks, AMarkCountsOnItsCpuUntilReleasedOrMoved) {
  const int before = cpu_marks::marks_on(7);
  {
    cpu_marks::Mark a(7);
    EXPECT_EQ(cpu_marks::marks_on(7), before + 1);
    cpu_marks::Mark b(std::move(a));
    EXPECT_EQ(a.cpu(), -1);
    EXPECT_EQ(cpu_marks::marks_on(7), before + 1);
    cpu_marks::Mark c(7);
    EXPECT_EQ(cpu_marks::marks_on(7), before + 2);
    c = std::move(b);  // c's own mark is dropped
    EXPECT_EQ(cpu_marks::marks_on(7), before + 1);
    c.release();
    EXPECT_EQ(cpu_marks::marks_on(7), before);
  }
  EXPECT_EQ(cpu_marks::marks_on(7), before);
  cpu_marks::Mark untracked(cpu_marks::kTracked + 3);
  EXPECT_EQ(untracked.cpu(), -1);
  EXPECT_EQ(cpu_marks::marks_on(cpu_marks::kTracked + 3), 0);
}

// A thread pinned to one CPU (its home captured before) moves off it and may then go anywhere in
// its home but there.
TEST(CpuMarks, MoveOffLeavesTheCpuAndKeepsItOutOfTheMask) {
  const std::vector<int> cpus = allowed_cpus();
  if (cpus.size() < 2) GTEST_SKIP() << "one CPU: nowhere else to go";
  std::thread t([&] {
    (void)cpu_marks::thread_home();
    pin_to(cpus[0]);
    ASSERT_EQ(sched_getcpu(), cpus[0]);
    const int to = cpu_marks::move_off(cpus[0]);
    EXPECT_NE(to, -1);
    EXPECT_NE(to, cpus[0]);
    EXPECT_EQ(sched_getcpu(), to);
    cpu_set_t now;
    CPU_ZERO(&now);
    ASSERT_EQ(sched_getaffinity(0, sizeof now, &now), 0);
    EXPECT_FALSE(CPU_ISSET(cpus[0], &now));
    EXPECT_EQ(CPU_COUNT(&now), static_cast<int>(cpus.size()) - 1);
  });
  t.join();
}

// A spinner that its upstream's first begin woke on the upstream's own CPU (as a scheduler that
// sees no shared cache does) moves before it spins, and still takes the message by spinning.
TEST(CpuMarks, AnUpstreamSpinnerOnItsUpstreamsCpuMovesOffIt) {
  const std::vector<int> cpus = allowed_cpus();
  if (cpus.size() < 2) GTEST_SKIP() << "one CPU: nowhere else to go";
  const int a = cpus[0];
  Waker w;
  w.set_upstream_spin_ns(std::chrono::nanoseconds(std::chrono::seconds(2)).count());
  std::atomic<bool> begun{false};
  std::atomic<int> after = -2;
  std::thread down([&] {
    (void)cpu_marks::thread_home();
    pin_to(a);
    const std::uint32_t seen = w.epoch();
    while (!begun.load()) std::this_thread::yield();
    w.wait(seen, 0);
    after.store(sched_getcpu());
  });
  std::thread up([&] {
    pin_to(a);
    w.upstream_begins();
    begun.store(true);
    std::this_thread::sleep_for(std::chrono::milliseconds(30));  // the callback's work
    w.notify();
    w.upstream_ends();
  });
  up.join();
  down.join();
  EXPECT_NE(after.load(), a);
  EXPECT_EQ(w.upstream_spins_taken(), 1u);
}

// Workers stay off CPUs other busy threads of the process marked (a spinner's, here), not only
// off their caller's. Needs a third CPU.
TEST(CpuMarks, PoolWorkersKeepOffAMarkedCpu) {
  const std::vector<int> cpus = allowed_cpus();
  if (cpus.size() < 3) GTEST_SKIP() << "needs 3 CPUs: the caller's, a marked one and a free one";
  const cpu_marks::Mark spinner(cpus[1]);
  std::thread caller([&] {
    ThreadPool pool(2);
    pin_to(cpus[0]);
    std::atomic<int> on_taken{0}, by_worker{0};
    const auto me = std::this_thread::get_id();
    for (int j = 0; j < 40; ++j) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      pool.park();
      pool.run(2, [&](int) {
        if (std::this_thread::get_id() != me) {
          by_worker.fetch_add(1);
          const int c = sched_getcpu();
          if (c == cpus[0] || c == cpus[1]) on_taken.fetch_add(1);
        }
        const auto end = std::chrono::steady_clock::now() + std::chrono::microseconds(200);
        while (std::chrono::steady_clock::now() < end) {
        }
      });
    }
    EXPECT_EQ(on_taken.load(), 0) << "of " << by_worker.load() << " tasks a worker ran";
    EXPECT_GT(by_worker.load(), 0);
  });
  caller.join();
}

}  // namespace
}  // namespace edgevla
