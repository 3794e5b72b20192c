// A many-rows GEMM on Hopper's warpgroup multiplies, for the vision towers' projections (hundreds
// of patch rows: GR00T's 324 a view, pi0.5's 256): D[m, n] = A[m, k] · Wᵀ, A and W bf16 and
// row-major as the engines hold them (no re-layout), f32 accumulation.
//
// The rows are the multiply's N side, which takes any multiple of 8 up to 256: a block holds R
// rows (R from a fixed set, the one that fills the device best: 648 = 3 × 216, 324 ≈ 3 × 112) ×
// 128 output features, two consumer warpgroups of 64 features sharing each stage's box of A, one
// producer thread bringing both operands by bulk tensor copies (TMA, 128-byte swizzle) through a
// ring of 4-8 stages. The narrow projections (o, fc2: 1152 outputs) may split k into f32 parts
// that the next LayerNorm adds (ResidualParts), as cuBLASLt's parts are. Blocks may form clusters
// that share the boxes (one copy multicast into each of their shared memories), reading L2 a half
// to a sixth as often.
//
// Where it stands (bench/results/issue9_h200 run 56): correct, and 0.73-0.87x cuBLASLt's speed at
// GR00T's 648 rows as the engines run cuBLASLt (q|k|v 12.8 against 11.1 µs, fc1 17.5 against
// 13.4), where cuBLASLt reaches 470-500 TFLOP/s; every clustered form slower still (fc1 23.2 µs in
// clusters of two), so wide_gemm_plan takes none. The GEMM plans (gemm.hpp's Blas) offer it as a
// candidate from 128 rows on with EDGEVLA_CUDA_WIDE_GEMM=1, and picked it for no shape of either
// backbone. What it lacks against cuBLASLt: persistent blocks whose epilogue overlaps the next
// tile's main loop, and consumers that alternate tiles.
//
// Only compute capability 9.0 runs it, from code built for sm_90a (wide_gemm_available()).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "runtime/backends/cuda/kernels/common.hpp"

namespace edgevla::backends::cuda {

enum class WideEpilogue {
  kBias,      // D bf16 = A·Wᵀ + bias (bias optional), rounded once
  kGelu,      // D bf16 = gelu_tanh(A·Wᵀ + bias), rounded once
  kResidual,  // D f32 += A·Wᵀ + bias: the residual stream updated in place
  kF32Parts,  // part p of k_parts: f32 at d + p · part_stride, no bias (the consumer adds it)
};

struct WideGemmArgs {
  const void* a = nullptr;  // bf16 [m, k], row stride lda (a multiple of 8), 16-byte aligned
  std::int64_t m = 0, k = 0, lda = 0;
  const void* w = nullptr;  // bf16 [n, k], row stride ldw (a multiple of 8), 16-byte aligned
  std::int64_t n = 0, ldw = 0;
  WideEpilogue epilogue = WideEpilogue::kBias;
  void* d = nullptr;  // bf16 or f32 [m, n] (see the epilogue), row stride ldd (a multiple of 4), 16-byte aligned
  std::int64_t ldd = 0;
  const float* bias = nullptr;  // f32 [n] or null (not with kF32Parts)
  int k_parts = 1;              // kF32Parts: 1 to 4, at most k / 64
  std::int64_t part_stride = 0;  // floats between parts (at least (m - 1) · ldd + n)
  int rows = 0;                  // rows a block (one of kWideRowSizes); 0: wide_gemm_plan's
  // A thread-block cluster of cluster_x feature blocks, which share each stage's box of A (one
  // copy written into all of their shared memories), × cluster_z row blocks, which share W's; at
  // most 8 blocks, each dividing the grid's count (n / 128 and the row blocks). 1 × 1: none.
  int cluster_x = 1, cluster_z = 1;
};

// The rows a block may take (the multiply's N): wide_gemm_row_sizes()[0 .. count).
inline constexpr int kWideRowSizes[] = {112, 136, 168, 192, 216, 256};

// Whether the build holds sm_90a code for it and the current device is of compute capability 9.0.
bool wide_gemm_available();

// Whether a product of m rows, n outputs and depth k fits: n a multiple of 128, k of 64.
bool wide_gemm_fits(std::int64_t m, std::int64_t n, std::int64_t k);

struct WidePlan {
  int rows = 0;   // a block's rows (one of kWideRowSizes)
  int parts = 1;  // k parts (1 unless max_parts > 1)
  int cluster_x = 1, cluster_z = 1;
};
// The launch shape with the least estimated time on `multiprocessors`: whole waves of blocks of
// R rows × 128 features × (k / parts), plus the bytes the parts add to the norm after them; no
// cluster.
WidePlan wide_gemm_plan(std::int64_t m, std::int64_t n, std::int64_t k, int max_parts, int multiprocessors);
// Sets plan's cluster for its rows: the one of at most max_blocks blocks that reads the fewest
// bytes from L2 (for the bench and tests: the plan takes none).
void wide_gemm_cluster(WidePlan& plan, std::int64_t m, std::int64_t n, int max_blocks);

// Enqueues the product on `stream`; no allocation, no synchronisation (capturable).
Status wide_gemm(cudaStream_t stream, const WideGemmArgs& args);

}  // namespace edgevla::backends::cuda
