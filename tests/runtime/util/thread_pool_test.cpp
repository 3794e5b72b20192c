// The thread pool (runtime/util/thread_pool.hpp): every task of every job runs exactly once,
// run() returns only when no worker can reach the job any more, and the work split never
// depends on scheduling.
// Pools larger than the machine (16 threads on 2 cores) make late workers common, which is
// where a job can straddle the next one.
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "runtime/util/thread_pool.hpp"

namespace edgevla {
namespace {

// Per job, how many times each of its tasks ran. A worker that ran a task of an old job after
// its run() returned, or took a task of a new job with an old job's count, leaves a count
// other than one somewhere.
void run_jobs(ThreadPool& pool, int jobs, bool park_between, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::unique_ptr<std::atomic<int>[]>> counts;
  std::vector<int> sizes;
  for (int j = 0; j < jobs; ++j) {
    const int tasks = 1 + static_cast<int>(rng() % 40);
    counts.emplace_back(new std::atomic<int>[static_cast<std::size_t>(tasks)]());
    sizes.push_back(tasks);
    std::atomic<int>* c = counts.back().get();
    pool.run(tasks, [c](int t) { c[t].fetch_add(1, std::memory_order_relaxed); });
    for (int t = 0; t < tasks; ++t) ASSERT_EQ(c[t].load(), 1) << "job " << j << " task " << t << " right after run()";
    if (park_between && rng() % 4 == 0) pool.park();
    if (rng() % 64 == 0) std::this_thread::sleep_for(std::chrono::microseconds(rng() % 200));
  }
  // Nothing ran late into an earlier job.
  for (int j = 0; j < jobs; ++j) {
    for (int t = 0; t < sizes[static_cast<std::size_t>(j)]; ++t) {
      ASSERT_EQ(counts[static_cast<std::size_t>(j)][static_cast<std::size_t>(t)].load(), 1)
          << "job " << j << " task " << t << " at the end";
    }
  }
}

TEST(ThreadPool, EveryTaskOfEveryJobRunsExactlyOnce) {
  for (int threads : {2, 3, 8, 16}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    run_jobs(pool, 20000, /*park_between=*/false, 11u + static_cast<std::uint32_t>(threads));
    // Jobs of one task run on the caller without the pool.
    EXPECT_LE(pool.jobs(), 20000u);
    EXPECT_GT(pool.jobs(), 15000u);
  }
}

TEST(ThreadPool, ParkedAndSleepingWorkersJoinCorrectly) {
  ThreadPool pool(16);
  run_jobs(pool, 20000, /*park_between=*/true, 5u);
}

// The closure lives on run()'s caller's stack; once run() returned, writing over that stack
// and running the next job must not disturb a task (the use-after-return a late worker made).
TEST(ThreadPool, NoWorkerTouchesAClosureAfterRunReturned) {
  ThreadPool pool(16);
  std::vector<int> out(64, 0);
  for (int round = 0; round < 20000; ++round) {
    {
      volatile int guard[64];
      const int base = round;
      pool.run(64, [&, base](int t) { out[static_cast<std::size_t>(t)] = base + t; });
      for (int i = 0; i < 64; ++i) guard[i] = -1;  // reuses the stack the closure was on
      (void)guard;
    }
    for (int t = 0; t < 64; ++t) ASSERT_EQ(out[static_cast<std::size_t>(t)], round + t) << "round " << round;
  }
}

TEST(ThreadPool, WorkersTakePartAndTheCallerDoesTheRestAlone) {
  ThreadPool pool(4);
  // Long tasks: the workers must have joined some of these jobs.
  for (int j = 0; j < 200; ++j) {
    pool.run(8, [](int) {
      const auto end = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
      while (std::chrono::steady_clock::now() < end) {
      }
    });
  }
  EXPECT_EQ(pool.jobs(), 200u);
  EXPECT_GT(pool.joined_jobs(), 0u);
  // One thread: no worker, every task on the caller.
  ThreadPool one(1);
  std::vector<std::thread::id> who(5);
  one.run(5, [&](int t) { who[static_cast<std::size_t>(t)] = std::this_thread::get_id(); });
  for (const auto& id : who) EXPECT_EQ(id, std::this_thread::get_id());
}

TEST(ThreadPool, ParallelForSplitDependsOnSizeOnly) {
  // The same ranges every time, whichever thread runs them: a kernel's result for a given
  // thread count cannot depend on timing.
  ThreadPool pool(7);
  auto split = [&](std::int64_t n, std::int64_t grain) {
    std::vector<std::pair<std::int64_t, std::int64_t>> ranges(8, {-1, -1});
    std::atomic<int> next{0};
    pool.parallel_for(n, grain, [&](std::int64_t b, std::int64_t e) {
      ranges[static_cast<std::size_t>(next.fetch_add(1))] = {b, e};
    });
    std::sort(ranges.begin(), ranges.end());
    return ranges;
  };
  const auto first = split(1000, 10);
  for (int i = 0; i < 200; ++i) ASSERT_EQ(split(1000, 10), first);
  // Contiguous cover of [0, n) in at most size() parts of at least grain items.
  std::int64_t expect = 0;
  int parts = 0;
  for (const auto& [b, e] : first) {
    if (b < 0) continue;
    EXPECT_EQ(b, expect);
    EXPECT_GE(e - b, 10);
    expect = e;
    ++parts;
  }
  EXPECT_EQ(expect, 1000);
  EXPECT_EQ(parts, 7);
  EXPECT_EQ(split(25, 10).back(), (std::pair<std::int64_t, std::int64_t>{18, 25}));
}

// A worker woken on the CPU its caller is on moves elsewhere before it joins: on machines whose
// scheduler wakes a thread on the waker's CPU (virtual machines whose CPUs share no cache), the
// pool otherwise time-shares one CPU. The caller pinned to one CPU, jobs after sleeps (workers
// asleep, as between camera frames): no task a worker runs is on the caller's CPU, and workers do
// take part.
TEST(ThreadPool, AWorkerWokenOnTheCallersCpuLeavesIt) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  ASSERT_EQ(sched_getaffinity(0, sizeof allowed, &allowed), 0);
  if (CPU_COUNT(&allowed) < 2) GTEST_SKIP() << "one CPU: nowhere else to go";
  // The pool's caller is a thread of its own, pinned to the first allowed CPU after it made the
  // pool (workers start with their maker's CPUs), so the test's own thread keeps its mask.
  std::thread caller([&] {
    ThreadPool pool(2);
    int cpu = 0;
    while (!CPU_ISSET(cpu, &allowed)) ++cpu;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    ASSERT_EQ(pthread_setaffinity_np(pthread_self(), sizeof one, &one), 0);
    std::atomic<int> on_callers_cpu{0}, by_worker{0};
    const auto me = std::this_thread::get_id();
    for (int j = 0; j < 60; ++j) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      pool.park();
      for (int k = 0; k < 5; ++k) {
        pool.run(2, [&](int) {
          if (std::this_thread::get_id() != me) {
            by_worker.fetch_add(1);
            if (sched_getcpu() == cpu) on_callers_cpu.fetch_add(1);
          }
          const auto end = std::chrono::steady_clock::now() + std::chrono::microseconds(100);
          while (std::chrono::steady_clock::now() < end) {
          }
        });
      }
    }
    EXPECT_EQ(on_callers_cpu.load(), 0) << "of " << by_worker.load() << " tasks a worker ran";
    EXPECT_GT(by_worker.load(), 0);
  });
  caller.join();
}

TEST(ThreadPool, DestroysWhileWorkersSleepOrSpin) {
  for (int i = 0; i < 200; ++i) {
    ThreadPool pool(8);
    std::atomic<int> n{0};
    pool.run(8, [&](int) { n.fetch_add(1); });
    EXPECT_EQ(n.load(), 8);
    if (i % 2) pool.park();
  }
}

}  // namespace
}  // namespace edgevla
