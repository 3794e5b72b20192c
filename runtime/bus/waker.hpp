// Wakes a node's executor thread when work arrives. A futex on an epoch counter: notify()
// bumps the epoch and wakes sleepers; wait() sleeps only if the epoch is unchanged since the
// caller last looked, so no wake-up is ever lost.
#pragma once

#include <atomic>
#include <cstdint>

namespace edgevla {

class Waker {
 public:
  std::uint32_t epoch() const { return epoch_.load(std::memory_order_acquire); }
  void notify();
  // Sleeps until notify() after `seen`, or until the steady-clock `deadline_ns` (<= 0: none).
  // Spins up to `spin_ns` first, which trims wake-up latency at the cost of CPU. While an
  // upstream node is busy (upstream_begins() without its upstream_ends()), spins up to
  // upstream_spin_ns() before that, so the message the upstream callback is about to publish
  // is taken without a wake-up. A spinning thread first leaves the upstream callback's CPU, or
  // one another busy thread of this process marked, and marks its own (cpu_marks.hpp).
  void wait(std::uint32_t seen, std::int64_t deadline_ns, std::int64_t spin_ns = 0);

  // Upstream announcements (only for wakers whose executor spins for them): a node of this
  // process that publishes to this executor's subscriptions began / ended a callback. The
  // first begin wakes a sleeping executor so that it starts spinning.
  // Set before the executor starts (0: the executor does not spin for upstream work).
  void set_upstream_spin_ns(std::int64_t ns) { upstream_spin_ns_.store(ns, std::memory_order_relaxed); }
  std::int64_t upstream_spin_ns() const { return upstream_spin_ns_.load(std::memory_order_relaxed); }
  bool spins_for_upstream() const { return upstream_spin_ns() > 0; }
  void upstream_begins();
  void upstream_ends() { upstream_busy_.fetch_sub(1, std::memory_order_acq_rel); }
  std::int32_t upstream_busy() const { return upstream_busy_.load(std::memory_order_acquire); }
  // Waits that spun for upstream work and ended with work arriving (a hand-over taken without
  // a wake-up), and those that stopped spinning without it (upstream ended, limit or timer).
  std::uint64_t upstream_spins_taken() const { return spins_taken_.load(std::memory_order_relaxed); }
  std::uint64_t upstream_spins_missed() const { return spins_missed_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::uint32_t> epoch_{0};
  std::atomic<std::uint32_t> sleepers_{0};
  std::atomic<std::int32_t> upstream_busy_{0};
  std::atomic<int> upstream_cpu_{-1};  // the CPU of the latest upstream_begins() caller
  std::atomic<std::int64_t> upstream_spin_ns_{0};
  std::atomic<std::uint64_t> spins_taken_{0};
  std::atomic<std::uint64_t> spins_missed_{0};
};

}  // namespace edgevla
