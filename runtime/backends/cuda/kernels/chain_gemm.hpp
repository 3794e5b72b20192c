// edgevla's GEMM for few activation rows that reads its weights before the kernels ahead of it
// have finished: D[m, n] = A[m, k] · W[n, k]ᵀ (+ bias[n]), m ≤ 64, bf16 operands, f32
// accumulation on tensor cores (mma.sync m16n8k16).
//
// At 50 rows (the action expert's tokens) a GEMM is a read of its weights, and cuBLASLt's
// kernels spend 5-8 µs on reads that take 1-3.5 µs at the device's bandwidth: launch, pipeline
// fill and tail, each GEMM alone. Launched in a chain (launch.cuh: DependentLaunchScope), this
// kernel is scheduled while the kernels before it still run; every block copies its whole share
// of the weights into shared memory first, releases the next kernel, and only then waits for
// its activations. What is left after the wait is the activations' read from L2 and the
// multiply. Outside a chain it runs as a plain GEMM (same results).
//
// Each block takes block_n weight rows and one of `parts` equal slices of k and holds both
// operands of its product whole in shared memory (bulk copies, one per row); its eight warps
// split the slice's k steps and add their sums in shared memory in a fixed order
// (deterministic). parts == 1 writes bf16 D [m, ldd] (+ bias); parts > 1 writes each slice's
// sum as f32 at d + p·m·ldd (the layout of k_split_args in gemm.hpp: a norm adds the parts to
// the residual, ResidualParts in kernels.hpp; or geglu_parts). Needs compute capability 9.0 or
// newer (bulk copies, programmatic dependent launch): elsewhere chain_gemm() refuses.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "runtime/backends/cuda/kernels/common.hpp"

namespace edgevla::backends::cuda {

struct ChainGemmArgs {
  std::int64_t m = 0, n = 0, k = 0;
  const void* a = nullptr;  // bf16 [m, lda]
  std::int64_t lda = 0;
  const void* w = nullptr;  // bf16 [n, ldw]
  std::int64_t ldw = 0;
  void* d = nullptr;  // parts == 1: bf16 [m, ldd]; parts > 1: f32 [parts][m][ldd]
  std::int64_t ldd = 0;
  const float* bias = nullptr;  // f32 [n], parts == 1 only, or nullptr
  int parts = 1;                // slices of k: 1, 2, 4 or 8; each a multiple of 128
  int block_n = 32;             // weight rows per block: 32, 64 or 128, dividing n
};

constexpr std::int64_t kChainGemmMaxRows = 64;

// The launch shape chain_gemm_plan picks.
struct ChainGemmShape {
  int block_n = 0;
  int parts = 0;  // 0: no shape fits (see chain_gemm_unsupported)
};

// The shape for (m, n, k) on a device with `sms` multiprocessors: the most blocks that still
// run in one wave, then the fewest parts (at most max_parts; 1 when the consumer wants one bf16
// result). parts 0 when none fits.
ChainGemmShape chain_gemm_plan(std::int64_t m, std::int64_t n, std::int64_t k, int sms, int max_parts);

// Shared memory one block of this shape uses (bytes).
std::size_t chain_gemm_smem_bytes(std::int64_t k, int parts, int block_n);

// Why `args` cannot run on this kernel, or nullptr when it can.
const char* chain_gemm_unsupported(const ChainGemmArgs& args);

// Enqueues the GEMM; capturable (no allocation, no synchronisation). Chained when a
// DependentLaunchScope is alive (launch.cuh).
Status chain_gemm(cudaStream_t stream, const ChainGemmArgs& args);

}  // namespace edgevla::backends::cuda
