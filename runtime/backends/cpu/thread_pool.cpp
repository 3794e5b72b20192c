#include "runtime/backends/cpu/thread_pool.hpp"

#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define EDGEVLA_PAUSE() _mm_pause()
#elif defined(__aarch64__)
#define EDGEVLA_PAUSE() asm volatile("yield")
#else
#define EDGEVLA_PAUSE() ((void)0)
#endif

namespace edgevla::backends::cpu {
namespace {
// Spinning before a worker sleeps: long enough to bridge the gap between two kernels of a
// forward pass, short enough not to steal a core from the next stage. Timed by the clock, as a
// pause instruction lasts from ~10 to ~140 cycles depending on the CPU.
constexpr std::int64_t kSpinNs = 50'000;
}  // namespace

ThreadPool::ThreadPool(int threads) {
  if (threads <= 0) threads = static_cast<int>(std::thread::hardware_concurrency());
  size_ = threads < 1 ? 1 : threads;
  for (int i = 1; i < size_; ++i) threads_.emplace_back([this] { worker(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadPool::drain() {
  for (;;) {
    const int t = next_task_.fetch_add(1, std::memory_order_acq_rel);
    if (t >= tasks_) return;
    call_(fn_, t);
    done_tasks_.fetch_add(1, std::memory_order_acq_rel);
  }
}

void ThreadPool::run_erased(int tasks, Trampoline call, void* fn) {
  {
    std::lock_guard lock(mu_);
    tasks_ = tasks;
    call_ = call;
    fn_ = fn;
    next_task_.store(0, std::memory_order_relaxed);
    done_tasks_.store(0, std::memory_order_relaxed);
    parked_.store(false, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  drain();
  while (done_tasks_.load(std::memory_order_acquire) < tasks) EDGEVLA_PAUSE();
  // Workers that woke late must not touch this job's state once run() returns.
  while (active_workers_.load(std::memory_order_acquire) != 0) EDGEVLA_PAUSE();
}

void ThreadPool::worker() {
  std::uint64_t seen = 0;
  for (;;) {
    bool got = false;
    const auto spin_end = std::chrono::steady_clock::now() + std::chrono::nanoseconds(kSpinNs);
    for (int i = 0;; ++i) {
      if (generation_.load(std::memory_order_acquire) != seen) {
        got = true;
        break;
      }
      if (parked_.load(std::memory_order_acquire)) break;
      if ((i & 63) == 63 && std::chrono::steady_clock::now() >= spin_end) break;
      EDGEVLA_PAUSE();
    }
    if (!got) {
      std::unique_lock lock(mu_);
      wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
    }
    std::unique_lock lock(mu_);
    seen = generation_.load(std::memory_order_acquire);
    if (stop_) return;
    active_workers_.fetch_add(1, std::memory_order_acq_rel);
    lock.unlock();
    drain();
    active_workers_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

}  // namespace edgevla::backends::cpu
