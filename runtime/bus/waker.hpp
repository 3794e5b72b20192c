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
  // Spins up to `spin_ns` first, which trims wake-up latency at the cost of CPU.
  void wait(std::uint32_t seen, std::int64_t deadline_ns, std::int64_t spin_ns = 0);

 private:
  std::atomic<std::uint32_t> epoch_{0};
  std::atomic<std::uint32_t> sleepers_{0};
};

}  // namespace edgevla
