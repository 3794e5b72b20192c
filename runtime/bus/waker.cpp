#include "runtime/bus/waker.hpp"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <ctime>

#include "runtime/util/clock.hpp"
#include "runtime/util/cpu_marks.hpp"
#include "runtime/util/cpu_relax.hpp"

namespace edgevla {

void Waker::notify() {
  epoch_.fetch_add(1, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) != 0) {
    syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&epoch_), FUTEX_WAKE_PRIVATE, INT_MAX,
            nullptr, nullptr, 0);
  }
}

void Waker::upstream_begins() {
  upstream_cpu_.store(sched_getcpu(), std::memory_order_relaxed);
  if (upstream_busy_.fetch_add(1, std::memory_order_acq_rel) == 0) notify();
}

void Waker::wait(std::uint32_t seen, std::int64_t deadline_ns, std::int64_t spin_ns) {
  const std::int64_t upstream_spin_ns = this->upstream_spin_ns();
  if (upstream_spin_ns > 0 && upstream_busy_.load(std::memory_order_acquire) > 0) {
    std::int64_t until = steady_now_ns() + upstream_spin_ns;
    if (deadline_ns > 0 && deadline_ns < until) until = deadline_ns;  // a timer due first ends it
    // Woken by the upstream callback's first begin, this thread may be on that callback's CPU
    // (or another busy one): it moves before it spins there (cpu_marks.hpp says why).
    const cpu_marks::Mark spinning = cpu_marks::settle(upstream_cpu_.load(std::memory_order_relaxed));
    while (upstream_busy_.load(std::memory_order_acquire) > 0 && epoch_.load(std::memory_order_acquire) == seen &&
           steady_now_ns() < until) {
      for (int i = 0; i < 4; ++i) cpu_relax();
    }
    if (epoch_.load(std::memory_order_acquire) != seen) {
      spins_taken_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    spins_missed_.fetch_add(1, std::memory_order_relaxed);
  }
  if (spin_ns > 0) {
    const std::int64_t until = steady_now_ns() + spin_ns;
    while (steady_now_ns() < until) {
      if (epoch_.load(std::memory_order_acquire) != seen) return;
      cpu_relax();
    }
  }
  sleepers_.fetch_add(1, std::memory_order_seq_cst);
  if (epoch_.load(std::memory_order_seq_cst) == seen) {
    timespec rel{};
    timespec* timeout = nullptr;
    if (deadline_ns > 0) {
      std::int64_t left = deadline_ns - steady_now_ns();
      if (left < 0) left = 0;
      rel.tv_sec = left / 1'000'000'000;
      rel.tv_nsec = left % 1'000'000'000;
      timeout = &rel;
    }
    if (timeout == nullptr || timeout->tv_sec > 0 || timeout->tv_nsec > 0) {
      syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&epoch_), FUTEX_WAIT_PRIVATE, seen,
              timeout, nullptr, 0);
    }
  }
  sleepers_.fetch_sub(1, std::memory_order_seq_cst);
}

}  // namespace edgevla
