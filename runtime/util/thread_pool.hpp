// A fixed pool of worker threads: the CPU backend's kernels, and the families' frame pipelines in
// the preprocess stage. The calling thread takes part, so a pool of N threads starts N-1
// workers. Workers spin up to 50 us after a job (kernels come in quick succession inside a
// forward pass) and then sleep; park() at the end of a forward pass sends them to sleep at
// once, so the next stage of the graph gets the cores.
//
// Where a woken worker runs: a scheduler that sees no cache shared between CPUs (virtual machines
// often show their CPUs so) wakes a thread on its waker's CPU, so the pool would time-share the
// caller's one CPU (on the 2-core VM, a worker woken after a camera frame's 33 ms ran almost no
// task beside its caller). A worker woken on its job's caller's CPU, or on a CPU another busy
// thread of this process marked (another worker, an executor spinning for upstream work), moves
// to an unmarked CPU before it joins and leaves the one it left out of its affinity until it
// moves again (cpu_marks.hpp). The caller's CPU is marked while a job runs, and a worker's while
// it spins or works.
//
// Jobs and the threads that help with them. A job is published by bumping a generation
// counter. A worker takes part in a job only by *joining* it: one compare-and-swap on a word
// that holds the job's generation, a "closed" bit and the number of joined workers. run()
// returns only after it has closed the job (no worker can join it any more) and every joined
// worker has left it, so no worker ever touches a job's closure or counters after run()
// returned, and a late worker can never take a task of the next job with a count from the last.
//
// Results never depend on scheduling: the tasks are fixed by the caller (parallel_for splits
// [0, n) by n, grain and size() only), each task writes its own outputs, and which thread runs
// a task does not change what it computes.
#pragma once


#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace edgevla {

class ThreadPool {
 public:
  // threads <= 0: one per online core. spin: how long a worker spins after a job before it
  // sleeps (the default bridges the gap between two kernels of a forward pass).
  explicit ThreadPool(int threads, std::chrono::nanoseconds spin = std::chrono::microseconds(50));
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return size_; }

  // Workers stop spinning and sleep until the next run() (call when a forward pass ends).
  void park() { parked_.store(true, std::memory_order_release); }

  // Calls fn(task) for every task in [0, tasks), spread over the pool; returns when all ran
  // and no worker holds a reference to fn. Not reentrant: a task must not call run() on the
  // same pool, and one pool serves one calling thread at a time.
  template <class F>
  void run(int tasks, F&& fn) {
    if (tasks <= 0) return;
    if (tasks == 1 || size_ == 1) {
      for (int t = 0; t < tasks; ++t) fn(t);
      return;
    }
    run_erased(tasks, &invoke<std::remove_reference_t<F>>, &fn);
  }

  // Splits [0, n) into at most size() contiguous ranges of at least `grain` items each and
  // calls fn(begin, end) on each. The ranges depend on n, grain and size() only.
  template <class F>
  void parallel_for(std::int64_t n, std::int64_t grain, F&& fn) {
    if (n <= 0) return;
    const std::int64_t g = grain < 1 ? 1 : grain;
    std::int64_t parts = (n + g - 1) / g;
    if (parts > size_) parts = size_;
    const std::int64_t chunk = (n + parts - 1) / parts;
    run(static_cast<int>(parts), [&](int t) {
      const std::int64_t b = t * chunk;
      const std::int64_t e = b + chunk < n ? b + chunk : n;
      if (b < e) fn(b, e);
    });
  }

  // Jobs run so far and how many of them a worker helped with (tests and benchmarks).
  std::uint64_t jobs() const { return jobs_.load(std::memory_order_relaxed); }
  std::uint64_t joined_jobs() const { return joins_.load(std::memory_order_relaxed); }

 private:
  using Trampoline = void (*)(void*, int);
  template <class F>
  static void invoke(void* f, int task) {
    (*static_cast<F*>(f))(task);
  }
  void run_erased(int tasks, Trampoline call, void* fn);
  void worker();
  void drain();

  // The job word: generation << kGenShift | closed << 31 | joined workers (low 31 bits).
  static constexpr int kGenShift = 32;
  static constexpr std::uint64_t kClosed = std::uint64_t{1} << 31;
  static constexpr std::uint64_t kJoinedMask = kClosed - 1;
  static std::uint64_t generation_of(std::uint64_t word) { return word >> kGenShift; }

  int size_ = 1;
  std::chrono::nanoseconds spin_;
  std::vector<std::thread> threads_;
  std::mutex mu_;                 // sleeping workers wait on wake_ under it
  std::condition_variable wake_;
  std::atomic<std::uint64_t> job_{kClosed};  // generation 0, closed: no job yet
  std::atomic<bool> stop_{false};  // set before the last generation is published
  std::atomic<bool> parked_{false};
  // The running job; written by run_erased before it publishes a generation, read by the
  // workers that joined it.
  int tasks_ = 0;
  Trampoline call_ = nullptr;
  void* fn_ = nullptr;
  std::atomic<int> caller_cpu_{-1};  // the CPU run_erased's caller was on when it published
  std::atomic<int> next_task_{0};
  std::atomic<int> done_tasks_{0};
  std::atomic<std::uint64_t> jobs_{0};
  std::atomic<std::uint64_t> joins_{0};
};

// Parks `pool` when the scope ends: an engine's run() holds one, so the workers sleep as soon
// as the pass ends (the next stage needs the cores), whichever way run() returns.
class ParkOnExit {
 public:
  explicit ParkOnExit(ThreadPool& pool) : pool_(pool) {}
  ~ParkOnExit() { pool_.park(); }
  ParkOnExit(const ParkOnExit&) = delete;
  ParkOnExit& operator=(const ParkOnExit&) = delete;

 private:
  ThreadPool& pool_;
};

}  // namespace edgevla
