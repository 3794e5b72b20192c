// The fused expert step (expert_fused.hpp): one persistent kernel, phases separated by grid
// barriers. Data written inside the kernel is read with L2-only loads (ld.global.cg), since a
// multiprocessor's L1 is not coherent with the writes of the others; weights and the prefix
// cache, which no phase writes, go through the read-only path.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

#include "runtime/backends/cuda/kernels/elementwise_common.cuh"
#include "runtime/backends/cuda/kernels/expert_fused.hpp"
#include "runtime/backends/cuda/kernels/expert_fused_device.cuh"

namespace edgevla::backends::cuda {

namespace {

using bf16 = __nv_bfloat16;
using namespace fused_device;

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kMaxRows = 64;      // four m16 tiles
constexpr int kChunkKeys = 64;    // keys per attention task
constexpr int kMaxHeadDim = 256;  // the attention's output tile lives in registers
constexpr int kMaxNormItems = 16;  // width ≤ 16 · 256

// ---- GEMM: out[kidx][r][c] = Σ_{k in share kidx} A[r][k] · W[c][k] ------------------------
//
// Each thread loads 8 consecutive k of a row with one 16-byte load, for A and W alike; the two
// MMAs of a 32-wide k block take words (0,1) and (2,3) of those loads. That permutes k the same
// way in A and W, so the products are unchanged. A task is one column group × one k share;
// its warps split the group's columns (nb / 4 ways) and the share's 32-wide k blocks.

struct GemmPhase {
  const bf16* a;
  int lda;
  const bf16* w;
  int n, k;
  FusedGemmSplit split;
  float* out;  // [ks][rows][n]
};

__device__ __forceinline__ int gemm_tasks(const GemmPhase& g) {
  const int groups = g.n / 8;
  return (groups + g.split.nb - 1) / g.split.nb * g.split.ks;
}

// Ask L2 for the weights of this block's first task of `g`.
__device__ void prefetch_weights(const GemmPhase& g) {
  const int task = static_cast<int>(blockIdx.x);
  if (task >= gemm_tasks(g)) return;
  const int cg = task / g.split.ks, kidx = task % g.split.ks;
  const int k0 = kidx * g.split.kc, k1 = min(g.k, k0 + g.split.kc);
  const int cols = g.split.nb * 8;
  const int lines_per_row = ((k1 - k0) * 2 + 127) / 128;
  for (int i = static_cast<int>(threadIdx.x); i < cols * lines_per_row; i += kThreads) {
    const int c = cg * cols + i / lines_per_row;
    if (c >= g.n) continue;
    const bf16* p = g.w + static_cast<std::int64_t>(c) * g.k + k0 + (i % lines_per_row) * 64;
    asm volatile("prefetch.global.L2 [%0];\n" ::"l"(p));
  }
}

// Shared memory of a GEMM task: the task's activations [rows][kc] (row stride kc·2 + 64 bytes,
// conflict-free 16-byte reads), then a ring of kStages weight stages per warp (32 columns × 32 k).
constexpr int kStages = 4;
constexpr int kMaxShareK = 1024;
constexpr int kStageBytes = 32 * 64;
constexpr std::size_t kGemmSmem =
    static_cast<std::size_t>(kMaxRows) * (kMaxShareK * 2 + 64) + static_cast<std::size_t>(kWarps) * kStages * kStageBytes;

// A task: the block copies the activations of its k share into shared memory once; each warp
// streams its 32 weight columns through its own ring with cp.async (kStages 2 KB stages in
// flight), and multiplies from shared memory. Then the k-splitting warps are summed in warp
// order and the block writes its share's partial sums.
__device__ void gemm_phase(const GemmPhase& g, int rows, unsigned char* smem) {
  const int warp = static_cast<int>(threadIdx.x) >> 5, lane = static_cast<int>(threadIdx.x) & 31;
  const int gq = lane >> 2, t = lane & 3;
  const int wn = g.split.nb / 4, wk = kWarps / wn;
  const int my_n = warp % wn, my_k = warp / wn;
  const int cols = g.split.nb * 8;
  const int tasks = gemm_tasks(g);
  unsigned char* a_s = smem;
  unsigned char* ring = smem + static_cast<std::size_t>(kMaxRows) * (kMaxShareK * 2 + 64) +
                        static_cast<std::size_t>(warp) * kStages * kStageBytes;
  const unsigned ring_addr = static_cast<unsigned>(__cvta_generic_to_shared(ring));
  const unsigned a_addr = static_cast<unsigned>(__cvta_generic_to_shared(a_s));
  float* red = reinterpret_cast<float*>(smem);
  const uint4 zero = make_uint4(0, 0, 0, 0);
  for (int task = static_cast<int>(blockIdx.x); task < tasks; task += static_cast<int>(gridDim.x)) {
    const int cg = task / g.split.ks, kidx = task % g.split.ks;
    const int col0 = cg * cols + my_n * 32;
    const int k0 = kidx * g.split.kc, k1 = min(g.k, k0 + g.split.kc);
    const int klen = k1 - k0;
    const int astride = klen * 2 + 64;
    const int nkb = klen / 32;
    __syncthreads();  // the previous task's reads of shared memory are done
    // Activations of the share: rows × klen, 16-byte pieces.
    const int pieces = rows * (klen / 8);
    for (int i = static_cast<int>(threadIdx.x); i < pieces; i += kThreads) {
      const int r = i / (klen / 8), q = i % (klen / 8);
      cp_async16(a_addr + r * astride + q * 16, g.a + static_cast<std::int64_t>(r) * g.lda + k0 + q * 8, true);
    }
    cp_async_commit();
    // This warp's k blocks: my_k, my_k + wk, ...; block j of the warp goes to stage j % kStages.
    const int mine = my_k < nkb ? (nkb - my_k + wk - 1) / wk : 0;
    auto issue = [&](int j) {
      if (j < mine) {
        const int kb = my_k + j * wk;
        const unsigned st = ring_addr + (j % kStages) * kStageBytes;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int q = lane + 32 * i, row = q >> 2, part = q & 3;
          const int c = col0 + row;
          cp_async16(st + row * 64 + part * 16, g.w + static_cast<std::int64_t>(c < g.n ? c : 0) * g.k + k0 + kb * 32 + part * 8,
                     c < g.n);
        }
      }
      cp_async_commit();
    };
#pragma unroll
    for (int j = 0; j < kStages; ++j) issue(j);
    cp_async_wait<kStages>();  // the activations (the oldest group) are in
    __syncthreads();
    float acc[4][4][4];
#pragma unroll
    for (int m = 0; m < 4; ++m)
#pragma unroll
      for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[m][j][e] = 0.0f;
    for (int j = 0; j < mine; ++j) {
      cp_async_wait<kStages - 1>();
      __syncwarp();
      const unsigned char* st = ring + (j % kStages) * kStageBytes;
      const int kk = (my_k + j * wk) * 32 + 8 * t;
      uint4 a[4][2], b[4];
#pragma unroll
      for (int m = 0; m < 4; ++m) {
#pragma unroll
        for (int hh = 0; hh < 2; ++hh) {
          const int r = m * 16 + gq + hh * 8;
          a[m][hh] = r < rows ? lds128(a_s + r * astride + kk * 2) : zero;
        }
      }
#pragma unroll
      for (int jj = 0; jj < 4; ++jj) b[jj] = lds128(st + (jj * 8 + gq) * 64 + t * 16);
      __syncwarp();  // every lane has read the stage before it is refilled
      issue(j + kStages);
#pragma unroll
      for (int m = 0; m < 4; ++m) {
#pragma unroll
        for (int jj = 0; jj < 4; ++jj) {
          mma16816(acc[m][jj], a[m][0].x, a[m][1].x, a[m][0].y, a[m][1].y, b[jj].x, b[jj].y);
          mma16816(acc[m][jj], a[m][0].z, a[m][1].z, a[m][0].w, a[m][1].w, b[jj].z, b[jj].w);
        }
      }
    }
    cp_async_wait<0>();
    // Sum the k-splitting warps through shared memory, in warp order.
    __syncthreads();
    float* mine_red = red + (my_k * kMaxRows) * cols;
#pragma unroll
    for (int m = 0; m < 4; ++m) {
#pragma unroll
      for (int jj = 0; jj < 4; ++jj) {
        const int c = my_n * 32 + jj * 8 + 2 * t;
        const int r = m * 16 + gq;
        mine_red[r * cols + c] = acc[m][jj][0];
        mine_red[r * cols + c + 1] = acc[m][jj][1];
        mine_red[(r + 8) * cols + c] = acc[m][jj][2];
        mine_red[(r + 8) * cols + c + 1] = acc[m][jj][3];
      }
    }
    __syncthreads();
    float* out = g.out + static_cast<std::int64_t>(kidx) * rows * g.n;
    for (int i = static_cast<int>(threadIdx.x); i < rows * cols; i += kThreads) {
      const int r = i / cols, c = i % cols;
      const int col = cg * cols + c;
      if (col >= g.n) continue;
      float sum = 0.0f;
      for (int w = 0; w < wk; ++w) sum += red[(w * kMaxRows + r) * cols + c];
      __stcg(out + static_cast<std::int64_t>(r) * g.n + col, sum);
    }
  }
}

// Σ over the k shares of a GEMM's partial sums at (r, c).
// (At most kMaxShares shares; the loads are issued together, the sum stays in share order.)
constexpr int kMaxShares = 8;
__device__ __forceinline__ float sum_shares(const float* p, int ks, int rows, int n, int r, int c) {
  float v[kMaxShares];
#pragma unroll
  for (int i = 0; i < kMaxShares; ++i) v[i] = i < ks ? __ldcg(p + (static_cast<std::int64_t>(i) * rows + r) * n + c) : 0.0f;
  float s = 0.0f;
#pragma unroll
  for (int i = 0; i < kMaxShares; ++i) s += v[i];
  return s;
}

// ---- the kernel --------------------------------------------------------------------------------

// Norm phase: x += Σ shares · gate (when `pending`), then ys = adaRMS(x) with (scale, shift).
__device__ void norm_phase(const FusedExpertArgs& p, const float* pending_gate, int pending_ks, const float* scale,
                           const float* shift, float* sums) {
  const int S = p.shape.rows, E = p.shape.width;
  for (int r = static_cast<int>(blockIdx.x); r < S; r += static_cast<int>(gridDim.x)) {
    float v[kMaxNormItems], yv[kMaxNormItems];
#pragma unroll
    for (int it = 0; it < kMaxNormItems; ++it) {
      const int c = static_cast<int>(threadIdx.x) + it * kThreads;
      v[it] = c < E ? __ldcg(p.x + static_cast<std::int64_t>(r) * E + c) : 0.0f;
      yv[it] = c < E && pending_gate != nullptr ? sum_shares(p.partials, pending_ks, S, E, r, c) : 0.0f;
    }
    float ss = 0.0f;
#pragma unroll
    for (int it = 0; it < kMaxNormItems; ++it) {
      const int c = static_cast<int>(threadIdx.x) + it * kThreads;
      if (c < E) {
        if (pending_gate != nullptr) {
          v[it] = fmaf(yv[it], pending_gate[c], v[it]);
          __stcg(p.x + static_cast<std::int64_t>(r) * E + c, v[it]);
        }
        ss += v[it] * v[it];
      }
    }
    ss = warp_sum(ss);
    if ((threadIdx.x & 31) == 0) sums[threadIdx.x >> 5] = ss;
    __syncthreads();
    float tot = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) tot += sums[w];
    __syncthreads();
    const float inv = rsqrtf(tot / static_cast<float>(E) + p.eps);
    bf16* y = static_cast<bf16*>(p.ys) + static_cast<std::int64_t>(r) * E;
#pragma unroll
    for (int it = 0; it < kMaxNormItems; ++it) {
      const int c = static_cast<int>(threadIdx.x) + it * kThreads;
      if (c < E) y[c] = __float2bfloat16_rn(v[it] * inv * (1.0f + scale[c]) + shift[c]);
    }
  }
}

// q|k|v: sum the shares, round to bf16, rotate q and k (rotate-half pairs at position n + r).
__device__ void qkv_phase(const FusedExpertArgs& p, int ks, int n) {
  const int S = p.shape.rows, H = p.shape.heads, K = p.shape.kv_heads, h = p.shape.head_dim;
  const int Q = (H + 2 * K) * h, half = h / 2;
  const int pairs = (H + K) * half;  // rotated pairs per row
  const int per_row = pairs + K * h;
  bf16* out = static_cast<bf16*>(p.qkv);
  const int total = S * per_row;
  for (int i = static_cast<int>(blockIdx.x * kThreads + threadIdx.x); i < total;
       i += static_cast<int>(gridDim.x * kThreads)) {
    const int r = i / per_row, j = i % per_row;
    if (j < pairs) {
      const int head = j / half, kk = j % half;
      const int ca = head * h + kk, cb = ca + half;
      const float va = round_bf16(sum_shares(p.partials, ks, S, Q, r, ca));
      const float vb = round_bf16(sum_shares(p.partials, ks, S, Q, r, cb));
      float sn, co;
      sincosf(static_cast<float>(n + r) * p.inv_freq[kk], &sn, &co);
      out[static_cast<std::int64_t>(r) * Q + ca] = __float2bfloat16_rn(va * co - vb * sn);
      out[static_cast<std::int64_t>(r) * Q + cb] = __float2bfloat16_rn(vb * co + va * sn);
    } else {
      const int c = (H + K) * h + (j - pairs);
      out[static_cast<std::int64_t>(r) * Q + c] = __float2bfloat16_rn(sum_shares(p.partials, ks, S, Q, r, c));
    }
  }
}

// Attention of the grouped query rows over one chunk of 64 keys (prefix cache rows [0, n), then
// the suffix's own rows): the chunk's unnormalised output, row max and row sum, per warp.
__device__ void attention_phase(const FusedExpertArgs& p, int layer, int n, bf16* vstage_all) {
  const int S = p.shape.rows, H = p.shape.heads, K = p.shape.kv_heads, h = p.shape.head_dim;
  const int Q = (H + 2 * K) * h, G = H / K, GR = G * S;
  const int mtiles = (GR + 15) / 16;
  const int keys = n + S;
  const int chunks = (keys + kChunkKeys - 1) / kChunkKeys;
  const int max_chunks = static_cast<int>((p.shape.max_prefix + S + kChunkKeys - 1) / kChunkKeys);
  const int tasks = K * mtiles * chunks;
  const int warp = static_cast<int>(threadIdx.x) >> 5, lane = static_cast<int>(threadIdx.x) & 31;
  const int gq = lane >> 2, t = lane & 3;
  const int vstride = h + 8;  // bf16 elements per staged row (16-byte pad: conflict-free ldmatrix)
  bf16* vstage = vstage_all + warp * 16 * vstride;
  const bf16* qkv = static_cast<const bf16*>(p.qkv);
  const bf16* kc = static_cast<const bf16*>(p.cache) + (2 * static_cast<std::int64_t>(layer)) * p.shape.max_prefix * K * h;
  const bf16* vc = kc + p.shape.max_prefix * K * h;
  const float sl2 = p.scale * 1.4426950408889634f;
  const uint4 zero = make_uint4(0, 0, 0, 0);
  for (int task = warp * static_cast<int>(gridDim.x) + static_cast<int>(blockIdx.x); task < tasks;
       task += static_cast<int>(gridDim.x) * kWarps) {
    const int kh = task / (mtiles * chunks);
    const int rem = task % (mtiles * chunks);
    const int mt = rem / chunks, c = rem % chunks;
    // This thread's two query rows.
    int qrow[2];
    bool qok[2];
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      const int gr = mt * 16 + gq + hh * 8;
      qok[hh] = gr < GR;
      const int head = kh * G + (qok[hh] ? gr / S : 0), r = qok[hh] ? gr % S : 0;
      qrow[hh] = r * Q + head * h;
    }
    auto key_ptr = [&](int key, int which) -> const bf16* {  // which 0: k, 1: v
      if (key < n) return (which == 0 ? kc : vc) + static_cast<std::int64_t>(key) * K * h + kh * h;
      return qkv + static_cast<std::int64_t>(key - n) * Q + (H + which * K + kh) * h;
    };
    // Scores for 64 keys: 8 tiles of 8 keys.
    float s[8][4];
#pragma unroll
    for (int j = 0; j < 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[j][e] = 0.0f;
    // The next 32 dims' loads are issued before this block's MMAs (registers double-buffered).
    uint4 qa[2], kv[8];
    auto load_qk = [&](int kb) {
      const int d = kb * 32 + 8 * t;
      qa[0] = qok[0] ? ld_cg(qkv + qrow[0] + d) : zero;
      qa[1] = qok[1] ? ld_cg(qkv + qrow[1] + d) : zero;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const int key = c * kChunkKeys + j * 8 + gq;
        kv[j] = zero;
        if (key < n) {
          kv[j] = ld_ro(key_ptr(key, 0) + d);
        } else if (key < keys) {
          kv[j] = ld_cg(key_ptr(key, 0) + d);
        }
      }
    };
    load_qk(0);
    for (int kb = 0; kb < h / 32; ++kb) {
      const uint4 q0 = qa[0], q1 = qa[1];
      uint4 kc8[8];
#pragma unroll
      for (int j = 0; j < 8; ++j) kc8[j] = kv[j];
      if (kb + 1 < h / 32) load_qk(kb + 1);
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        mma16816(s[j], q0.x, q1.x, q0.y, q1.y, kc8[j].x, kc8[j].y);
        mma16816(s[j], q0.z, q1.z, q0.w, q1.w, kc8[j].z, kc8[j].w);
      }
    }
    // Softmax over the chunk (rows gq and gq + 8), in base 2 with the scale folded in.
    float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int j = 0; j < 8; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int key = c * kChunkKeys + j * 8 + 2 * t + (e & 1);
        s[j][e] = key < keys ? s[j][e] * sl2 : -INFINITY;
        mx[e >> 1] = fmaxf(mx[e >> 1], s[j][e]);
      }
    }
    float sum[2] = {0.0f, 0.0f};
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      mx[hh] = fmaxf(mx[hh], __shfl_xor_sync(0xffffffffu, mx[hh], 1));
      mx[hh] = fmaxf(mx[hh], __shfl_xor_sync(0xffffffffu, mx[hh], 2));
    }
#pragma unroll
    for (int j = 0; j < 8; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        s[j][e] = exp2f(s[j][e] - mx[e >> 1]);
        sum[e >> 1] += s[j][e];
      }
    }
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      sum[hh] += __shfl_xor_sync(0xffffffffu, sum[hh], 1);
      sum[hh] += __shfl_xor_sync(0xffffffffu, sum[hh], 2);
    }
    // P · V, 16 keys at a time through this warp's staging rows.
    float o[kMaxHeadDim / 8][4];
#pragma unroll
    for (int j = 0; j < kMaxHeadDim / 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[j][e] = 0.0f;
    const int vec_per_row = h / 8;
    for (int ks = 0; ks < 4; ++ks) {
      const int key0 = c * kChunkKeys + ks * 16;
      if (key0 >= keys) break;
      // Each lane's loads in batches of 8 in flight, then their stores.
      for (int u0 = 0; u0 < kMaxHeadDim / 16; u0 += 8) {
        uint4 vr[8];
#pragma unroll
        for (int u = 0; u < 8; ++u) {
          const int i = lane + (u0 + u) * 32;
          vr[u] = zero;
          if (i < 16 * vec_per_row) {
            const int key = key0 + i / vec_per_row, col = (i % vec_per_row) * 8;
            if (key < n) {
              vr[u] = ld_ro(key_ptr(key, 1) + col);
            } else if (key < keys) {
              vr[u] = ld_cg(key_ptr(key, 1) + col);
            }
          }
        }
#pragma unroll
        for (int u = 0; u < 8; ++u) {
          const int i = lane + (u0 + u) * 32;
          if (i < 16 * vec_per_row) {
            *reinterpret_cast<uint4*>(vstage + (i / vec_per_row) * vstride + (i % vec_per_row) * 8) = vr[u];
          }
        }
      }
      __syncwarp();
      const unsigned a0 = pack_bf16(s[2 * ks][0], s[2 * ks][1]);
      const unsigned a1 = pack_bf16(s[2 * ks][2], s[2 * ks][3]);
      const unsigned a2 = pack_bf16(s[2 * ks + 1][0], s[2 * ks + 1][1]);
      const unsigned a3 = pack_bf16(s[2 * ks + 1][2], s[2 * ks + 1][3]);
      const int mi = lane >> 3, ri = lane & 7;
      const unsigned base = static_cast<unsigned>(__cvta_generic_to_shared(vstage + ((mi & 1) * 8 + ri) * vstride + (mi >> 1) * 8));
#pragma unroll
      for (int jj = 0; jj < kMaxHeadDim / 16; ++jj) {
        if (jj * 16 < h) {
          unsigned bfr[4];
          ldmatrix_x4_trans(bfr, base + jj * 32);
          mma16816(o[2 * jj], a0, a1, a2, a3, bfr[0], bfr[1]);
          mma16816(o[2 * jj + 1], a0, a1, a2, a3, bfr[2], bfr[3]);
        }
      }
      __syncwarp();
    }
    // Partial: [kh][mt][c][16 rows][h + 2] (output, then max and sum).
    float* part = p.attn + ((static_cast<std::int64_t>(kh) * mtiles + mt) * max_chunks + c) * 16 * (h + 2);
#pragma unroll
    for (int j = 0; j < kMaxHeadDim / 8; ++j) {
      if (j * 8 < h) {
        const int d = j * 8 + 2 * t;
        __stcg(part + gq * (h + 2) + d, o[j][0]);
        __stcg(part + gq * (h + 2) + d + 1, o[j][1]);
        __stcg(part + (gq + 8) * (h + 2) + d, o[j][2]);
        __stcg(part + (gq + 8) * (h + 2) + d + 1, o[j][3]);
      }
    }
    if (t == 0) {
      __stcg(part + gq * (h + 2) + h, mx[0]);
      __stcg(part + gq * (h + 2) + h + 1, sum[0]);
      __stcg(part + (gq + 8) * (h + 2) + h, mx[1]);
      __stcg(part + (gq + 8) * (h + 2) + h + 1, sum[1]);
    }
  }
}

// The chunks of each query row combined (one warp per row and head) into o, bf16 [S, H·h].
__device__ void combine_phase(const FusedExpertArgs& p, int n) {
  const int S = p.shape.rows, H = p.shape.heads, K = p.shape.kv_heads, h = p.shape.head_dim;
  const int G = H / K, GR = G * S, mtiles = (GR + 15) / 16;
  const int chunks = (n + S + kChunkKeys - 1) / kChunkKeys;
  const int max_chunks = static_cast<int>((p.shape.max_prefix + S + kChunkKeys - 1) / kChunkKeys);
  const int warp = static_cast<int>(threadIdx.x) >> 5, lane = static_cast<int>(threadIdx.x) & 31;
  bf16* out = static_cast<bf16*>(p.o);
  for (int task = warp * static_cast<int>(gridDim.x) + static_cast<int>(blockIdx.x); task < K * GR;
       task += static_cast<int>(gridDim.x) * kWarps) {
    const int kh = task / GR, gr = task % GR;
    const int mt = gr / 16, rl = gr % 16;
    const float* base = p.attn + (static_cast<std::int64_t>(kh) * mtiles + mt) * max_chunks * 16 * (h + 2) + rl * (h + 2);
    const std::int64_t cstride = 16 * static_cast<std::int64_t>(h + 2);
    // Lane c holds chunk c's max and sum (chunks beyond 32 folded in by the loop).
    float m = -INFINITY;
    for (int c = lane; c < chunks; c += 32) m = fmaxf(m, __ldcg(base + c * cstride + h));
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    float l = 0.0f;
    for (int c = lane; c < chunks; c += 32) l += exp2f(__ldcg(base + c * cstride + h) - m) * __ldcg(base + c * cstride + h + 1);
    l = warp_sum(l);
    const float inv = 1.0f / l;
    const int head = kh * G + gr / S, r = gr % S;
    // Each lane 4 consecutive dims per pass; the chunks' loads independent of each other.
    // (Every lane runs every pass: the shuffles need the whole warp.)
    for (int d0 = 0; d0 < h; d0 += 128) {
      const int d = d0 + lane * 4;
      const bool on = d < h;
      float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      for (int c0 = 0; c0 < chunks; c0 += 32) {
        const float wc = c0 + lane < chunks ? exp2f(__ldcg(base + (c0 + lane) * cstride + h) - m) : 0.0f;
        const int nc = min(32, chunks - c0);
#pragma unroll 4
        for (int c = 0; c < nc; ++c) {
          const float wv = __shfl_sync(0xffffffffu, wc, c);
          if (on) {
            const float* src = base + (c0 + c) * cstride + d;
            acc.x = fmaf(wv, __ldcg(src), acc.x);
            acc.y = fmaf(wv, __ldcg(src + 1), acc.y);
            acc.z = fmaf(wv, __ldcg(src + 2), acc.z);
            acc.w = fmaf(wv, __ldcg(src + 3), acc.w);
          }
        }
      }
      if (!on) continue;
      bf16* dst = out + static_cast<std::int64_t>(r) * H * h + head * h + d;
      dst[0] = __float2bfloat16_rn(acc.x * inv);
      dst[1] = __float2bfloat16_rn(acc.y * inv);
      dst[2] = __float2bfloat16_rn(acc.z * inv);
      dst[3] = __float2bfloat16_rn(acc.w * inv);
    }
  }
}

// g = gelu_tanh(gate) · up, each rounded to bf16 first as the separate GEMM would.
__device__ void geglu_phase(const FusedExpertArgs& p, int ks) {
  const int S = p.shape.rows, F = p.shape.mlp;
  bf16* out = static_cast<bf16*>(p.g);
  for (int i = static_cast<int>(blockIdx.x * kThreads + threadIdx.x); i < S * F; i += static_cast<int>(gridDim.x * kThreads)) {
    const int r = i / F, c = i % F;
    const float gv = round_bf16(sum_shares(p.partials, ks, S, 2 * F, r, c));
    const float uv = round_bf16(sum_shares(p.partials, ks, S, 2 * F, r, F + c));
    out[i] = __float2bfloat16_rn(ew::gelu_tanh(gv) * uv);
  }
}

__global__ void __launch_bounds__(kThreads, 1) fused_expert_kernel(FusedExpertArgs p) {
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ float sums[kWarps];
  bf16* vstage = reinterpret_cast<bf16*>(smem);
  const int S = p.shape.rows, E = p.shape.width, H = p.shape.heads, K = p.shape.kv_heads, h = p.shape.head_dim;
  const int F = p.shape.mlp, L = p.shape.layers, Q = (H + 2 * K) * h;
  const int n = *p.prefix_len;
  const float* pending = nullptr;
  int bi = 1;  // trace slot 0: the start
  if (p.trace != nullptr && threadIdx.x == 0) {
    const unsigned long long t0 = global_ns();
    p.trace[blockIdx.x] = t0;
    if (blockIdx.x == 0) p.trace[gridDim.x] = t0;
  }
  for (int l = 0; l < L; ++l) {
    const FusedExpertLayer& w = p.layers[l];
    const float* mod_in = p.mods + (2 * l) * 3 * E;
    const float* mod_post = mod_in + 3 * E;
    const GemmPhase qkv{static_cast<const bf16*>(p.ys), E, static_cast<const bf16*>(w.qkv), Q, E, p.split_qkv, p.partials};
    const GemmPhase og{static_cast<const bf16*>(p.o), H * h, static_cast<const bf16*>(w.o), E, H * h, p.split_o, p.partials};
    const GemmPhase gu{static_cast<const bf16*>(p.ys), E, static_cast<const bf16*>(w.gate_up), 2 * F, E, p.split_gate_up,
                       p.partials};
    const GemmPhase dn{static_cast<const bf16*>(p.g), F, static_cast<const bf16*>(w.down), E, F, p.split_down, p.partials};
    if (p.prefetch) prefetch_weights(qkv);
    norm_phase(p, pending, p.split_down.ks, mod_in, mod_in + E, sums);
    grid_barrier(p.barrier, p.trace, bi);
    gemm_phase(qkv, S, smem);
    grid_barrier(p.barrier, p.trace, bi);
    qkv_phase(p, p.split_qkv.ks, n);
    grid_barrier(p.barrier, p.trace, bi);
    attention_phase(p, l, n, vstage);
    if (p.prefetch) prefetch_weights(og);
    grid_barrier(p.barrier, p.trace, bi);
    combine_phase(p, n);
    grid_barrier(p.barrier, p.trace, bi);
    gemm_phase(og, S, smem);
    if (p.prefetch) prefetch_weights(gu);
    grid_barrier(p.barrier, p.trace, bi);
    norm_phase(p, mod_in + 2 * E, p.split_o.ks, mod_post, mod_post + E, sums);
    grid_barrier(p.barrier, p.trace, bi);
    gemm_phase(gu, S, smem);
    if (p.prefetch) prefetch_weights(dn);
    grid_barrier(p.barrier, p.trace, bi);
    geglu_phase(p, p.split_gate_up.ks);
    grid_barrier(p.barrier, p.trace, bi);
    gemm_phase(dn, S, smem);
    grid_barrier(p.barrier, p.trace, bi);
    pending = mod_post + 2 * E;
  }
  const float* fin = p.mods + 2 * L * 3 * E;
  norm_phase(p, pending, p.split_down.ks, fin, fin + E, sums);
  if (p.trace != nullptr && threadIdx.x == 0) p.trace[bi * (gridDim.x + 1) + blockIdx.x] = global_ns();
  finish_barriers(p.barrier);
}

// The split of an [rows × n] = [rows × k] · [n × k]ᵀ GEMM over `grid` blocks: the most tasks
// that fit one wave, fewer k shares first.
FusedGemmSplit plan_split(int n, int k, int grid) {
  FusedGemmSplit best{4, 1, k};
  int best_tasks = 0;
  for (const int nb : {4, 8}) {
    const int groups = (n / 8 + nb - 1) / nb;
    for (int ks = 1; ks <= 8; ++ks) {
      const int kc = (k / 32 + ks - 1) / ks * 32;
      const int real = (k + kc - 1) / kc;  // shares that have work
      if (real != ks || kc > kMaxShareK) continue;
      const int tasks = groups * ks;
      if (tasks > grid) continue;
      if (tasks > best_tasks) {
        best_tasks = tasks;
        best = FusedGemmSplit{nb, ks, kc};
      }
    }
  }
  if (best_tasks == 0) {  // more column groups than blocks: widest groups, shares of at most kMaxShareK
    const int ks = (k + kMaxShareK - 1) / kMaxShareK;
    best = FusedGemmSplit{8, ks, (k / 32 + ks - 1) / ks * 32};
  }
  return best;
}

}  // namespace

std::string fused_expert_unsupported(const FusedExpertShape& s) {
  if (s.rows < 1 || s.rows > kMaxRows) return "suffix rows " + std::to_string(s.rows) + " outside 1..64";
  if (s.width % 32 != 0 || s.width > kMaxNormItems * kThreads) {
    return "width " + std::to_string(s.width) + " is not a multiple of 32 up to 4096";
  }
  if (s.mlp % 32 != 0 || s.mlp > kMaxShares * kMaxShareK) {
    return "mlp_dim " + std::to_string(s.mlp) + " is not a multiple of 32 up to 8192";
  }
  if (s.heads * s.head_dim > kMaxShares * kMaxShareK) return "heads x head_dim above 8192";
  if (s.head_dim % 32 != 0 || s.head_dim > kMaxHeadDim) {
    return "head_dim " + std::to_string(s.head_dim) + " is not a multiple of 32 up to 256";
  }
  if (s.kv_heads < 1 || s.heads % s.kv_heads != 0) return "heads are not a multiple of kv heads";
  if (s.layers < 1) return "no layers";
  return {};
}

Expected<FusedExpertArgs> fused_expert_plan(const FusedExpertShape& s, int device, std::size_t* partial_bytes,
                                            std::size_t* attn_bytes) {
  if (const std::string why = fused_expert_unsupported(s); !why.empty()) {
    return invalid_argument("fused expert: " + why);
  }
  FusedExpertArgs a;
  a.shape = s;
  int sms = 0, coop = 0;
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, device));
  if (coop == 0) return failed_precondition("fused expert: the device does not support cooperative launches");
  const std::size_t red = static_cast<std::size_t>(kWarps) * kMaxRows * 32 * sizeof(float);  // wk · 64 · nb·8 = 64 KB
  const std::size_t stage = static_cast<std::size_t>(kWarps) * 16 * (s.head_dim + 8) * sizeof(bf16);
  a.smem = std::max({red, stage, kGemmSmem});
  EDGEVLA_CUDA_RETURN_IF_ERROR(
      cudaFuncSetAttribute(fused_expert_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(a.smem)));
  int per_sm = 0;
  EDGEVLA_CUDA_RETURN_IF_ERROR(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fused_expert_kernel, kThreads, a.smem));
  if (per_sm < 1) return failed_precondition("fused expert: one block does not fit a multiprocessor");
  a.grid = sms;
  const int Q = (s.heads + 2 * s.kv_heads) * s.head_dim;
  a.split_qkv = plan_split(Q, s.width, a.grid);
  a.split_o = plan_split(s.width, s.heads * s.head_dim, a.grid);
  a.split_gate_up = plan_split(2 * s.mlp, s.width, a.grid);
  a.split_down = plan_split(s.width, s.mlp, a.grid);
  std::size_t most = 0;
  for (const auto& [sp, n] : {std::pair{a.split_qkv, Q}, std::pair{a.split_o, s.width},
                              std::pair{a.split_gate_up, 2 * s.mlp}, std::pair{a.split_down, s.width}}) {
    most = std::max(most, static_cast<std::size_t>(sp.ks) * s.rows * n * sizeof(float));
  }
  *partial_bytes = most;
  const std::int64_t mtiles = (static_cast<std::int64_t>(s.heads / s.kv_heads) * s.rows + 15) / 16;
  const std::int64_t chunks = (s.max_prefix + s.rows + kChunkKeys - 1) / kChunkKeys;
  *attn_bytes = static_cast<std::size_t>(s.kv_heads * mtiles * chunks * 16 * (s.head_dim + 2)) * sizeof(float);
  return a;
}

Status fused_expert(cudaStream_t stream, const FusedExpertArgs& args) {
  if (args.grid < 1 || args.layers == nullptr || args.barrier == nullptr) {
    return invalid_argument("fused expert: arguments not planned (fused_expert_plan)");
  }
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(static_cast<unsigned>(args.grid));
  cfg.blockDim = dim3(kThreads);
  cfg.dynamicSmemBytes = args.smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeCooperative;
  attr[0].val.cooperative = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaLaunchKernelEx(&cfg, fused_expert_kernel, args));
  return Status::ok();
}

}  // namespace edgevla::backends::cuda
