// The bf16 attention on Hopper's warpgroup multiply (attention.cu's part): included by
// attention.cu only, inside its anonymous namespace, after the mma.sync kernel whose steps it
// shares (softmax_step, p_fragment, finish_rows, group_sync).
//
// Head dim 256 (Gemma), 32-key tiles. A key group is one warpgroup over 64 stacked rows, as in
// attn_bf16, but each product is issued once for the whole warpgroup and reads its operands from
// shared memory itself: q · kᵀ is 16 m64n32k16 (q and the key tile from shared memory) and p · v
// 2 m64n256k16 (p from registers, the value tile from shared memory). The mma.sync kernel reads
// every tile once per warp through ldmatrix (160 KB of shared-memory reads a tile and block);
// here the warpgroup reads it once (64 KB), with 18 instructions a tile instead of 208.
// Tiles are stored in core-matrix order (wgmma.cuh), written by cp.async with eight consecutive
// threads filling one core matrix (no bank conflicts) from eight rows' 16-byte chunks.
#pragma once

constexpr int kWgHd = 256;
constexpr int kWgKeys = 32;

template <int KG>
struct WgTile {
  static constexpr int kTileElems = kWgKeys * kWgHd;                       // one K or V tile
  static constexpr int kKvElems = 4 * KG * kTileElems;                      // K and V, two stages a group
  static constexpr int kSmem = (kBf16Rows * kWgHd + kKvElems) * static_cast<int>(sizeof(bf16));
  static constexpr int kMergeFloats = (kWgHd / 4 + 4) * kThreads * KG;
  static_assert(KG == 1 || kMergeFloats * sizeof(float) <= kKvElems * sizeof(bf16), "merge fits the K/V buffers");
};

template <int KG>
__global__ void __launch_bounds__(kThreads * KG) attn_wg(const Params p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int HD = kWgHd, BK = kWgKeys;
  constexpr int kChunks = HD / 8;  // 16-byte chunks per row
  constexpr int kTile = WgTile<KG>::kTileElems;
  constexpr unsigned kRowGroupBytes = kChunks * 128;  // 8 rows of a core-matrix-order tile
  extern __shared__ __align__(16) unsigned char smem[];  // no-swizzle descriptors need 16-byte alignment
  bf16* s_q = reinterpret_cast<bf16*>(smem);  // [64 × HD], core-matrix order
  bf16* s_k = s_q + kBf16Rows * HD;           // [KG][2][BK × HD]
  bf16* s_v = s_k + 2 * KG * kTile;           // [KG][2][BK × HD]

  const int kg = KG == 1 ? 0 : static_cast<int>(threadIdx.x) / kThreads;
  const int tid = static_cast<int>(threadIdx.x) - kg * kThreads;
  const int warp = tid / 32, lane = tid % 32;
  const int bg = static_cast<int>(blockIdx.y);
  const int b = bg / p.kv_heads, g = bg % p.kv_heads;
  const int m0 = static_cast<int>(blockIdx.x) * kBf16Rows;

  chain_release();
  if (!p.a_constant) chain_wait();
  const int a_len = clamped_a_len(p);
  const int na = (a_len + BK - 1) / BK;
  const int nb = (p.b_len + BK - 1) / BK;
  int t_begin = 0, t_end = 0;
  split_range(na + nb, p.splits, t_begin, t_end);

  const int my_m[2] = {m0 + warp * 16 + lane / 4, m0 + warp * 16 + lane / 4 + 8};
  const int lim_b[2] = {b_visible(p, my_m[0]), b_visible(p, my_m[1])};

  float o[HD / 8][4];
#pragma unroll
  for (int d = 0; d < HD / 8; ++d) o[d][0] = o[d][1] = o[d][2] = o[d][3] = 0.0f;
  float row_max[2] = {-INFINITY, -INFINITY};
  float row_sum[2] = {0.0f, 0.0f};
  float(&o_flat)[HD / 2] = *reinterpret_cast<float(*)[HD / 2]>(&o[0][0]);

  // Chunk i of a tile: row (i / (8 · kChunks)) · 8 + i % 8, chunk (i / 8) % kChunks, so that a
  // warp reads 64 contiguous bytes of each of 8 rows and writes 4 whole core matrices.
  auto chunk_row = [](int i) { return (i / (8 * kChunks)) * 8 + i % 8; };
  auto chunk_col = [](int i) { return (i / 8) % kChunks; };

  const bf16* q = static_cast<const bf16*>(p.q);
  auto load_kv = [&](int t, int stage) {
    const bool in_a = t < na;
    const bf16* kb = static_cast<const bf16*>(in_a ? p.ak : p.bk);
    const bf16* vb = static_cast<const bf16*>(in_a ? p.av : p.bv);
    const long long base = (in_a ? b * p.a_batch : b * p.b_batch) + static_cast<long long>(g) * p.h;
    const long long ld = in_a ? p.a_ld : p.b_ld;
    const int key0 = in_a ? t * BK : (t - na) * BK;
    const int len = in_a ? a_len : p.b_len;
    bf16* dk = s_k + (kg * 2 + stage) * kTile;
    bf16* dv = s_v + (kg * 2 + stage) * kTile;
    for (int i = tid; i < BK * kChunks; i += kThreads) {
      const int r = chunk_row(i), c = chunk_col(i);
      const bool ok = key0 + r < len && c * 8 < p.h;
      const long long off = ok ? base + (key0 + r) * ld + c * 8 : 0;
      const int at = wgmma::core_offset(r, c * 8, HD);
      cp_async16(dk + at, kb + off, ok);
      cp_async16(dv + at, vb + off, ok);
    }
  };

  if (t_begin < t_end) {
    const int first = t_begin + kg;
    const bool early = p.a_constant && first < t_end && first < na;
    if (early) load_kv(first, 0);
    chain_wait();
    for (int i = static_cast<int>(threadIdx.x); i < kBf16Rows * kChunks; i += kThreads * KG) {
      const int r = chunk_row(i), c = chunk_col(i);
      const int m = m0 + r;
      const bool ok = m < p.m_rows && c * 8 < p.h;
      const long long off = ok ? q_offset(p, b, g, m) + c * 8 : 0;
      cp_async16(s_q + wgmma::core_offset(r, c * 8, HD), q + off, ok);
    }
    if (!early && first < t_end) load_kv(first, 0);
    cp_async_commit();
    cp_async_wait_all();
    wgmma::fence_shared_writes();
    __syncthreads();

    int stage = 0;
    for (int t = first; t < t_end; t += KG, stage ^= 1) {
      if (t != first) {
        cp_async_wait_all();
        wgmma::fence_shared_writes();
        group_sync<KG>(kg);
      }
      if (t + KG < t_end) load_kv(t + KG, stage ^ 1);
      cp_async_commit();

      // s = q · kᵀ: 64 rows × 32 keys, k = 256 in 16 steps of 16 (two core matrices along k).
      const bf16* k_s = s_k + (kg * 2 + stage) * kTile;
      float s[BK / 8][4];
      float(&s_flat)[BK / 2] = *reinterpret_cast<float(*)[BK / 2]>(&s[0][0]);
      wgmma::fence();
#pragma unroll
      for (int kk = 0; kk < HD / 16; ++kk) {
        wgmma::ss_m64n32(s_flat, wgmma::descriptor(s_q + kk * 128, 128, kRowGroupBytes),
                         wgmma::descriptor(k_s + kk * 128, 128, kRowGroupBytes), kk > 0 ? 1 : 0);
      }
      wgmma::commit();
      wgmma::wait_all();
      wgmma::pin(s_flat);

      softmax_step<HD, BK>(p, s, o, row_max, row_sum, t < na, t < na ? t * BK : (t - na) * BK, a_len, lim_b, lane);

      // o += p · v: 16 keys a step; the value tile is MN-major (keys are k, dims are n).
      const bf16* v_s = s_v + (kg * 2 + stage) * kTile;
      wgmma::pin(o_flat);
      wgmma::fence();
#pragma unroll
      for (int kk = 0; kk < BK / 16; ++kk) {
        unsigned a[4];
        p_fragment<BK>(s, kk, a);
        wgmma::rs_m64n256(o_flat, a, wgmma::descriptor(v_s + kk * 2 * kChunks * 64, kRowGroupBytes, 128));
      }
      wgmma::commit();
      wgmma::wait_all();
      wgmma::pin(o_flat);
    }
  }

  finish_rows<HD, KG>(p, o, row_max, row_sum, reinterpret_cast<float*>(s_k), kg, b, g, bg, my_m, lane);
#else
  (void)p;
  __trap();  // the host picks this kernel only on a 9.0 device with an sm_90a build
#endif
}
