// The warpgroup GEMM's kNorm epilogue (wgmma_gemm.hpp): the residual add and the row norm after
// it, run by the consumer warpgroup of each feature block's leader once its k slices are summed.
//
// Each leader owns 64 features of every row. It adds its sums (and the bias) into the residual
// stream x (gated or not) and writes them back, reduces its rows' sums of squares over its 64
// features, posts them to global memory and counts itself in; once every feature block has
// (a counter in global memory, polled with acquire loads), it adds the blocks' partial sums of
// each row in block order, and writes its 64 features of the normalised rows. The counters are
// reset by the last block past the poll, so each call starts from zero. Every block of the call
// must be resident at once (wgmma_gemm checks it), or the poll would wait for a block that cannot
// start.
#pragma once

#include <cuda_bf16.h>

#include "runtime/backends/cuda/kernels/wgmma_tiles.cuh"

namespace edgevla::backends::cuda::wgmma {

// WgmmaNormKind's values (wgmma_gemm.cu checks that they agree).
constexpr int kNormRms = 0, kNormGatedAda = 1;

struct NormParams {
  int kind;  // kNormRms or kNormGatedAda
  float* x;
  long long ldx;
  const float* gate;
  const float* weight;
  const float* shift;
  float eps;
  unsigned* sync;   // [0]: blocks whose partial sums are posted; [1]: blocks past the poll
  float* partials;  // [feature blocks][kBn]
  unsigned* arrived;  // k parts: [feature blocks], the parts of each written so far
  float* parts;       // k parts: [part][kBn][n]
};

// The scratch: the two counters, padded to 128 bytes, the partial sums, the k parts' counters
// (padded to 16 bytes) and the k parts themselves (at most kNormMaxParts).
constexpr int kNormSyncBytes = 128;
constexpr int kNormMaxParts = 4;
inline long long norm_partials_bytes(long long n) { return (n / kBm) * kBn * static_cast<long long>(sizeof(float)); }
inline long long norm_arrived_bytes(long long n) { return ((n / kBm) * 4 + 15) / 16 * 16; }
inline long long norm_scratch_bytes(long long n) {
  return kNormSyncBytes + norm_partials_bytes(n) + norm_arrived_bytes(n) +
         kNormMaxParts * kBn * n * static_cast<long long>(sizeof(float));
}

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
__device__ __forceinline__ void consumers_sync() { asm volatile("bar.sync 1, 128;\n" ::: "memory"); }

// The k parts form (no cluster): every block of feature block nt writes its part, and the last of
// them to arrive adds all parts in part order (its own from its registers) into acc, as the norm
// kernels add k parts. Returns false in the blocks that are not last (they are done).
__device__ __forceinline__ bool gather_parts(const NormParams& q, float (&acc)[28], int m, int n, int nt, int part,
                                             int parts, int warp, int lane, unsigned* s_flag) {
  const int tid = warp * 32 + lane;
  const int fa = nt * kBm + warp * 16 + lane / 4;
  const long long stride = static_cast<long long>(kBn) * n;
#pragma unroll
  for (int j = 0; j < kBn / 8; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int row = 8 * j + 2 * (lane % 4) + (e & 1);
      if (row < m) q.parts[part * stride + static_cast<long long>(row) * n + fa + (e >= 2 ? 8 : 0)] = acc[4 * j + e];
    }
  }
  consumers_sync();
  if (tid == 0) {
    __threadfence();
    const unsigned before = atomicAdd(q.arrived + nt, 1u);
    const bool last = before == static_cast<unsigned>(parts - 1);
    if (last) {
      __threadfence();
      q.arrived[nt] = 0u;  // no other block of this call counts here any more
    }
    *s_flag = last ? 1u : 0u;
  }
  consumers_sync();
  if (*s_flag == 0u) return false;
  float other[kNormMaxParts][28];
#pragma unroll
  for (int r = 0; r < kNormMaxParts; ++r) {
    if (r >= parts || r == part) continue;
#pragma unroll
    for (int j = 0; j < kBn / 8; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int row = 8 * j + 2 * (lane % 4) + (e & 1);
        other[r][4 * j + e] =
            row < m ? __ldcg(q.parts + r * stride + static_cast<long long>(row) * n + fa + (e >= 2 ? 8 : 0)) : 0.0f;
      }
    }
  }
  float sum[28];
#pragma unroll
  for (int i = 0; i < 28; ++i) sum[i] = part == 0 ? acc[i] : other[0][i];
#pragma unroll
  for (int r = 1; r < kNormMaxParts; ++r) {
    if (r >= parts) continue;
#pragma unroll
    for (int i = 0; i < 28; ++i) sum[i] += r == part ? acc[i] : other[r][i];
  }
#pragma unroll
  for (int i = 0; i < 28; ++i) acc[i] = sum[i];
  return true;
}

// acc: the block's sums for features nt·64 + (this thread's rows of the m64 tile) and rows 0..55
// (the m64n56 accumulator's columns; wgmma_gemm.cu's layout). s_red: 5 · kBn floats of shared
// memory no multiply reads any more. bias: f32 [n] or null. d: bf16 [m, ldd].
__device__ __forceinline__ void norm_epilogue(const NormParams& q, const float (&acc)[28], const float* bias, bf16* d,
                                              long long ldd, int m, int n, int nt, int warp, int lane, float* s_red) {
  const int tid = warp * 32 + lane;
  const int fa = nt * kBm + warp * 16 + lane / 4;  // and fa + 8
  const bool gated = q.kind == kNormGatedAda && q.gate != nullptr;
  float ba = 0.0f, bb = 0.0f, ga = 0.0f, gb = 0.0f;
  if (bias != nullptr) ba = bias[fa], bb = bias[fa + 8];
  if (gated) ga = q.gate[fa], gb = q.gate[fa + 8];
  // x += r (· gate), as the norm kernels do it: the slices' sum, then the bias, then the add.
  float v[28];
#pragma unroll
  for (int j = 0; j < kBn / 8; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int row = 8 * j + 2 * (lane % 4) + (e & 1);
      const int col = fa + (e >= 2 ? 8 : 0);
      float r = acc[4 * j + e];
      if (bias != nullptr) r += e >= 2 ? bb : ba;
      float val = 0.0f;
      if (row < m) {
        float* xp = q.x + static_cast<long long>(row) * q.ldx + col;
        val = gated ? fmaf(r, e >= 2 ? gb : ga, *xp) : *xp + r;
        *xp = val;
      }
      v[4 * j + e] = val;
    }
  }
  // Each row's sum of squares over the block's 64 features: a thread's two features, then the 8
  // threads of a warp that share its rows, then the 4 warps through shared memory.
#pragma unroll
  for (int j = 0; j < kBn / 8; ++j) {
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      float s = v[4 * j + e] * v[4 * j + e] + v[4 * j + e + 2] * v[4 * j + e + 2];
      s += __shfl_xor_sync(0xffffffffu, s, 4);
      s += __shfl_xor_sync(0xffffffffu, s, 8);
      s += __shfl_xor_sync(0xffffffffu, s, 16);
      if (lane < 4) s_red[warp * kBn + 8 * j + 2 * lane + e] = s;
    }
  }
  consumers_sync();
  const int tiles = n / kBm;
  if (tid < kBn) {
    q.partials[static_cast<long long>(nt) * kBn + tid] =
        s_red[tid] + s_red[kBn + tid] + s_red[2 * kBn + tid] + s_red[3 * kBn + tid];
  }
  consumers_sync();
  if (tid == 0) {
    __threadfence();
    atomicAdd(q.sync, 1u);
    while (ptx::ld_acquire(q.sync) < static_cast<unsigned>(tiles)) {
    }
    __threadfence();
  }
  consumers_sync();
  // The last block past the poll resets the counters (while the others go on).
  if (tid == 0 && atomicAdd(q.sync + 1, 1u) == static_cast<unsigned>(tiles - 1)) {
    atomicExch(q.sync, 0u);
    atomicExch(q.sync + 1, 0u);
  }
  float* s_inv = s_red + 4 * kBn;
  if (tid < kBn) {
    float total = 0.0f;
    for (int t = 0; t < tiles; ++t) total += __ldcg(q.partials + static_cast<long long>(t) * kBn + tid);
    s_inv[tid] = rsqrtf(total * (1.0f / static_cast<float>(n)) + q.eps);
  }
  consumers_sync();
  const float wa = q.weight[fa], wb = q.weight[fa + 8];
  float sa = 0.0f, sb = 0.0f;
  if (q.kind == kNormGatedAda) sa = q.shift[fa], sb = q.shift[fa + 8];
#pragma unroll
  for (int j = 0; j < kBn / 8; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int row = 8 * j + 2 * (lane % 4) + (e & 1);
      if (row >= m) continue;
      const float a = e >= 2 ? wb : wa;
      const float inv = s_inv[row];
      const float o = q.kind == kNormGatedAda ? v[4 * j + e] * inv * (1.0f + a) + (e >= 2 ? sb : sa) : v[4 * j + e] * inv * (1.0f + a);
      d[static_cast<long long>(row) * ldd + fa + (e >= 2 ? 8 : 0)] = __float2bfloat16_rn(o);
    }
  }
}
#endif

}  // namespace edgevla::backends::cuda::wgmma
