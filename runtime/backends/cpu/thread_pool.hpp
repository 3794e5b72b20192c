// A fixed pool of worker threads for the CPU backend's kernels. The calling thread takes part,
// so a pool of N threads starts N-1 workers. Workers spin up to 50 us after a job (kernels come
// in quick succession inside a forward pass) and then sleep; park() at the end of a forward
// pass sends them to sleep at once, so the next stage of the graph gets the cores.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace edgevla::backends::cpu {

class ThreadPool {
 public:
  // threads <= 0: one per online core.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return size_; }

  // Workers stop spinning and sleep until the next run() (call when a forward pass ends).
  void park() { parked_.store(true, std::memory_order_release); }

  // Calls fn(task) for every task in [0, tasks), spread over the pool; returns when all ran.
  // Not reentrant: a task must not call run() on the same pool.
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
  // calls fn(begin, end) on each.
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

 private:
  using Trampoline = void (*)(void*, int);
  template <class F>
  static void invoke(void* f, int task) {
    (*static_cast<F*>(f))(task);
  }
  void run_erased(int tasks, Trampoline call, void* fn);
  void worker();
  void drain();

  int size_ = 1;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::atomic<std::uint64_t> generation_{0};
  std::atomic<int> next_task_{0};
  std::atomic<int> done_tasks_{0};
  std::atomic<int> active_workers_{0};
  int tasks_ = 0;
  Trampoline call_ = nullptr;
  void* fn_ = nullptr;
  bool stop_ = false;
  std::atomic<bool> parked_{false};
};

}  // namespace edgevla::backends::cpu
