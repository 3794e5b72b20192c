// The backbones' row norms at their shapes, each timed as 27 calls in one captured graph (a vision
// tower's layer count; the stream x stays in L2, as it does after the GEMM that wrote it): the
// towers' LayerNorm (1152 wide, f32 in, bf16 out; alone and adding four f32 k parts of a residual
// GEMM) at 256-768 rows, and GR00T's LLM RMSNorm (2048 wide). Baseline in the same run: a
// device-to-device copy of half the bytes each call reads and writes (a copy reads and writes
// each). Prints one JSON line a shape; bench/torch_norms.py times PyTorch's LayerNorm the same way.
//
//   edgevla_bench_cuda_norms [--repeat 5]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/cuda_bench_util.hpp"
#include "runtime/backends/cuda/kernels/kernels.hpp"
#include "runtime/core/dtype.hpp"

using namespace edgevla;
using namespace edgevla::backends::cuda;
using namespace edgevla::bench;

int main(int argc, char** argv) {
  int rounds = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--repeat") == 0) rounds = std::max(1, std::atoi(argv[i + 1]));
  }
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  Timer timer(s);
  constexpr int kCalls = 27;
  constexpr float kEps = 1e-6f;
  struct Shape {
    const char* name;
    std::int64_t rows, width;
    bool layer;
    int parts;  // 0: no residual
  };
  const std::vector<Shape> shapes = {
      {"tower_ln", 256, 1152, true, 0},  {"tower_ln", 324, 1152, true, 0},  {"tower_ln", 648, 1152, true, 0},
      {"tower_ln", 768, 1152, true, 0},  {"tower_add_ln", 256, 1152, true, 4}, {"tower_add_ln", 324, 1152, true, 4},
      {"tower_add_ln", 648, 1152, true, 4}, {"llm_rms", 131, 2048, false, 0}, {"llm_add_rms", 131, 2048, false, 4},
      {"llm_rms", 220, 2048, false, 0},  {"llm_add_rms", 220, 2048, false, 4},
  };
  for (const Shape& sh : shapes) {
    const std::int64_t n = sh.rows * sh.width;
    std::vector<float> host(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < host.size(); ++i) host[i] = 0.001f * static_cast<float>(i % 997) - 0.4f;
    float *x = nullptr, *parts = nullptr, *w = nullptr, *b = nullptr;
    void* y = nullptr;
    CHECK_CUDA(cudaMalloc(&x, n * 4));
    CHECK_CUDA(cudaMalloc(&parts, std::max(sh.parts, 1) * n * 4));
    CHECK_CUDA(cudaMalloc(&w, sh.width * 4));
    CHECK_CUDA(cudaMalloc(&b, sh.width * 4));
    CHECK_CUDA(cudaMalloc(&y, n * 2));
    CHECK_CUDA(cudaMemcpy(x, host.data(), n * 4, cudaMemcpyHostToDevice));
    for (int p = 0; p < std::max(sh.parts, 1); ++p) {
      CHECK_CUDA(cudaMemcpy(parts + p * n, host.data(), n * 4, cudaMemcpyHostToDevice));
    }
    CHECK_CUDA(cudaMemcpy(w, host.data(), sh.width * 4, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(b, host.data(), sh.width * 4, cudaMemcpyHostToDevice));
    const ResidualParts rp{std::max(sh.parts, 1), n, nullptr};
    // Bytes a call moves: x read (and written back with a residual), the parts read, y written.
    const double bytes = static_cast<double>(n) * (4.0 + (sh.parts > 0 ? 4.0 + 4.0 * sh.parts : 0.0) + 2.0);
    void* copy_dst = nullptr;
    void* copy_src = nullptr;
    CHECK_CUDA(cudaMalloc(&copy_dst, static_cast<std::size_t>(bytes / 2)));
    CHECK_CUDA(cudaMalloc(&copy_src, static_cast<std::size_t>(bytes / 2)));
    const double copy_us = timer.per_call_us(kCalls, rounds, [&](int) {
      CHECK_CUDA(cudaMemcpyAsync(copy_dst, copy_src, static_cast<std::size_t>(bytes / 2), cudaMemcpyDeviceToDevice, s));
    });
    const double us = timer.per_call_us(kCalls, rounds, [&](int) {
      if (sh.layer) {
        CHECK_OK(sh.parts > 0 ? add_layer_norm(s, x, parts, sh.rows, sh.width, w, b, kEps, y, DType::kBF16, rp)
                              : layer_norm(s, x, sh.rows, sh.width, w, b, kEps, y, DType::kBF16));
      } else {
        CHECK_OK(rms_norm(s, x, sh.parts > 0 ? parts : nullptr, DType::kF32, sh.rows, sh.width, w, kEps, y,
                          DType::kBF16, rp));
      }
    });
    std::printf("{\"bench\": \"norm\", \"device\": \"%s\", \"shape\": \"%s\", \"rows\": %lld, \"width\": %lld, "
                "\"residual_parts\": %d, \"bytes\": %.0f, \"us\": %.2f, \"gbps\": %.0f, \"copy_same_bytes_us\": %.2f}\n",
                prop.name, sh.name, static_cast<long long>(sh.rows), static_cast<long long>(sh.width), sh.parts, bytes,
                us, bytes / (us * 1e3), copy_us);
    for (void* p : {static_cast<void*>(x), static_cast<void*>(parts), static_cast<void*>(w), static_cast<void*>(b), y,
                    copy_dst, copy_src}) {
      CHECK_CUDA(cudaFree(p));
    }
  }
  return 0;
}
