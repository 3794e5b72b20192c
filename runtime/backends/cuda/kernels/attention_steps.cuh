// The bf16 attention kernels' steps: included inside an anonymous namespace by attention.cu and
// attention_wg.cu, where Params, o_offset and part_row (attention_params.cuh) and bf16 are in scope.
#pragma once

// Waits for the warps of key group kg (kGroupThreads threads; named barrier 1 + kg; barrier 0 is
// __syncthreads).
template <int KG, int kGroupThreads>
__device__ __forceinline__ void group_sync(int kg) {
  if constexpr (KG == 1) {
    __syncthreads();
  } else {
    asm volatile("bar.sync %0, %1;\n" ::"r"(1 + kg), "r"(kGroupThreads) : "memory");
  }
}

// The steps below keep a warp's 16 stacked rows in the mma accumulator layout: lane holds rows
// lane / 4 and lane / 4 + 8, columns 8n + 2 (lane % 4) + {0, 1} of each 8-column block n.

// One key tile's mask, scale and online-softmax update for this thread's two rows: s (scores,
// BK keys; s[n][2i + j] is row i's key key0 + 8n + 2 (lane % 4) + j, keys from lim[i] on masked)
// becomes the unnormalised probabilities against the new running max, and alpha[i] is what row
// i's output must be scaled by.
template <int BK>
__device__ __forceinline__ void scores_to_probs(const Params& p, float (&s)[BK / 8][4], float (&row_max)[2],
                                                float (&row_sum)[2], float (&alpha)[2], int key0,
                                                const int (&lim)[2], int lane) {
  // A quad of lanes shares a row.
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    float mx = -INFINITY;
#pragma unroll
    for (int n = 0; n < BK / 8; ++n) {
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        const int key = key0 + n * 8 + 2 * (lane % 4) + j;
        float& v = s[n][2 * i + j];
        v = key < lim[i] ? v * p.scale_log2 : -INFINITY;
        mx = fmaxf(mx, v);
      }
    }
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const float new_max = fmaxf(row_max[i], mx);
    const float base = new_max == -INFINITY ? 0.0f : new_max;
    alpha[i] = exp2f(row_max[i] - base);
    row_max[i] = new_max;
    float sum = 0.0f;
#pragma unroll
    for (int n = 0; n < BK / 8; ++n) {
      s[n][2 * i] = exp2f(s[n][2 * i] - base);
      s[n][2 * i + 1] = exp2f(s[n][2 * i + 1] - base);
      sum += s[n][2 * i] + s[n][2 * i + 1];
    }
    row_sum[i] = row_sum[i] * alpha[i] + sum;
  }
}

// The same, with o rescaled at once (attn_bf16: no multiply is in flight on o).
template <int HD, int BK>
__device__ __forceinline__ void softmax_step(const Params& p, float (&s)[BK / 8][4], float (&o)[HD / 8][4],
                                             float (&row_max)[2], float (&row_sum)[2], bool in_a, int key0,
                                             int a_len, const int (&lim_b)[2], int lane) {
  const int lim[2] = {in_a ? a_len : lim_b[0], in_a ? a_len : lim_b[1]};
  float alpha[2];
  scores_to_probs<BK>(p, s, row_max, row_sum, alpha, key0, lim, lane);
#pragma unroll
  for (int d = 0; d < HD / 8; ++d) {
    o[d][0] *= alpha[0];
    o[d][1] *= alpha[0];
    o[d][2] *= alpha[1];
    o[d][3] *= alpha[1];
  }
}

// Tile kk of p (16 keys) as the A fragment of p · v: the accumulator layout of q · kᵀ is the A
// fragment layout of the next product.
template <int BK>
__device__ __forceinline__ void p_fragment(const float (&s)[BK / 8][4], int kk, unsigned (&a)[4]) {
  a[0] = pack_bf16(s[2 * kk][0], s[2 * kk][1]);
  a[1] = pack_bf16(s[2 * kk][2], s[2 * kk][3]);
  a[2] = pack_bf16(s[2 * kk + 1][0], s[2 * kk + 1][1]);
  a[3] = pack_bf16(s[2 * kk + 1][2], s[2 * kk + 1][3]);
}

// RoPE in shared memory (Params::rope): `count` rows of a tile (row stride ld elements) rotated
// in place by threads [tid, count · h/2) with stride `threads`; row r takes the table's row
// table_row(r), rows where it is negative stay as they are. The arithmetic is rope_kernel's, so a
// rotated row matches what rope() writes.
template <typename RowOf>
__device__ __forceinline__ void rope_rows(const Params& p, bf16* tile, int ld, int count, int tid, int threads,
                                          RowOf table_row) {
  const int half = p.h / 2, items = count * half;
  // kBatch items a thread at a time: their angles are loaded together (one round trip to L2 a
  // batch, not one an item), then applied.
  constexpr int kBatch = 8;
  for (int base = tid; base < items; base += threads * kBatch) {
    float2 cs[kBatch];
    int at[kBatch];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int i = base + u * threads;
      const int r = i / half, k = i - r * half;
      const int row = i < items ? table_row(r) : -1;
      at[u] = row < 0 ? -1 : r * ld + k;
      cs[u] = row < 0 ? make_float2(1.0f, 0.0f) : p.rope[static_cast<long long>(row) * half + k];
    }
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      if (at[u] < 0) continue;
      bf16* a = tile + at[u];
      const float va = __bfloat162float(a[0]), vb = __bfloat162float(a[half]);
      a[0] = __float2bfloat16_rn(va * cs[u].x - vb * cs[u].y);
      a[half] = __float2bfloat16_rn(vb * cs[u].x + va * cs[u].y);
    }
  }
}

// The merge of `shares` split-key partials of one stacked row (each share's running max in log2
// units and sum, and 4 of its unnormalised output dims; entries from `shares` on are ignored):
// every share weighed by its max against the largest, in share order, then normalised. attn_combine
// and cluster_combine both use it, so their results are the same bit for bit.
template <int kShares>
__device__ __forceinline__ float4 merge_shares(const float2 (&ml)[kShares], const float4 (&v)[kShares], int shares) {
  float mx = -INFINITY;
#pragma unroll
  for (int s = 0; s < kShares; ++s) mx = fmaxf(mx, ml[s].x);
  const float base = mx == -INFINITY ? 0.0f : mx;
  float sum = 0.0f;
  float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
  for (int s = 0; s < kShares; ++s) {
    const float w = s < shares ? exp2f(ml[s].x - base) : 0.0f;  // an empty share (max -inf) weighs 0
    sum = fmaf(w, ml[s].y, sum);
    acc.x = fmaf(w, v[s].x, acc.x);
    acc.y = fmaf(w, v[s].y, acc.y);
    acc.z = fmaf(w, v[s].z, acc.z);
    acc.w = fmaf(w, v[s].w, acc.w);
  }
  const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
  return make_float4(acc.x * inv, acc.y * inv, acc.z * inv, acc.w * inv);
}

// The split shares of one row tile as one cluster (Params::cluster; compute capability 9.0+):
// instead of partials in global scratch and attn_combine, each block leaves its unnormalised
// output and its rows' max and sum in its own shared memory (own: the block's shared memory, no
// longer read; kRows × (HD + 4) floats, then kRows float pairs), the cluster meets at a barrier,
// and block z merges rows [z · per, (z + 1) · per) of the row tile from every block's shared
// memory (distributed shared memory), in share order with attn_combine's arithmetic, so the
// results are the same bit for bit. A second barrier keeps every block's shared memory alive
// until the others have read it.
constexpr int kClusterMostShares = 16;

template <int HD, int KG, int kGroupThreads>
__device__ __forceinline__ void cluster_combine(const Params& p, const float (&o)[HD / 8][4], const float (&row_max)[2],
                                                const float (&row_sum)[2], float* own, int kg, int b, int g,
                                                const int (&my_m)[2], int lane) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  constexpr int kRows = kGroupThreads / 2;  // 16 rows a warp of the group
  constexpr int kLd = HD + 4;               // floats a row (16-byte rows, banks spread)
  float* own_ml = own + kRows * kLd;
  const int m0 = static_cast<int>(blockIdx.x) * kRows;
  auto mine = [&](int d) { return KG == 1 || (d < HD / 16) == (kg == 0); };
  __syncthreads();  // the key groups' merge has read its buffer
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int r = my_m[i] - m0;
#pragma unroll
    for (int d = 0; d < HD / 8; ++d) {
      if (mine(d)) *reinterpret_cast<float2*>(own + r * kLd + d * 8 + 2 * (lane % 4)) = make_float2(o[d][2 * i], o[d][2 * i + 1]);
    }
    if (kg == 0 && lane % 4 == 0) *reinterpret_cast<float2*>(own_ml + 2 * r) = make_float2(row_max[i], row_sum[i]);
  }
  asm volatile("barrier.cluster.arrive.release;\n" ::: "memory");
  asm volatile("barrier.cluster.wait.acquire;\n" ::: "memory");

  const int shares = p.splits;
  const int per = (kRows + shares - 1) / shares;
  const int r0 = static_cast<int>(blockIdx.z) * per;
  const int r1 = min(min(kRows, r0 + per), p.m_rows - m0);
  const int per_row = p.h / 4;
  const unsigned o_base = ptx::smem_addr(own), ml_base = ptx::smem_addr(own_ml);
  for (int item = static_cast<int>(threadIdx.x); item < (r1 - r0) * per_row; item += kGroupThreads * KG) {
    const int r = r0 + item / per_row;
    const int c = (item % per_row) * 4;
    float2 ml[kClusterMostShares];
    float4 v[kClusterMostShares];
#pragma unroll
    for (int s = 0; s < kClusterMostShares; ++s) {
      if (s < shares) {
        const unsigned ml_at = ptx::cluster_map(ml_base + static_cast<unsigned>(r * 8), static_cast<unsigned>(s));
        const unsigned o_at = ptx::cluster_map(o_base + static_cast<unsigned>((r * kLd + c) * 4), static_cast<unsigned>(s));
        ml[s] = ptx::cluster_load2(ml_at);
        v[s] = ptx::cluster_load4(o_at);
      } else {
        ml[s] = make_float2(-INFINITY, 0.0f);
        v[s] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      }
    }
    const float4 out = merge_shares<kClusterMostShares>(ml, v, shares);
    const __nv_bfloat162 pair[2] = {__floats2bfloat162_rn(out.x, out.y), __floats2bfloat162_rn(out.z, out.w)};
    bf16* dst = static_cast<bf16*>(p.out) + o_offset(p, b, g, m0 + r) + c;
    *reinterpret_cast<uint2*>(dst) = *reinterpret_cast<const uint2*>(pair);
  }
  asm volatile("barrier.cluster.arrive.release;\n" ::: "memory");
  asm volatile("barrier.cluster.wait.acquire;\n" ::: "memory");
#endif
}

// After the walk: merges the key groups' states (KG 2; xbuf: shared memory no longer read, at
// least Bf16Tile::kMergeFloats floats) and writes the rows, normalised (one share) or as a
// partial with its max and sum (or, with Params::cluster, by cluster_combine).
template <int HD, int KG, int kGroupThreads>
__device__ __forceinline__ void finish_rows(const Params& p, float (&o)[HD / 8][4], float (&row_max)[2],
                                            float (&row_sum)[2], float* xbuf, int kg, int b, int g, int bg,
                                            const int (&my_m)[2], int lane) {
  chain_wait();  // a block with an empty share has not waited yet, and it writes below
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    row_sum[i] += __shfl_xor_sync(0xffffffffu, row_sum[i], 1);
    row_sum[i] += __shfl_xor_sync(0xffffffffu, row_sum[i], 2);
  }

  // Which output dims this thread writes: all of them with one group; with two, group 0 the
  // low half and group 1 the high half, each after merging in the other group's state.
  auto mine = [&](int d) { return KG == 1 || (d < HD / 16) == (kg == 0); };
  if constexpr (KG == 2) {
    constexpr int kHalf = HD / 16;  // o fragments a thread hands over
    constexpr int kStride = kGroupThreads * KG;
    const int me = static_cast<int>(threadIdx.x);
    const int partner = me ^ kGroupThreads;  // the same rows and columns in the other group
    __syncthreads();  // both groups are done with q and their K/V buffers
#pragma unroll
    for (int d = 0; d < HD / 8; ++d) {
      if (mine(d)) continue;
#pragma unroll
      for (int c = 0; c < 4; ++c) xbuf[((d % kHalf) * 4 + c) * kStride + me] = o[d][c];
    }
    xbuf[(HD / 4 + 0) * kStride + me] = row_max[0];
    xbuf[(HD / 4 + 1) * kStride + me] = row_max[1];
    xbuf[(HD / 4 + 2) * kStride + me] = row_sum[0];
    xbuf[(HD / 4 + 3) * kStride + me] = row_sum[1];
    __syncthreads();
    float w_mine[2], w_other[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const float other_max = xbuf[(HD / 4 + i) * kStride + partner];
      const float other_sum = xbuf[(HD / 4 + 2 + i) * kStride + partner];
      const float new_max = fmaxf(row_max[i], other_max);
      const float base = new_max == -INFINITY ? 0.0f : new_max;
      w_mine[i] = exp2f(row_max[i] - base);
      w_other[i] = exp2f(other_max - base);
      row_max[i] = new_max;
      row_sum[i] = row_sum[i] * w_mine[i] + other_sum * w_other[i];
    }
#pragma unroll
    for (int d = 0; d < HD / 8; ++d) {
      if (!mine(d)) continue;
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        o[d][c] = o[d][c] * w_mine[c / 2] + xbuf[((d % kHalf) * 4 + c) * kStride + partner] * w_other[c / 2];
      }
    }
  }

  if (xbuf != nullptr && p.cluster) {
    cluster_combine<HD, KG, kGroupThreads>(p, o, row_max, row_sum, xbuf, kg, b, g, my_m, lane);
    return;
  }
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int m = my_m[i];
    if (m >= p.m_rows) continue;
    if (p.splits == 1) {
      const float inv = row_sum[i] > 0.0f ? 1.0f / row_sum[i] : 0.0f;
      bf16* dst = static_cast<bf16*>(p.out) + o_offset(p, b, g, m);
#pragma unroll
      for (int d = 0; d < HD / 8; ++d) {
        const int col = d * 8 + 2 * (lane % 4);
        if (mine(d) && col < p.h) {
          *reinterpret_cast<__nv_bfloat162*>(dst + col) = __floats2bfloat162_rn(o[d][2 * i] * inv, o[d][2 * i + 1] * inv);
        }
      }
    } else {
      const long long pr = part_row(p, static_cast<int>(blockIdx.z), bg, m);
      float* dst = p.part_o + pr * p.h;
#pragma unroll
      for (int d = 0; d < HD / 8; ++d) {
        const int col = d * 8 + 2 * (lane % 4);
        if (mine(d) && col < p.h) *reinterpret_cast<float2*>(dst + col) = make_float2(o[d][2 * i], o[d][2 * i + 1]);
      }
      if (kg == 0 && lane % 4 == 0) {
        *reinterpret_cast<float2*>(p.part_ml + pr * 2) = make_float2(row_max[i], row_sum[i]);
      }
    }
  }
}
