// Run 67 probe (2-core VM): ten pool jobs a frame, frames PERIOD ms apart; per job its time and how
// many of its parts ran on another CPU than the caller's.
// g++ -O2 -std=c++20 -I. pool_probe.cpp runtime/util/thread_pool.cpp -lpthread; ./a.out THREADS PERIOD_MS JOBS WORK
#include "runtime/util/thread_pool.hpp"
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>
#include <algorithm>
#include <atomic>
#include <sched.h>
using C = std::chrono::steady_clock;
volatile double sink;
int main(int argc, char** argv) {
  int threads = atoi(argv[1]); double period = atof(argv[2]); int jobs = atoi(argv[3]); long work = atol(argv[4]);
  edgevla::ThreadPool pool(threads);
  std::vector<std::vector<double>> per(jobs);
  std::vector<std::vector<double>> joined(jobs);
  auto next = C::now();
  for (int r = 0; r < 60; ++r) {
    if (period > 0) { std::this_thread::sleep_until(next); next += std::chrono::microseconds((long)(period*1000)); }
    for (int j = 0; j < jobs; ++j) {
      auto a = C::now();
      std::atomic<int> other{0};
      int me = sched_getcpu();
      pool.parallel_for(8, 1, [&](long b, long e) { if (sched_getcpu() != me) other++; double s = 0; for (long i = b * work; i < e * work; ++i) s += i * 1e-9; sink = s; });
      if (r >= 3) { per[j].push_back(std::chrono::duration<double, std::micro>(C::now() - a).count()); joined[j].push_back(other.load()); }
    }
  }
  for (int j = 0; j < jobs; ++j) { std::sort(per[j].begin(), per[j].end()); double jn=0; for (double x: joined[j]) jn+=x; printf("job %d: %.1f us, other-cpu parts avg %.2f\n", j, per[j][per[j].size()/2], jn/joined[j].size()); }
}
