// edgevla's own GEMM for few activation rows (m ≤ 64: the action expert's 50 action tokens, a
// state token, a time embedding): D[m, n] = alpha · A[m, k] · W[n, k]ᵀ (+ bias[n]) + beta · D,
// bf16 operands, f32 accumulation on tensor cores (mma.sync m16n8k16), D in f32 or bf16.
//
// At such m a GEMM is a stream over the weights, and what decides its speed is keeping enough
// weight bytes in flight on every multiprocessor with few instructions. Each block takes 64
// weight rows and one k_chunk-long share of k; a producer warp streams its weights and the
// activations into shared memory with bulk copies (six 128-wide stages in flight, mbarriers),
// eight warps multiply from there with ldmatrix + mma.sync. With k split, the blocks of a row
// range form a thread-block cluster and add their sums through distributed shared memory in a
// fixed order: deterministic, no workspace, one launch. Needs compute capability 9.0 or newer
// (Hopper, Thor); elsewhere it reports itself unsupported and Blas keeps cuBLASLt.
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
  int k_chunk = 256;            // k per block: a multiple of 128 (the last share may be shorter),
                                // at most 8 shares
};

constexpr std::int64_t kSkinnyMaxRows = 64;
constexpr std::int64_t kSkinnyBlockRows = 64;
// The k shares Blas times for each shape (those that leave at most 8 shares).
constexpr int kSkinnyChunks[] = {128, 256, 384, 512, 768, 1024, 2048, 4096};
// Whether k_chunk gives a split of k that no smaller listed chunk gives (chunks ≥ k all mean
// "no split"; only the first of them counts).
inline bool skinny_chunk_distinct(std::int64_t k, int k_chunk) {
  if (k_chunk < k) return true;
  for (const int c : kSkinnyChunks) {
    if (c >= k) return c == k_chunk;
  }
  return false;
}

// Why `args` cannot run on this kernel (dtypes aside), or empty when it can.
const char* skinny_gemm_unsupported(const SkinnyGemmArgs& args);
// Enqueues the GEMM; capturable (no allocation, no synchronisation).
Status skinny_gemm(cudaStream_t stream, const SkinnyGemmArgs& args);

}  // namespace edgevla::backends::cuda
