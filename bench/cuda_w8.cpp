// The warpgroup GEMM on int8 weights (wgmma_w8.hpp) against the same GEMM on bf16 weights
// (wgmma_gemm.hpp) in the same run, at the action heads' projection shapes: pi0.5's q|k|v, o,
// gate|up and down (50 rows) and GR00T's cross q, ff1 and ff2 (51 rows), each in the output form
// its engine uses (bf16 whole, gate|up with its GeGLU, or f32 k parts). Both run back to back over copies of their
// weights that together exceed twice the L2 cache, captured in a graph (cold weights, launch gaps
// hidden). Also the read-only floor's counterpart: the bytes each reads, and the int8 output's
// rel-L2 against the bf16 weights' output (a check that the timed kernel computes the product:
// ~4e-3 from the weights' rounding, run 42). One JSON line a shape.
//
//   edgevla_bench_cuda_w8 [--rounds 5]
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <vector>
#include <string>

#include "bench/cuda_bench_util.hpp"
#include "runtime/backends/cuda/kernels/wgmma_gemm.hpp"
#include "runtime/backends/cuda/kernels/wgmma_w8.hpp"

using namespace edgevla;
using namespace edgevla::backends::cuda;
using namespace edgevla::bench;

int main(int argc, char** argv) {
  int rounds = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--rounds") == 0) rounds = std::max(1, std::atoi(argv[i + 1]));
  }
  if (!wgmma_gemm_available()) {
    std::fprintf(stderr, "edgevla_bench_cuda_w8: needs a GPU of compute capability 9.0 and a build with sm_90a code\n");
    return 77;
  }
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  Timer timer(s);
  struct Shape {
    const char* name;
    std::int64_t m, n, k;
    int parts;  // 1: bf16 output; more: f32 k parts
    bool geglu;  // the GeGLU form (pi0.5's gate|up as its engine runs it)
  };
  const Shape shapes[] = {
      {"qkv", 50, 2560, 1024, 1, false},       {"o", 50, 1024, 2048, 4, false},
      {"gate_up", 50, 8192, 1024, 1, true},    {"down", 50, 1024, 4096, 4, false},
      {"groot_q", 51, 1536, 1536, 1, false},   {"groot_ff1", 51, 6144, 1536, 1, false},
      {"groot_ff2", 51, 1536, 6144, 8, false},
  };
  for (const Shape& sh : shapes) {
    const std::size_t bf16_bytes = wgmma_tiled_bytes(sh.n, sh.k), w8_bytes = wgmma_w8_tiled_bytes(sh.n, sh.k);
    const int copies = static_cast<int>(std::max<std::size_t>(4, timer.twice_l2 / w8_bytes + 1));
    void* a = device_random_bf16(static_cast<std::size_t>(sh.m * sh.k), 1);
    void* w = device_random_bf16(static_cast<std::size_t>(sh.n * sh.k), 2);
    auto* tiled = static_cast<std::byte*>(nullptr);
    auto* quant = static_cast<std::byte*>(nullptr);
    float* scales = nullptr;
    void* d = nullptr;
    CHECK_CUDA(cudaMalloc(&tiled, copies * bf16_bytes));
    CHECK_CUDA(cudaMalloc(&quant, copies * w8_bytes));
    CHECK_CUDA(cudaMalloc(&scales, copies * static_cast<std::size_t>(sh.n) * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&d, static_cast<std::size_t>(sh.parts * sh.m * sh.n) * 4));
    const WgmmaEpilogue epi = sh.parts > 1 ? WgmmaEpilogue::kF32Parts : sh.geglu ? WgmmaEpilogue::kGeglu : WgmmaEpilogue::kNone;
    const WgmmaW8Epilogue epi8 = sh.parts > 1 ? WgmmaW8Epilogue::kF32Parts
                                 : sh.geglu   ? WgmmaW8Epilogue::kGeglu
                                              : WgmmaW8Epilogue::kBf16;
    for (int c = 0; c < copies; ++c) {
      CHECK_OK(wgmma_tile_weight(s, w, sh.n, sh.k, sh.k, epi, tiled + c * bf16_bytes));
      CHECK_OK(wgmma_w8_quantize(s, w, sh.n, sh.k, sh.k, quant + c * w8_bytes, scales + c * sh.n, epi8));
    }
    CHECK_CUDA(cudaStreamSynchronize(s));
    WgmmaGemmArgs g;
    const std::int64_t out_n = sh.geglu ? sh.n / 2 : sh.n;
    g.a = a, g.m = sh.m, g.k = sh.k, g.lda = sh.k, g.n = sh.n, g.epilogue = epi, g.d = d, g.ldd = out_n;
    g.k_parts = sh.parts, g.part_stride = sh.m * sh.n;
    WgmmaW8Args q;
    q.a = a, q.m = sh.m, q.k = sh.k, q.lda = sh.k, q.n = sh.n, q.d = d, q.ldd = out_n;
    q.epilogue = epi8;
    q.k_parts = sh.parts, q.part_stride = sh.m * sh.n;
    // Both outputs once, to the host: bf16 values, or the f32 k parts summed.
    auto output = [&](auto launch) {
      const std::int64_t count = sh.parts > 1 ? sh.parts * sh.m * sh.n : sh.m * out_n;
      std::vector<unsigned char> raw(static_cast<std::size_t>(count) * (sh.parts > 1 ? 4 : 2));
      launch();
      CHECK_CUDA(cudaMemcpyAsync(raw.data(), d, raw.size(), cudaMemcpyDeviceToHost, s));
      CHECK_CUDA(cudaStreamSynchronize(s));
      std::vector<double> v(static_cast<std::size_t>(sh.parts > 1 ? sh.m * sh.n : count), 0.0);
      for (std::int64_t i = 0; i < count; ++i) {
        float x;
        if (sh.parts > 1) {
          std::memcpy(&x, raw.data() + 4 * i, 4);
        } else {
          std::uint32_t bits = static_cast<std::uint32_t>(raw[2 * i] | (raw[2 * i + 1] << 8)) << 16;
          std::memcpy(&x, &bits, 4);
        }
        v[static_cast<std::size_t>(i % static_cast<std::int64_t>(v.size()))] += x;
      }
      return v;
    };
    const std::vector<double> ref = output([&] {
      WgmmaGemmArgs gc = g;
      gc.w_tiled = tiled;
      CHECK_OK(wgmma_gemm(s, gc));
    });
    const std::vector<double> got = output([&] {
      WgmmaW8Args qc = q;
      qc.w_tiled = quant;
      qc.scales = scales;
      CHECK_OK(wgmma_w8_gemm(s, qc));
    });
    double num = 0.0, den = 0.0;
    for (std::size_t i = 0; i < ref.size(); ++i) num += (got[i] - ref[i]) * (got[i] - ref[i]), den += ref[i] * ref[i];
    const double rel_l2 = std::sqrt(num / std::max(den, 1e-30));
    // Alternated: bf16, int8, bf16, int8.
    double us[4];
    for (int i = 0; i < 4; ++i) {
      if (i % 2 == 0) {
        us[i] = timer.per_call_us(copies, rounds, [&](int c) {
          WgmmaGemmArgs gc = g;
          gc.w_tiled = tiled + c * bf16_bytes;
          CHECK_OK(wgmma_gemm(s, gc));
        });
      } else {
        us[i] = timer.per_call_us(copies, rounds, [&](int c) {
          WgmmaW8Args qc = q;
          qc.w_tiled = quant + c * w8_bytes;
          qc.scales = scales + c * sh.n;
          CHECK_OK(wgmma_w8_gemm(s, qc));
        });
      }
    }
    const double bf16_us = std::min(us[0], us[2]), w8_us = std::min(us[1], us[3]);
    std::printf("{\"bench\": \"w8\", \"device\": \"%s\", \"shape\": \"%s\", \"m\": %lld, \"n\": %lld, \"k\": %lld, "
                "\"parts\": %d, \"copies\": %d, \"bf16_bytes\": %zu, \"w8_bytes\": %zu, \"bf16_us\": [%.2f, %.2f], "
                "\"w8_us\": [%.2f, %.2f], \"w8_over_bf16\": %.3f, \"rel_l2_vs_bf16\": %.2e}\n",
                prop.name, sh.name, static_cast<long long>(sh.m), static_cast<long long>(sh.n),
                static_cast<long long>(sh.k), sh.parts, copies, bf16_bytes, w8_bytes, us[0], us[2], us[1], us[3],
                w8_us / bf16_us, rel_l2);
    std::fflush(stdout);
    CHECK_CUDA(cudaFree(a));
    CHECK_CUDA(cudaFree(w));
    CHECK_CUDA(cudaFree(tiled));
    CHECK_CUDA(cudaFree(quant));
    CHECK_CUDA(cudaFree(scales));
    CHECK_CUDA(cudaFree(d));
  }
  return 0;
}
