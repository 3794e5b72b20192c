// The warpgroup GEMM (wgmma_gemm.hpp) on int8 weights: D[m, n] = (A[m, k] · Qᵀ) · scale[n], A bf16,
// Q int8 [n, k] with one f32 scale per output feature (per row of the weight), f32 accumulation.
// Half the weight bytes of the bf16 kernel, for the action heads whose projections are bound by
// their weight reads and the latency of each block's copies (bench/results/issue9_h200).
//
// Numerics: the weights are quantised once (wgmma_w8_quantize): scale = max|w_row| / 127,
// q = round(w / scale), the error at most half a step of the row's largest weight. In the kernel
// each int8 becomes a bf16 exactly (|q| ≤ 127 fits bf16's significand), the products and their f32
// sums are those of the bf16 kernel on the weights q, and the scale multiplies the sum once in the
// epilogue (so this kernel's D is A · (q · scale)ᵀ up to the f32 sum's order).
//
// Pipeline of a block (64 output features × up to 56 rows × a range of k): a producer thread
// bulk-copies each stage's 4 KB int8 tile (stored in the order of the multiplies' register
// fragments, wgmma_w8_quantize) and A's 56 × 64 box; two consumer warpgroups take alternate stages,
// each thread widening its 32 weights of the stage into registers and multiplying them (as the
// register operand of wgmma) with A's box, and the second warpgroup's sums join the first's for the
// epilogue. Compute capability 9.0 (sm_90a) only, as the bf16 kernel. Opt-in in both heads
// (EDGEVLA_CUDA_WGMMA_W8=1) until it is faster than the bf16 kernel (edgevla_bench_cuda_w8).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "runtime/backends/cuda/kernels/common.hpp"

namespace edgevla::backends::cuda {

// Bytes of the tiled int8 weight [n, k] (n, k multiples of 64).
std::size_t wgmma_w8_tiled_bytes(std::int64_t n, std::int64_t k);

enum class WgmmaW8Epilogue {
  kBf16,      // bf16 D [m, n], the scale then an optional f32 bias
  kF32Parts,  // f32 k parts, each scaled (the norm after them adds them)
  kGeglu,     // W = [gate (n/2); up (n/2)]: bf16 D [m, n/2] = gelu_tanh(gate) · up, as wgmma_gemm's kGeglu
  kGelu,      // bf16 D [m, n] = gelu_tanh(scaled sum + bias), rounded once, as wgmma_gemm's kGelu
};

// Quantises the row-major bf16 weight w [n, k] (row stride ld elements) into `tiled` (int8, tiled
// for `epilogue`'s layout, wgmma_w8_tiled_bytes, 16-byte aligned) and `scales` (f32 [n], one a row
// of w), on `stream`. A row of zeros gets scale 1 and zeros. kGeglu: n a multiple of 128.
Status wgmma_w8_quantize(cudaStream_t stream, const void* w, std::int64_t n, std::int64_t k, std::int64_t ld, void* tiled,
                         float* scales, WgmmaW8Epilogue epilogue = WgmmaW8Epilogue::kBf16);

struct WgmmaW8Args {
  const void* a = nullptr;  // bf16 [m, k], row stride lda (a multiple of 8), 16-byte aligned; m 1 to 56
  std::int64_t m = 0, k = 0, lda = 0;
  const void* w_tiled = nullptr;  // wgmma_w8_quantize's tiled int8 [n, k]
  const float* scales = nullptr;  // its f32 [n]
  std::int64_t n = 0;
  WgmmaW8Epilogue epilogue = WgmmaW8Epilogue::kBf16;
  void* d = nullptr;              // kBf16: bf16 [m, n]; kGeglu: bf16 [m, n/2]; kF32Parts: f32 parts; row stride ldd
  std::int64_t ldd = 0;
  const float* bias = nullptr;    // kBf16, kGelu: f32 [n] added after the scale, or null
  int k_parts = 1;                // kF32Parts: 1 to k / 64 near-equal parts, each scaled
  std::int64_t part_stride = 0;   // floats between parts (at least (m - 1) · ldd + n)
};

// Enqueues the product on `stream`; no allocation, no synchronisation (capturable). Chained to
// the kernel before it inside a DependentLaunchScope, as the bf16 kernel.
Status wgmma_w8_gemm(cudaStream_t stream, const WgmmaW8Args& args);

}  // namespace edgevla::backends::cuda
