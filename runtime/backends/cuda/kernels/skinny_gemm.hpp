// edgevla's own GEMM for few activation rows (m ≤ 64: the action expert's 50 action tokens, a
// state token, a time embedding): D[m, n] = alpha · A[m, k] · W[n, k]ᵀ (+ bias[n]) + beta · D,
// bf16 operands, f32 accumulation on tensor cores (mma.sync m16n8k16), D in f32 or bf16.
//
// At such m a GEMM is a stream over the weights, and what decides its speed is keeping enough
// weight bytes in flight on every multiprocessor. Each block takes 64 weight rows and one
// k_chunk-long slice of k; its four warps load their 16 rows straight from global memory into
// registers (no shared-memory round trip for the weights), with the activation slice in shared
// memory read once per block. A weight row's 16 values per lane feed the MMA in a permuted
// k order, and the activations are read in the same order, so the sum is the same.
// With k split over blocks, each block writes its partial sums to the workspace and the last
// block of a row range (an arrival counter) adds them in split order: deterministic, no atomics
// on the data, no second launch.
//
// Blas offers it as a candidate beside cuBLASLt's algorithms and keeps whichever is faster on
// the device for each shape (gemm.hpp).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "runtime/backends/cuda/kernels/common.hpp"

namespace edgevla::backends::cuda {

struct SkinnyGemmArgs {
  std::int64_t m = 0, n = 0, k = 0;
  const void* a = nullptr;  // bf16 [m, lda]
  std::int64_t lda = 0;
  const void* w = nullptr;  // bf16 [n, ldw]
  std::int64_t ldw = 0;
  void* d = nullptr;  // f32 or bf16 [m, ldd]
  DType d_type = DType::kF32;
  std::int64_t ldd = 0;
  float alpha = 1.0f, beta = 0.0f;
  const float* bias = nullptr;  // f32 [n] or nullptr
  int k_chunk = 256;            // k per block: 256, 512 or 1024, dividing k
  float* partials = nullptr;    // f32 [k / k_chunk, m, n] when k_chunk < k
  std::int32_t* counters = nullptr;  // zeroed, one per 64 weight rows, when k_chunk < k; left zeroed
};

constexpr std::int64_t kSkinnyMaxRows = 64;
constexpr std::int64_t kSkinnyBlockRows = 64;

// Why `args` cannot run on this kernel (dtypes aside), or empty when it can.
const char* skinny_gemm_unsupported(const SkinnyGemmArgs& args);
// Workspace bytes for the partial sums (0 when k_chunk == k).
std::size_t skinny_gemm_partial_bytes(const SkinnyGemmArgs& args);
// Enqueues the GEMM; capturable (no allocation, no synchronisation).
Status skinny_gemm(cudaStream_t stream, const SkinnyGemmArgs& args);

}  // namespace edgevla::backends::cuda
