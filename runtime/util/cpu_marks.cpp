#include "runtime/util/cpu_marks.hpp"

#include <atomic>

namespace edgevla::cpu_marks {
namespace {

// One cache line a CPU: marks are taken and dropped at every wake-up and sleep of the threads
// on neighbouring CPUs.
struct alignas(64) Slot {
  std::atomic<int> n{0};
};
Slot g_slots[kTracked];
std::atomic<unsigned> g_next_start{0};

bool tracked(int cpu) { return cpu >= 0 && cpu < kTracked; }

}  // namespace

const cpu_set_t& thread_home() {
  thread_local const cpu_set_t home = [] {
    cpu_set_t s;
    CPU_ZERO(&s);
    if (sched_getaffinity(0, sizeof s, &s) != 0) CPU_ZERO(&s);
    return s;
  }();
  return home;
}

int marks_on(int cpu) { return tracked(cpu) ? g_slots[cpu].n.load(std::memory_order_relaxed) : 0; }

Mark::Mark(int cpu) : cpu_(tracked(cpu) ? cpu : -1) {
  if (cpu_ >= 0) g_slots[cpu_].n.fetch_add(1, std::memory_order_relaxed);
}

Mark& Mark::operator=(Mark&& o) noexcept {
  if (this != &o) {
    release();
    cpu_ = o.cpu_;
    o.cpu_ = -1;
  }
  return *this;
}

Mark Mark::here() { return Mark(sched_getcpu()); }

void Mark::release() {
  if (cpu_ >= 0) g_slots[cpu_].n.fetch_sub(1, std::memory_order_relaxed);
  cpu_ = -1;
}

int pick(const cpu_set_t& allowed, int avoid, unsigned start, const std::function<int(int)>& marks) {
  int best = -1, best_marks = 0;
  for (int i = 0; i < CPU_SETSIZE; ++i) {
    const int cpu = static_cast<int>((start + static_cast<unsigned>(i)) % CPU_SETSIZE);
    if (cpu == avoid || !CPU_ISSET(cpu, &allowed)) continue;
    const int m = marks(cpu);
    if (m <= 0) return cpu;
    if (best < 0 || m < best_marks) best = cpu, best_marks = m;
  }
  return best;
}

int move_off(int avoid) {
  const cpu_set_t& home = thread_home();
  if (CPU_COUNT(&home) < 2) return -1;
  // Starting points spread over the CPUs, so that threads leaving at the same moment try
  // different ones first.
  const unsigned start = g_next_start.fetch_add(1, std::memory_order_relaxed) * 5u + 1u +
                         static_cast<unsigned>(avoid < 0 ? 0 : avoid);
  const int to = pick(home, avoid, start % kTracked, marks_on);
  if (to < 0) return -1;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(to, &one);
  const bool pinned = sched_setaffinity(0, sizeof one, &one) == 0;
  // Free again to go anywhere but `avoid` (the thread stays where it is until the scheduler
  // next places it).
  cpu_set_t rest = home;
  if (avoid >= 0 && avoid < CPU_SETSIZE) CPU_CLR(avoid, &rest);
  sched_setaffinity(0, sizeof rest, &rest);
  return pinned ? to : -1;
}

Mark settle(int avoid) {
  const int cpu = sched_getcpu();
  if (cpu >= 0 && (cpu == avoid || marks_on(cpu) > 0)) move_off(cpu);
  return Mark::here();
}

}  // namespace edgevla::cpu_marks
