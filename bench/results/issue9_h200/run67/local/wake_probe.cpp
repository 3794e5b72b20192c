// Run 67 probe (2-core VM): a condition variable's wake-up after PERIOD ms: latency and whether the
// woken thread ran on its waker's CPU; PIN 1 pins waker and wakee to CPUs 0 and 1.
// g++ -O2 -std=c++20 wake_probe.cpp -lpthread; ./a.out PERIOD_MS PIN SPIN_CALLER
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>
#include <algorithm>
#include <sched.h>
#include <pthread.h>
using C = std::chrono::steady_clock;
int main(int argc, char** argv) {
  double period = atof(argv[1]); int pin = atoi(argv[2]); int spin_caller = atoi(argv[3]);
  std::mutex mu; std::condition_variable cv; int gen = 0; std::atomic<long> woke_ns{0}; std::atomic<int> cpu{-1};
  std::atomic<bool> stop{false};
  std::thread w([&] {
    if (pin) { cpu_set_t s; CPU_ZERO(&s); CPU_SET(1, &s); pthread_setaffinity_np(pthread_self(), sizeof s, &s); }
    int seen = 0;
    while (!stop) {
      std::unique_lock l(mu); cv.wait(l, [&] { return gen != seen || stop; }); seen = gen; l.unlock();
      woke_ns = C::now().time_since_epoch().count(); cpu = sched_getcpu();
    }
  });
  if (pin) { cpu_set_t s; CPU_ZERO(&s); CPU_SET(0, &s); pthread_setaffinity_np(pthread_self(), sizeof s, &s); }
  std::vector<double> lat; int same = 0;
  for (int r = 0; r < 50; ++r) {
    std::this_thread::sleep_for(std::chrono::microseconds((long)(period * 1000)));
    woke_ns = 0;
    long t0 = C::now().time_since_epoch().count();
    { std::lock_guard l(mu); ++gen; } cv.notify_all();
    if (spin_caller) { while (woke_ns == 0 && C::now().time_since_epoch().count() - t0 < 20000000) {} }
    else { while (woke_ns == 0) std::this_thread::yield(); }
    lat.push_back((woke_ns - t0) / 1000.0); if (cpu == sched_getcpu()) same++;
  }
  stop = true; { std::lock_guard l(mu); ++gen; } cv.notify_all(); w.join();
  std::sort(lat.begin(), lat.end());
  printf("period %.0f pin %d spin %d: wake latency median %.1f us p90 %.1f max %.1f; same cpu %d/50\n", period, pin, spin_caller, lat[25], lat[45], lat[49], same);
}
