// The f32 attention kernel (`precision: f32`: CUDA cores, the same walk as the bf16 kernels):
// included by attention.cu only, inside its anonymous namespace, where Params, kThreads, kF32Rows,
// kF32Keys and the device helpers are defined.
#pragma once

constexpr int kF32RowsPerWarp = kF32Rows / 4;
constexpr int kF32MaxDims = 256 / 32;  // output dims per lane

__host__ __device__ constexpr int f32_smem_floats(int h) {
  return kF32Rows * h + kF32Keys * (h + 1) + kF32Keys * h;
}

__global__ void __launch_bounds__(kThreads) attn_f32(const Params p) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int h = p.h;
  const int ldk = h + 1;  // odd stride: lane j reading k row j hits distinct banks
  float* s_q = reinterpret_cast<float*>(smem);  // [16][h]
  float* s_k = s_q + kF32Rows * h;              // [32][h + 1]
  float* s_v = s_k + kF32Keys * ldk;            // [32][h]
  chain_enter();

  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32;
  const int bg = static_cast<int>(blockIdx.y);
  const int b = bg / p.kv_heads, g = bg % p.kv_heads;
  const int m0 = static_cast<int>(blockIdx.x) * kF32Rows;
  const int mw = m0 + warp * kF32RowsPerWarp;  // this warp's first stacked row

  const int a_len = clamped_a_len(p);
  const int na = (a_len + kF32Keys - 1) / kF32Keys;
  const int nb = (p.b_len + kF32Keys - 1) / kF32Keys;
  int t_begin = 0, t_end = 0;
  split_range(na + nb, p.splits, t_begin, t_end);

  const float* q = static_cast<const float*>(p.q);
  for (int i = tid; i < kF32Rows * h; i += kThreads) {
    const int r = i / h, d = i % h;
    const int m = m0 + r;
    s_q[i] = m < p.m_rows ? q[q_offset(p, b, g, m) + d] : 0.0f;
  }

  int lim_b[kF32RowsPerWarp];
  float o[kF32RowsPerWarp][kF32MaxDims];
  float row_max[kF32RowsPerWarp], row_sum[kF32RowsPerWarp];
#pragma unroll
  for (int r = 0; r < kF32RowsPerWarp; ++r) {
    lim_b[r] = b_visible(p, mw + r);
    row_max[r] = -INFINITY;
    row_sum[r] = 0.0f;
#pragma unroll
    for (int i = 0; i < kF32MaxDims; ++i) o[r][i] = 0.0f;
  }

  for (int t = t_begin; t < t_end; ++t) {
    const bool in_a = t < na;
    const float* kb = static_cast<const float*>(in_a ? p.ak : p.bk);
    const float* vb = static_cast<const float*>(in_a ? p.av : p.bv);
    const long long base = (in_a ? b * p.a_batch : b * p.b_batch) + static_cast<long long>(g) * h;
    const long long ld = in_a ? p.a_ld : p.b_ld;
    const int key0 = in_a ? t * kF32Keys : (t - na) * kF32Keys;
    const int len = in_a ? a_len : p.b_len;

    __syncthreads();  // everyone is done with the previous tile (and s_q is written)
    for (int i = tid; i < kF32Keys * h; i += kThreads) {
      const int r = i / h, d = i % h;
      const bool ok = key0 + r < len;
      const long long off = base + (key0 + r) * ld + d;
      s_k[r * ldk + d] = ok ? kb[off] : 0.0f;
      s_v[i] = ok ? vb[off] : 0.0f;
    }
    __syncthreads();

    float s[kF32RowsPerWarp];
#pragma unroll
    for (int r = 0; r < kF32RowsPerWarp; ++r) s[r] = 0.0f;
    const float* krow = s_k + lane * ldk;
    const float* qw = s_q + warp * kF32RowsPerWarp * h;
    for (int d = 0; d < h; ++d) {
      const float kd = krow[d];
#pragma unroll
      for (int r = 0; r < kF32RowsPerWarp; ++r) s[r] = fmaf(qw[r * h + d], kd, s[r]);
    }
    const int key = key0 + lane;
    float pr[kF32RowsPerWarp];
#pragma unroll
    for (int r = 0; r < kF32RowsPerWarp; ++r) {
      const int lim = in_a ? a_len : lim_b[r];
      const float v = key < lim ? s[r] * p.scale_log2 : -INFINITY;
      float mx = v;
#pragma unroll
      for (int off = 16; off > 0; off /= 2) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
      const float new_max = fmaxf(row_max[r], mx);
      const float base_max = new_max == -INFINITY ? 0.0f : new_max;
      const float alpha = exp2f(row_max[r] - base_max);
      row_max[r] = new_max;
      pr[r] = exp2f(v - base_max);
      row_sum[r] = row_sum[r] * alpha + pr[r];  // this lane's share; summed over the warp at the end
#pragma unroll
      for (int i = 0; i < kF32MaxDims; ++i) o[r][i] *= alpha;
    }
    for (int j = 0; j < kF32Keys; ++j) {
      float v[kF32MaxDims];
#pragma unroll
      for (int i = 0; i < kF32MaxDims; ++i) v[i] = i * 32 + lane < h ? s_v[j * h + i * 32 + lane] : 0.0f;
#pragma unroll
      for (int r = 0; r < kF32RowsPerWarp; ++r) {
        const float pj = __shfl_sync(0xffffffffu, pr[r], j);
#pragma unroll
        for (int i = 0; i < kF32MaxDims; ++i) o[r][i] = fmaf(pj, v[i], o[r][i]);
      }
    }
  }

#pragma unroll
  for (int r = 0; r < kF32RowsPerWarp; ++r) {
#pragma unroll
    for (int off = 16; off > 0; off /= 2) row_sum[r] += __shfl_xor_sync(0xffffffffu, row_sum[r], off);
    const int m = mw + r;
    if (m >= p.m_rows) continue;
    if (p.splits == 1) {
      const float inv = row_sum[r] > 0.0f ? 1.0f / row_sum[r] : 0.0f;
      float* dst = static_cast<float*>(p.out) + o_offset(p, b, g, m);
#pragma unroll
      for (int i = 0; i < kF32MaxDims; ++i) {
        if (i * 32 + lane < h) dst[i * 32 + lane] = o[r][i] * inv;
      }
    } else {
      const long long prow = part_row(p, static_cast<int>(blockIdx.z), bg, m);
      float* dst = p.part_o + prow * h;
#pragma unroll
      for (int i = 0; i < kF32MaxDims; ++i) {
        if (i * 32 + lane < h) dst[i * 32 + lane] = o[r][i];
      }
      if (lane == 0) *reinterpret_cast<float2*>(p.part_ml + prow * 2) = make_float2(row_max[r], row_sum[r]);
    }
  }
}
