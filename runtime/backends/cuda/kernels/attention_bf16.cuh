// The bf16 attention kernel (tensor cores, mma.sync; contract in attention.hpp, the walk in
// attention.cu's opening comment): included by attention.cu only, inside its anonymous namespace,
// where Params, kWideWarps and the device helpers are defined. It includes attention_steps.cuh.
#pragma once

// RW: warps a key group (4: 64 stacked rows a block; kNarrowWarps: 32; kWideWarps: 128, one group
// only).
template <int HD, int BK, int KG, int RW = 4>
struct Bf16Tile {
  static_assert(RW == 4 || RW == kNarrowWarps || (RW == kWideWarps && KG == 1), "wide blocks have one key group");
  static constexpr int kRows = 16 * RW;     // stacked rows a block
  static constexpr int kGroupThreads = 32 * RW;
  static constexpr int kLds = HD + 8;  // shared row stride: an odd count of 16-byte chunks (no bank conflicts)
  static constexpr int kKvElems = 4 * BK * KG * kLds;  // K and V, two stages a key group
  static constexpr int kSmem = (kRows * kLds + kKvElems) * static_cast<int>(sizeof(bf16));
  // The key groups' merge (over the whole block's shared memory, q included, after the walk):
  // half of each thread's output plus its two rows' max and sum.
  static constexpr int kMergeFloats = (HD / 4 + 4) * kGroupThreads * KG;
  static_assert(KG == 1 || kMergeFloats * sizeof(float) <= kSmem, "the merge fits the block's shared memory");
};

#include "runtime/backends/cuda/kernels/attention_steps.cuh"

template <int HD, int BK, int KG, int RW>
__global__ void __launch_bounds__(32 * RW * KG) attn_bf16(const Params p) {
  static_assert(HD % 16 == 0 && BK % 16 == 0, "tile shapes");
  static_assert(KG == 1 || KG == 2, "one or two key groups");
  using Tile = Bf16Tile<HD, BK, KG, RW>;
  static_assert(Tile::kRows * (HD + 4 + 2) * 4 <= Tile::kSmem, "cluster_combine's rows fit the block's shared memory");
  constexpr int kLds = Tile::kLds;
  constexpr int kRows = Tile::kRows;
  constexpr int kGroupThreads = Tile::kGroupThreads;
  constexpr int kChunks = HD / 8;  // 16-byte chunks per row
  extern __shared__ __align__(16) unsigned char smem[];
  bf16* s_q = reinterpret_cast<bf16*>(smem);  // [kRows][kLds]
  bf16* s_k = s_q + kRows * kLds;             // [KG][2][BK][kLds]
  bf16* s_v = s_k + 2 * KG * BK * kLds;       // [KG][2][BK][kLds]

  const int kg = KG == 1 ? 0 : static_cast<int>(threadIdx.x) / kGroupThreads;  // this thread's key group
  const int tid = static_cast<int>(threadIdx.x) - kg * kGroupThreads;          // its index in the group
  const int warp = tid / 32, lane = tid % 32;
  const int bg = static_cast<int>(blockIdx.y);
  const int b = bg / p.kv_heads, g = bg % p.kv_heads;
  const int m0 = static_cast<int>(blockIdx.x) * kRows;

  chain_release();
  if (!p.a_constant) chain_wait();  // *a_len and block a may come from the kernel before
  const int a_len = clamped_a_len(p);
  const int na = (a_len + BK - 1) / BK;
  const int nb = (p.b_len + BK - 1) / BK;
  int t_begin = 0, t_end = 0;
  split_range(na + nb, p.splits, t_begin, t_end);

  // This thread's two rows of its warp's 16: lane / 4 and lane / 4 + 8.
  const int my_m[2] = {m0 + warp * 16 + lane / 4, m0 + warp * 16 + lane / 4 + 8};
  const int lim_b[2] = {b_visible(p, my_m[0]), b_visible(p, my_m[1])};

  float o[HD / 8][4];
#pragma unroll
  for (int d = 0; d < HD / 8; ++d) o[d][0] = o[d][1] = o[d][2] = o[d][3] = 0.0f;
  float row_max[2] = {-INFINITY, -INFINITY};
  float row_sum[2] = {0.0f, 0.0f};

  const bf16* q = static_cast<const bf16*>(p.q);
  auto load_kv = [&](int w, int stage) {  // the tile at walk position w
    const int t = walk_tile(p, w, t_begin, t_end);
    const bool in_a = t < na;
    const bf16* kb = static_cast<const bf16*>(in_a ? p.ak : p.bk);
    const bf16* vb = static_cast<const bf16*>(in_a ? p.av : p.bv);
    const long long base = (in_a ? b * p.a_batch : b * p.b_batch) + static_cast<long long>(g) * p.h;
    const long long ld = in_a ? p.a_ld : p.b_ld;
    const int key0 = in_a ? t * BK : (t - na) * BK;
    const int len = in_a ? a_len : p.b_len;
    bf16* dk = s_k + (kg * 2 + stage) * BK * kLds;
    bf16* dv = s_v + (kg * 2 + stage) * BK * kLds;
    for (int i = tid; i < BK * kChunks; i += kGroupThreads) {
      const int r = i / kChunks, c = i % kChunks;
      const bool ok = key0 + r < len && c * 8 < p.h;
      const long long off = ok ? base + (key0 + r) * ld + c * 8 : 0;
      cp_async16(dk + r * kLds + c * 8, kb + off, ok);
      cp_async16(dv + r * kLds + c * 8, vb + off, ok);
    }
  };

  if (t_begin < t_end) {  // the same for the whole block
    // This group walks tiles first, first + KG, ... of the share.
    const int first = t_begin + kg;
    // Block a's first tile may be read before the wait when nothing in the chain writes it.
    const bool early = p.a_constant && first < t_end && walk_tile(p, first, t_begin, t_end) < na;
    if (early) load_kv(first, 0);
    chain_wait();
    for (int i = static_cast<int>(threadIdx.x); i < kRows * kChunks; i += kGroupThreads * KG) {
      const int r = i / kChunks, c = i % kChunks;
      const int m = m0 + r;
      const bool ok = m < p.m_rows && c * 8 < p.h;
      const long long off = ok ? q_offset(p, b, g, m) + c * 8 : 0;
      cp_async16(s_q + r * kLds + c * 8, q + off, ok);
    }
    if (!early && first < t_end) load_kv(first, 0);
    cp_async_commit();
    cp_async_wait_all();
    __syncthreads();  // Q (loaded by both groups) and each group's first tile are in
    if (p.rope != nullptr) {
      // Every stacked row of a query row takes that row's angles.
      rope_rows(p, s_q, kLds, kRows, static_cast<int>(threadIdx.x), kGroupThreads * KG, [&](int r) {
        const int m = m0 + r;
        return m < p.m_rows ? m / p.group : -1;
      });
      __syncthreads();
    }

    const bf16* q_warp = s_q + warp * 16 * kLds;
    for (int t = first; t < t_end; t += KG) {
      const int stage = ((t - first) / KG) & 1;
      if (t != first) {
        cp_async_wait_all();
        group_sync<KG, kGroupThreads>(kg);  // tile t is in; every warp of the group is done with the other stage
      }
      if (p.rope != nullptr && walk_tile(p, t, t_begin, t_end) >= na) {
        // Block b's keys of this tile, rotated by their own rows' angles before the products.
        const int key0 = (walk_tile(p, t, t_begin, t_end) - na) * BK;
        rope_rows(p, s_k + (kg * 2 + stage) * BK * kLds, kLds, BK, tid, kGroupThreads,
                  [&](int r) { return key0 + r < p.b_len ? key0 + r : -1; });
        group_sync<KG, kGroupThreads>(kg);
      }
      if (t + KG < t_end) load_kv(t + KG, stage ^ 1);
      cp_async_commit();

      // s = q · kᵀ for this warp's 16 rows × BK keys.
      const bf16* k_s = s_k + (kg * 2 + stage) * BK * kLds;
      float s[BK / 8][4];
#pragma unroll
      for (int n = 0; n < BK / 8; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
      for (int kk = 0; kk < HD / 16; ++kk) {
        unsigned a[4];
        ldmatrix_x4(a, q_warp + (lane % 16) * kLds + kk * 16 + (lane / 16) * 8);
#pragma unroll
        for (int nn = 0; nn < BK / 16; ++nn) {
          unsigned kf[4];
          ldmatrix_x4(kf, k_s + (nn * 16 + (lane / 16) * 8 + lane % 8) * kLds + kk * 16 + ((lane / 8) % 2) * 8);
          mma_bf16(s[2 * nn], a, kf[0], kf[1]);
          mma_bf16(s[2 * nn + 1], a, kf[2], kf[3]);
        }
      }

      const int tt = walk_tile(p, t, t_begin, t_end);
      softmax_step<HD, BK>(p, s, o, row_max, row_sum, tt < na, tt < na ? tt * BK : (tt - na) * BK, a_len, lim_b, lane);

      // o += p · v; p's accumulator layout is the A fragment layout of the next product.
      const bf16* v_s = s_v + (kg * 2 + stage) * BK * kLds;
#pragma unroll
      for (int kk = 0; kk < BK / 16; ++kk) {
        unsigned a[4];
        p_fragment<BK>(s, kk, a);
#pragma unroll
        for (int dd = 0; dd < HD / 16; ++dd) {
          unsigned vf[4];
          ldmatrix_x4_trans(vf, v_s + (kk * 16 + lane % 16) * kLds + dd * 16 + (lane / 16) * 8);
          mma_bf16(o[2 * dd], a, vf[0], vf[1]);
          mma_bf16(o[2 * dd + 1], a, vf[2], vf[3]);
        }
      }
    }
  }

  finish_rows<HD, KG, kGroupThreads>(p, o, row_max, row_sum, reinterpret_cast<float*>(smem), kg, b, g, bg, my_m, lane);
}
