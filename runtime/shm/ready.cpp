#include "runtime/shm/ready.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <ctime>

#include "runtime/util/clock.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define EDGEVLA_READY_PAUSE() _mm_pause()
#elif defined(__aarch64__)
#define EDGEVLA_READY_PAUSE() asm volatile("yield")
#else
#define EDGEVLA_READY_PAUSE() ((void)0)
#endif

namespace edgevla::shm {
namespace {

std::atomic<std::int64_t> g_spin_ns{0};
std::atomic<std::int64_t> g_timeout_ns{10'000'000'000};  // 10 s: no chunk's device work takes that long

// Shared (not PRIVATE) futex operations: the word is in memory mapped by several processes.
long futex(std::atomic<std::uint32_t>* word, int op, std::uint32_t value, const timespec* timeout) {
  return ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), op, value, timeout, nullptr, 0);
}

}  // namespace

void mark_ready(SegmentHeader& header, std::uint32_t generation, bool ok) {
  if (!ok) header.failed_generation.store(generation, std::memory_order_relaxed);
  header.ready_generation.store(generation, std::memory_order_release);
  futex(&header.ready_generation, FUTEX_WAKE, INT_MAX, nullptr);
}

bool is_ready(const SegmentHeader& header, std::uint32_t generation) {
  return header.ready_generation.load(std::memory_order_acquire) == generation;
}

void raise_ready_spin_ns(std::int64_t ns) {
  std::int64_t cur = g_spin_ns.load(std::memory_order_relaxed);
  while (ns > cur && !g_spin_ns.compare_exchange_weak(cur, ns, std::memory_order_relaxed)) {
  }
}
std::int64_t ready_spin_ns() { return g_spin_ns.load(std::memory_order_relaxed); }
void set_ready_timeout_ns(std::int64_t ns) { g_timeout_ns.store(std::max<std::int64_t>(ns, 1), std::memory_order_relaxed); }
std::int64_t ready_timeout_ns() { return g_timeout_ns.load(std::memory_order_relaxed); }

bool BlockReadyFence::done() { return is_ready(segment_->header(), generation_); }

Status BlockReadyFence::wait_on(void*) { return wait(); }

Status BlockReadyFence::wait() {
  SegmentHeader& h = segment_->header();
  const auto outcome = [&]() -> Status {
    if (h.failed_generation.load(std::memory_order_relaxed) == generation_) {
      return unavailable("the device work that writes block '" + segment_->name() + "' failed in its producer (pid " +
                       std::to_string(h.owner_pid) + "), so the message is dropped; the producer's log names the error");
    }
    return Status::ok();
  };
  if (is_ready(h, generation_)) return outcome();
  const std::int64_t start = steady_now_ns();
  const std::int64_t spin_until = start + ready_spin_ns();
  while (steady_now_ns() < spin_until) {
    for (int i = 0; i < 64; ++i) EDGEVLA_READY_PAUSE();
    if (is_ready(h, generation_)) {
      waited_ns_ = steady_now_ns() - start;
      return outcome();
    }
  }
  const std::int64_t deadline = start + ready_timeout_ns();
  for (;;) {
    const std::uint32_t seen = h.ready_generation.load(std::memory_order_acquire);
    if (seen == generation_) break;
    const std::int64_t now = steady_now_ns();
    if (!process_alive(static_cast<pid_t>(h.owner_pid))) {
      if (is_ready(h, generation_)) break;  // signalled just before it exited
      waited_ns_ = now - start;
      return unavailable("the producer of block '" + segment_->name() + "' (pid " + std::to_string(h.owner_pid) +
                         ") exited before its device work on the block was done, so the message is dropped; "
                         "its successor's messages are read as usual");
    }
    if (now >= deadline) {
      waited_ns_ = now - start;
      return timeout_error("block '" + segment_->name() + "': its producer (pid " + std::to_string(h.owner_pid) +
                               ") has not finished the device work that writes it after " +
                               std::to_string((now - start) / 1'000'000) +
                               " ms, so the message is dropped; look for a stalled device or engine in that process");
    }
    // Sleep until woken, re-checking the producer's life every 20 ms.
    const std::int64_t slice = std::min<std::int64_t>(deadline - now, 20'000'000);
    const timespec ts{static_cast<time_t>(slice / 1'000'000'000), static_cast<long>(slice % 1'000'000'000)};
    futex(&h.ready_generation, FUTEX_WAIT, seen, &ts);
  }
  waited_ns_ = steady_now_ns() - start;
  return outcome();
}

}  // namespace edgevla::shm
