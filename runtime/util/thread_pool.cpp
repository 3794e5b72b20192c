#include "runtime/util/thread_pool.hpp"


#include <chrono>

#include "runtime/util/cpu_marks.hpp"
#include "runtime/util/cpu_relax.hpp"
#include "runtime/util/thread_name.hpp"

namespace edgevla {
ThreadPool::ThreadPool(int threads, std::chrono::nanoseconds spin) : spin_(spin) {
  if (threads <= 0) threads = static_cast<int>(std::thread::hardware_concurrency());
  size_ = threads < 1 ? 1 : threads;
  for (int i = 1; i < size_; ++i) {
    threads_.emplace_back([this] {
      name_this_thread("pool");
      worker();
    });
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mu_);
    stop_.store(true, std::memory_order_relaxed);
    // A new, closed generation wakes every worker; none can join it.
    const std::uint64_t gen = generation_of(job_.load(std::memory_order_relaxed)) + 1;
    job_.store((gen << kGenShift) | kClosed, std::memory_order_release);
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadPool::drain() {
  for (;;) {
    const int t = next_task_.fetch_add(1, std::memory_order_relaxed);
    if (t >= tasks_) return;
    call_(fn_, t);
    done_tasks_.fetch_add(1, std::memory_order_release);
  }
}

void ThreadPool::run_erased(int tasks, Trampoline call, void* fn) {
  // The previous job is closed and has no joined workers (run_erased does not return before
  // that), so nothing reads these fields now.
  tasks_ = tasks;
  call_ = call;
  fn_ = fn;
  next_task_.store(0, std::memory_order_relaxed);
  done_tasks_.store(0, std::memory_order_relaxed);
  // The caller's CPU is marked while the job runs, so no worker or spinner settles there.
  const cpu_marks::Mark caller_mark = cpu_marks::Mark::here();
  caller_cpu_.store(caller_mark.cpu(), std::memory_order_relaxed);
  parked_.store(false, std::memory_order_relaxed);
  jobs_.fetch_add(1, std::memory_order_relaxed);
  {
    // Publishing under the mutex: a worker about to sleep either sees the new generation in
    // its wait predicate or is already waiting and gets the notification.
    std::lock_guard lock(mu_);
    const std::uint64_t gen = generation_of(job_.load(std::memory_order_relaxed)) + 1;
    job_.store(gen << kGenShift, std::memory_order_release);  // open, nobody joined
  }
  wake_.notify_all();
  drain();
  while (done_tasks_.load(std::memory_order_acquire) < tasks) cpu_relax();
  // Close the job, then wait for the workers that joined it to leave: after this, no worker
  // can reach fn, whose closure lives on the caller's stack.
  std::uint64_t word = job_.fetch_or(kClosed, std::memory_order_acq_rel) | kClosed;
  while ((word & kJoinedMask) != 0) {
    cpu_relax();
    word = job_.load(std::memory_order_acquire);
  }
}

void ThreadPool::worker() {
  (void)cpu_marks::thread_home();  // the CPUs this worker may move between: those it started with
  cpu_marks::Mark mine;            // the CPU this worker is on while it spins or works
  std::uint64_t seen = 0;  // the last generation this worker looked at
  for (;;) {
    std::uint64_t word = job_.load(std::memory_order_acquire);
    if (generation_of(word) == seen) {
      // Spinning timed by the clock, as a pause instruction lasts from ~10 to ~140 cycles
      // depending on the CPU.
      const auto spin_end = std::chrono::steady_clock::now() + spin_;
      for (int i = 0;; ++i) {
        word = job_.load(std::memory_order_acquire);
        if (generation_of(word) != seen) break;
        if (parked_.load(std::memory_order_acquire) ||
            ((i & 63) == 63 && std::chrono::steady_clock::now() >= spin_end)) {
          mine.release();
          std::unique_lock lock(mu_);
          wake_.wait(lock, [&] { return generation_of(job_.load(std::memory_order_acquire)) != seen; });
          word = job_.load(std::memory_order_acquire);
          break;
        }
        cpu_relax();
      }
    }
    if (stop_.load(std::memory_order_acquire)) return;
    seen = generation_of(word);
    // Off the caller's CPU, or one another busy thread of this process holds, before joining,
    // so that the caller never waits for a worker that is still moving (the header says why).
    if ((word & kClosed) == 0) {
      mine.release();
      mine = cpu_marks::settle(caller_cpu_.load(std::memory_order_relaxed));
      word = job_.load(std::memory_order_acquire);
    }
    // Join the job of generation `seen` if it is still open; a job that closed (or was
    // replaced by a newer one) is left alone, its tasks are done or taken.
    bool joined = false;
    while (generation_of(word) == seen && (word & kClosed) == 0) {
      if (job_.compare_exchange_weak(word, word + 1, std::memory_order_acq_rel, std::memory_order_acquire)) {
        joined = true;
        break;
      }
    }
    if (!joined) continue;
    joins_.fetch_add(1, std::memory_order_relaxed);
    drain();
    job_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

}  // namespace edgevla
