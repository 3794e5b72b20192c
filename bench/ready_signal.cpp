// How soon a reader sees a device block as written once the producer's device work ends (a GPU
// machine; see bench/results/issue10): the producer's stream is held by a kernel that spins on a
// host flag, then writes the block; the host sets the flag at t0 and the reader's wait returns at t1.
//   sync:        the producer's own cudaStreamSynchronize (what a producer that finishes its stream
//                before it publishes waits for), the baseline;
//   event:       cudaEventSynchronize on an event recorded after the write (the fence);
//   signal:      a reader of the block as another process maps it (shm::Mapper: a BlockReadyFence)
//                waiting for the producer process's signal (fence_output: the signalling thread).
// p50 / p90 µs of t1 - t0 over --reps runs of each, interleaved. One JSON line per path.
//   edgevla_bench_ready_signal [--reps 300]
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_common.hpp"
#include "bench/cuda_check.hpp"
#include "runtime/backends/backend.hpp"
#include "runtime/backends/cuda/fence.hpp"
#include "runtime/core/tensor.hpp"
#include "runtime/shm/mapper.hpp"
#include "runtime/shm/pool.hpp"
#include "runtime/shm/ready.hpp"

cudaError_t edgevla_bench_launch_wait_for_flag(const int* flag, cudaStream_t stream);

using namespace edgevla;

namespace {

double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void report(const char* path, std::vector<double> v, const char* baseline, double baseline_p50) {
  std::sort(v.begin(), v.end());
  const double p50 = v[v.size() / 2], p90 = v[std::min(v.size() - 1, v.size() * 9 / 10)];
  std::printf("{\"bench\": \"ready_signal\", \"path\": \"%s\", \"p50_us\": %.2f, \"p90_us\": %.2f, \"baseline\": \"%s\", "
              "\"ratio_p50\": %.3f, \"machine\": \"%s\"}\n",
              path, p50, p90, baseline, baseline_p50 > 0 ? p50 / baseline_p50 : 1.0, bench::machine_description().c_str());
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 300;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--reps") == 0) reps = std::atoi(argv[++i]);
  }
  if (!backends::make_backend("cuda")) {
    std::fprintf(stderr, "the cuda backend did not load\n");
    return 1;
  }
  CHECK_CUDA(cudaSetDevice(0));
  unsigned flags = 0;
  CHECK_CUDA(cudaGetDeviceFlags(&flags));
  std::fprintf(stderr, "device flags 0x%x (schedule: %s)\n", flags,
               (flags & cudaDeviceScheduleMask) == cudaDeviceScheduleBlockingSync ? "blocking sync"
               : (flags & cudaDeviceScheduleMask) == cudaDeviceScheduleSpin       ? "spin"
               : (flags & cudaDeviceScheduleMask) == cudaDeviceScheduleYield      ? "yield"
                                                                                  : "auto");
  shm::raise_ready_spin_ns(1'000'000'000);  // the reader spins, as a node with upstream spinning does
  int* flag = nullptr;
  CHECK_CUDA(cudaHostAlloc(reinterpret_cast<void**>(&flag), sizeof(int), cudaHostAllocMapped));
  int* flag_dev = nullptr;
  CHECK_CUDA(cudaHostGetDevicePointer(reinterpret_cast<void**>(&flag_dev), flag, 0));
  cudaStream_t s = nullptr;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  auto pool = shm::Pool::create({shm::segment_prefix() + std::to_string(::getpid()) + ".readybench", std::size_t{1} << 28});
  shm::Mapper mapper;
  constexpr std::size_t kBytes = 1 << 20;

  // Holds the stream, then writes `dst`; returns once the kernel is surely spinning.
  auto hold_then_write = [&](void* dst) {
    *reinterpret_cast<volatile int*>(flag) = 0;
    CHECK_CUDA(edgevla_bench_launch_wait_for_flag(flag_dev, s));
    CHECK_CUDA(cudaMemsetAsync(dst, 0x3c, kBytes, s));
    std::this_thread::sleep_for(std::chrono::microseconds(300));
  };
  auto release = [&] {
    const double t0 = now_us();
    reinterpret_cast<std::atomic<int>*>(flag)->store(1, std::memory_order_seq_cst);
    return t0;
  };
  std::vector<double> sync, event, signal;
  for (int r = 0; r < reps + 10; ++r) {
    auto b = pool->allocate_on(Device::cuda(0), kBytes);
    if (!b) {
      std::fprintf(stderr, "%s\n", b.status().to_string().c_str());
      return 1;
    }
    Tensor t = *Tensor::from_buffer(*b, DType::kU8, Shape{static_cast<std::int64_t>(kBytes)});
    // sync
    hold_then_write(t.raw_data());
    double t0 = release();
    CHECK_CUDA(cudaStreamSynchronize(s));
    const double d_sync = now_us() - t0;
    // event
    hold_then_write(t.raw_data());
    cudaEvent_t e = nullptr;
    CHECK_CUDA(cudaEventCreate(&e));
    CHECK_CUDA(cudaEventRecord(e, s));
    t0 = release();
    CHECK_CUDA(cudaEventSynchronize(e));
    const double d_event = now_us() - t0;
    CHECK_CUDA(cudaEventDestroy(e));
    // signal: armed, sent, read by a reader that maps the block as another process would
    hold_then_write(t.raw_data());
    if (!backends::cuda::fence_output(t, s, 0).is_ok()) return 1;
    pool->mark_sent(**b, {1, 0}, "bench");
    auto got = mapper.acquire(*(*b)->shm());
    if (!got || (*got)->ready() == nullptr) {
      std::fprintf(stderr, "the reader got no fence\n");
      return 1;
    }
    t0 = release();
    if (!(*got)->wait_ready().is_ok()) return 1;
    const double d_signal = now_us() - t0;
    CHECK_CUDA(cudaStreamSynchronize(s));
    if (r >= 10) {
      sync.push_back(d_sync);
      event.push_back(d_event);
      signal.push_back(d_signal);
    }
  }
  std::vector<double> s_sorted = sync;
  std::sort(s_sorted.begin(), s_sorted.end());
  const double base = s_sorted[s_sorted.size() / 2];
  report("sync", sync, "sync", base);
  report("event", event, "sync", base);
  report("signal", signal, "sync", base);
  cudaFreeHost(flag);
  return 0;
}
