// Run 67 probe (2-core VM): a downstream executor spinning for its upstream (runtime/bus/waker.hpp)
// beside 2 ms of upstream work every 33 ms: the work's time, the hand-over and where the spinner ran.
// g++ -O2 -std=c++20 -I. spin_probe.cpp runtime/bus/waker.cpp -lpthread; ./a.out SPIN_US
#include "runtime/bus/waker.hpp"
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>
#include <algorithm>
#include <sched.h>
using C = std::chrono::steady_clock;
volatile double sink;
int main(int argc, char** argv) {
  long spin_us = atol(argv[1]);
  edgevla::Waker w; w.set_upstream_spin_ns(spin_us * 1000);
  std::atomic<bool> stop{false}; std::atomic<int> spinner_cpu{-1}; std::atomic<long> woke{0};
  std::thread exec([&] {
    while (!stop) { auto seen = w.epoch(); w.wait(seen, 0, 0); woke = C::now().time_since_epoch().count(); spinner_cpu = sched_getcpu(); }
  });
  std::vector<double> t, h; int same = 0;
  for (int r = 0; r < 60; ++r) {
    std::this_thread::sleep_for(std::chrono::milliseconds(33));
    w.upstream_begins();
    auto a = C::now();
    double s = 0; for (long i = 0; i < 2000000; ++i) s += i * 1e-9; sink = s;
    t.push_back(std::chrono::duration<double, std::milli>(C::now() - a).count());
    woke = 0;
    long n0 = C::now().time_since_epoch().count();
    w.notify(); w.upstream_ends();
    while (woke == 0) std::this_thread::yield();
    h.push_back((woke - n0) / 1000.0);
    if (sched_getcpu() == spinner_cpu) same++;
  }
  stop = true; w.notify(); exec.join();
  std::sort(t.begin(), t.end()); std::sort(h.begin(), h.end());
  printf("spin %ld us: work %.3f ms median, p90 %.3f; hand-over %.1f us median, p90 %.1f; spinner on the worker's cpu %d/60\n", spin_us, t[30], t[54], h[30], h[54], same);
}
