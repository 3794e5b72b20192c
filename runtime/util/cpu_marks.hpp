// Which CPUs this process's busy threads are on, so that a thread that must leave a CPU goes to
// one where none of them runs.
//
// Why: a scheduler that sees no cache shared between CPUs (virtual machines often show their
// CPUs so) wakes a thread on its waker's CPU and does not look for an idle one. Two kinds of
// edgevla threads are woken by the thread they then run beside: a thread pool's workers (woken
// by the job's caller) and an executor spinning for its upstream node's message (woken when the
// upstream callback begins). Both leave their waker's CPU. Left to the kernel, a thread whose
// affinity drops a CPU goes to whichever allowed CPU comes next in its mask, idle or not.
//
// Measured on the 2-core VM (bench/results/issue9_h200/run68/local/), each alternated three times
// against the code before: 2 ms of upstream work every 33 ms beside an executor spinning for it
// took 1.67-1.70 ms median, p90 1.71-1.80 (before: 2.09-2.12, p90 6.13-6.14, the spinner on the
// worker's CPU 21-22 times of 60, now never), the hand-over still 0.4-0.5 us.
//
// So a thread that computes or spins marks the CPU it is on (`Mark`), and `move_off` takes the
// caller to an allowed CPU that no mark holds (the least marked if all are), pinned there for the
// move, then allowed its starting CPUs less the one it left again. Marks only see this process's
// threads; other processes' threads are the scheduler's business.
#pragma once

#include <sched.h>

#include <cstdint>
#include <functional>

namespace edgevla::cpu_marks {

// CPUs numbered at or above this are neither marked nor chosen (a move to one still works).
inline constexpr int kTracked = 256;

// The CPUs the calling thread was allowed the first time it asked (per thread): the set a
// thread's moves choose from, so that repeated moves do not shrink it.
const cpu_set_t& thread_home();

// Marks held on `cpu` now (0 for an untracked or negative cpu).
int marks_on(int cpu);

// One mark on the CPU the caller runs on when made; released when destroyed or moved from.
class Mark {
 public:
  Mark() = default;
  explicit Mark(int cpu);
  ~Mark() { release(); }
  Mark(const Mark&) = delete;
  Mark& operator=(const Mark&) = delete;
  Mark(Mark&& o) noexcept : cpu_(o.cpu_) { o.cpu_ = -1; }
  Mark& operator=(Mark&& o) noexcept;
  static Mark here();  // on sched_getcpu()
  void release();
  int cpu() const { return cpu_; }

 private:
  int cpu_ = -1;
};

// The CPU a thread leaving `avoid` goes to: among `allowed` less `avoid`, the first with no mark
// in the order start, start + 1, ... (wrapping), else the least marked; -1 when `allowed` holds no
// other CPU. `marks(cpu)` gives a CPU's marks (a parameter, so tests can give any picture).
int pick(const cpu_set_t& allowed, int avoid, unsigned start, const std::function<int(int)>& marks);

// Moves the calling thread off `avoid` to pick(thread_home(), avoid, ...) over this process's
// marks and leaves it allowed thread_home() less `avoid`. Returns the CPU it was moved to, or -1
// when it stayed (no other CPU, or the kernel refused).
int move_off(int avoid);

// For a thread about to spin or compute: moves it off its CPU when that CPU is `avoid` (its
// waker's) or holds a mark, then marks the CPU it is on. Release the caller's own earlier mark
// first, or it counts against its CPU.
Mark settle(int avoid = -1);

}  // namespace edgevla::cpu_marks
