// The warpgroup GEMM's A made by attention in its prologue (WgmmaGemmArgs::attn, contract in
// wgmma_gemm.hpp): a k part of an output projection covers whole heads, so its block computes those
// heads' attention itself, over a few rows that attend to each other (GR00T's DiT self-attention:
// 17 rows), and writes the rows straight into the A tiles its multiplies read, instead of a separate
// attention launch writing them to global memory for the projection to copy back.
//
// Per block: q, k and v of the part's heads (rows × 3 × width bf16) are loaded into shared memory
// by the consumer warpgroup after the chain's wait; each (head, row) pair is one thread's: the row's
// scores against every key in f32 (max first, then the exponentials, as a softmax over a short row
// is cheapest done twice), the weighted sum of v, divided by the sum and rounded to bf16 once (the
// attention kernel rounds the probabilities to bf16 before p · v; here they stay f32, so the two
// differ within bf16's rounding). The rows go into A's 56 × 64 tiles in the 128-byte swizzled layout
// the bulk tensor copy would have written (16-byte chunk c of row r at c ^ (r % 8)), rows past m
// zeroed, then a proxy fence makes the stores visible to the multiplies.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>
#include <string>

#include "runtime/backends/cuda/kernels/wgmma_gemm.hpp"
#include "runtime/backends/cuda/kernels/wgmma_tiles.cuh"

namespace edgevla::backends::cuda {

// Why a WgmmaAttnA call of m rows and k in k_parts does not fit the prologue (empty: it does).
std::string wgmma_attn_a_problem(std::int64_t m, std::int64_t k, int k_parts, WgmmaEpilogue epilogue,
                                 const WgmmaAttnA& attn);

}  // namespace edgevla::backends::cuda

namespace edgevla::backends::cuda::wgmma {

// Head dims the prologue takes (a multiple of 8, at most this).
constexpr int kAttnMaxHeadDim = 64;
// Shared memory for the staged q, k and v: rows × 3 × width × 2 bytes at most.
constexpr int kAttnStageBytes = 48 * 1024;

struct AttnParams {
  const bf16* qkv;  // null: A comes by bulk copies
  long long ldq;    // row stride of qkv (elements)
  int q_col, k_col, v_col;  // where q, k and v of head 0 start in a row
  int head_dim;
  float scale_log2;  // 1/sqrt(head_dim) · log2(e)
};

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
// Features [c0, c0 + width) of the attention output for rows [0, m) (which are also the keys) into
// the A tiles at s_a (tile t at s_a + t · tile_stride elements, width / 64 of them); s_stage holds
// kAttnStageBytes. tid: 0..127, the consumer warpgroup's threads; the caller has waited for the
// kernel that wrote qkv.
__device__ __forceinline__ void attention_into_a(const AttnParams& at, int m, int c0, int width, bf16* s_a,
                                                 int tile_stride, bf16* s_stage, int tid) {
  const int chunks = width / 8;  // 16-byte chunks of one of q, k, v in a row
  for (int i = tid; i < m * 3 * chunks; i += 128) {
    const int r = i / (3 * chunks), rest = i % (3 * chunks), which = rest / chunks, c = rest % chunks;
    const int col = (which == 0 ? at.q_col : (which == 1 ? at.k_col : at.v_col)) + c0 + c * 8;
    const uint4 v = *reinterpret_cast<const uint4*>(at.qkv + static_cast<long long>(r) * at.ldq + col);
    *reinterpret_cast<uint4*>(s_stage + (r * 3 + which) * width + c * 8) = v;
  }
  // Rows m..55 of every tile are zero, as the bulk copy fills them.
  const int tiles = width / kBk;
  for (int i = tid; i < tiles * (kBn - m) * 8; i += 128) {
    const int t = i / ((kBn - m) * 8), rest = i % ((kBn - m) * 8);
    const int r = m + rest / 8, c = rest % 8;
    *reinterpret_cast<uint4*>(s_a + t * tile_stride + r * kBk + c * 8) = make_uint4(0, 0, 0, 0);
  }
  consumers_sync();
  const int hd = at.head_dim, heads = width / hd;
  for (int pair = tid; pair < heads * m; pair += 128) {
    const int h = pair / m, r = pair % m;
    const __nv_bfloat162* q = reinterpret_cast<const __nv_bfloat162*>(s_stage + (r * 3) * width + h * hd);
    auto score = [&](int j) {
      const __nv_bfloat162* k = reinterpret_cast<const __nv_bfloat162*>(s_stage + (j * 3 + 1) * width + h * hd);
      float s0 = 0.0f, s1 = 0.0f;
#pragma unroll
      for (int d = 0; d < kAttnMaxHeadDim / 2; ++d) {
        if (2 * d < hd) {
          const float2 a = __bfloat1622float2(q[d]), b = __bfloat1622float2(k[d]);
          s0 = fmaf(a.x, b.x, s0);
          s1 = fmaf(a.y, b.y, s1);
        }
      }
      return (s0 + s1) * at.scale_log2;
    };
    float top = -INFINITY;
    for (int j = 0; j < m; ++j) top = fmaxf(top, score(j));
    float o[kAttnMaxHeadDim];
#pragma unroll
    for (int d = 0; d < kAttnMaxHeadDim; ++d) o[d] = 0.0f;
    float sum = 0.0f;
    for (int j = 0; j < m; ++j) {
      const float p = exp2f(score(j) - top);
      sum += p;
      const __nv_bfloat162* v = reinterpret_cast<const __nv_bfloat162*>(s_stage + (j * 3 + 2) * width + h * hd);
#pragma unroll
      for (int d = 0; d < kAttnMaxHeadDim / 2; ++d) {
        if (2 * d < hd) {
          const float2 b = __bfloat1622float2(v[d]);
          o[2 * d] = fmaf(p, b.x, o[2 * d]);
          o[2 * d + 1] = fmaf(p, b.y, o[2 * d + 1]);
        }
      }
    }
    const float inv = 1.0f / sum;
#pragma unroll
    for (int d = 0; d < kAttnMaxHeadDim; d += 2) {
      if (d < hd) {
        const int f = h * hd + d;  // the feature within the part
        const int t = f / kBk, cc = f % kBk;
        auto* dst = reinterpret_cast<unsigned char*>(s_a + t * tile_stride) + r * 128 + (((cc / 8) ^ (r % 8)) * 16) +
                    (cc % 8) * 2;
        *reinterpret_cast<__nv_bfloat162*>(dst) = __floats2bfloat162_rn(o[d] * inv, o[d + 1] * inv);
      }
    }
  }
  // The multiplies read shared memory through the async proxy.
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  consumers_sync();
}
#endif

}  // namespace edgevla::backends::cuda::wgmma
