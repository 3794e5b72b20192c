// What the cuda benches share: fatal checks of CUDA and Status results, seeded bf16 data on the
// device, downloads as floats and their rel-L2, and a timer of captured back-to-back calls over
// weight copies that exceed the L2 cache.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <vector>

#include "runtime/core/dtype.hpp"
#include "runtime/core/status.hpp"

// bench/read_floor_kernel.cu (linked by the benches that time a read-only floor): a kernel of
// `blocks` blocks that only reads `bytes` at p (a multiple of 16, 16-byte aligned) into `sink`.
cudaError_t edgevla_bench_launch_read(const void* p, std::size_t bytes, int blocks, unsigned* sink,
                                      cudaStream_t stream);

namespace edgevla::bench {

#define CHECK_CUDA(call)                                                                 \
  do {                                                                                   \
    const cudaError_t e_ = (call);                                                       \
    if (e_ != cudaSuccess) {                                                             \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                      \
    }                                                                                    \
  } while (0)
#define CHECK_OK(expr)                                                  \
  do {                                                                  \
    const Status s_ = (expr);                                           \
    if (!s_.is_ok()) {                                                  \
      std::fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, s_.to_string().c_str()); \
      std::exit(1);                                                     \
    }                                                                   \
  } while (0)

inline void* device_random_bf16(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<std::uint16_t> h(n);
  for (auto& x : h) x = float_to_bfloat16(u(rng));
  void* d = nullptr;
  CHECK_CUDA(cudaMalloc(&d, n * 2));
  CHECK_CUDA(cudaMemcpy(d, h.data(), n * 2, cudaMemcpyHostToDevice));
  return d;
}

// n values of type t (f32 or bf16) from the device, as floats.
inline std::vector<float> download(const void* d, DType t, std::size_t n) {
  std::vector<unsigned char> b(n * dtype_size(t));
  CHECK_CUDA(cudaMemcpy(b.data(), d, b.size(), cudaMemcpyDeviceToHost));
  std::vector<float> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (t == DType::kF32) {
      std::memcpy(&out[i], b.data() + 4 * i, 4);
    } else {
      std::uint16_t x;
      std::memcpy(&x, b.data() + 2 * i, 2);
      out[i] = bfloat16_to_float(x);
    }
  }
  return out;
}

// ||got - ref|| / ||ref||.
inline double rel_l2(const std::vector<float>& got, const std::vector<float>& ref) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    num += (static_cast<double>(got[i]) - ref[i]) * (static_cast<double>(got[i]) - ref[i]);
    den += static_cast<double>(ref[i]) * ref[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Timer {
  cudaStream_t s;
  std::size_t twice_l2 = 0;  // bytes
  cudaEvent_t a{}, b{};
  explicit Timer(cudaStream_t stream) : s(stream) {
    int dev = 0, l2 = 0;
    CHECK_CUDA(cudaGetDevice(&dev));
    CHECK_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
    twice_l2 = 2 * static_cast<std::size_t>(l2);
    CHECK_CUDA(cudaEventCreate(&a));
    CHECK_CUDA(cudaEventCreate(&b));
  }
  // µs per call of fn(c), c = 0..copies-1, captured into one graph and run back to back (as
  // GEMMs follow one another in a forward pass; with c picking one of `copies` weight copies
  // that together exceed the L2 cache, every call reads its weights from device memory). Best
  // of `rounds` after a warm-up.
  double per_call_us(int copies, int rounds, const std::function<void(int)>& fn) {
    fn(0);  // plans outside the capture
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    for (int c = 0; c < copies; ++c) fn(c);
    CHECK_CUDA(cudaStreamEndCapture(s, &graph));
    CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    double best = 1e30;
    for (int r = 0; r <= rounds; ++r) {
      CHECK_CUDA(cudaEventRecord(a, s));
      CHECK_CUDA(cudaGraphLaunch(exec, s));
      CHECK_CUDA(cudaEventRecord(b, s));
      CHECK_CUDA(cudaEventSynchronize(b));
      float ms = 0;
      CHECK_CUDA(cudaEventElapsedTime(&ms, a, b));
      if (r > 0) best = std::min(best, 1000.0 * ms / copies);
    }
    CHECK_CUDA(cudaGraphExecDestroy(exec));
    CHECK_CUDA(cudaGraphDestroy(graph));
    return best;
  }
  // Median µs of `fn` over `reps` runs, one after another (warm caches).
  double us(int reps, const std::function<void()>& fn) {
    fn();
    std::vector<double> t;
    for (int r = 0; r < reps; ++r) {
      CHECK_CUDA(cudaEventRecord(a, s));
      fn();
      CHECK_CUDA(cudaEventRecord(b, s));
      CHECK_CUDA(cudaEventSynchronize(b));
      float ms = 0;
      CHECK_CUDA(cudaEventElapsedTime(&ms, a, b));
      t.push_back(1000.0 * ms);
    }
    return median(t);
  }
};

// Copies of a weight's w_bytes at w, back to back from `base` (the caller frees it), `count` of
// them, together over twice the L2 cache: calls that take copy c in turn read their weights from
// device memory, as a forward pass does.
struct WeightCopies {
  std::byte* base = nullptr;
  int count = 0;
};
inline WeightCopies copy_weights(const Timer& timer, const void* w, std::size_t w_bytes) {
  WeightCopies c;
  c.count = static_cast<int>(std::clamp<std::size_t>(2 * timer.twice_l2 / w_bytes + 1, 2, 64));
  CHECK_CUDA(cudaMalloc(&c.base, c.count * w_bytes));
  for (int i = 0; i < c.count; ++i) {
    CHECK_CUDA(cudaMemcpy(c.base + i * w_bytes, w, w_bytes, cudaMemcpyDeviceToDevice));
  }
  return c;
}

// µs a read of one copy's w_bytes takes when nothing but the read runs: the read-only kernel
// back to back over the copies (as per_call_us times a GEMM over them), best of 1, 2 and 4 blocks
// a multiprocessor. The floor a weight-bound kernel of that weight could reach.
inline double read_only_us(Timer& timer, const WeightCopies& copies, std::size_t w_bytes, int rounds,
                           unsigned* sink) {
  int dev = 0, sms = 0;
  CHECK_CUDA(cudaGetDevice(&dev));
  CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  double best = 1e30;
  for (const int per_sm : {1, 2, 4}) {
    best = std::min(best, timer.per_call_us(copies.count, rounds, [&](int c) {
      CHECK_CUDA(edgevla_bench_launch_read(copies.base + c * w_bytes, w_bytes, per_sm * sms, sink, timer.s));
    }));
  }
  return best;
}

}  // namespace edgevla::bench
