// The split-key attention's combines (attention.cu's part): included by attention.cu only,
// inside its anonymous namespace, where Params, part_row, o_offset, Bf16Tile and kMaxSplits
// are defined. Two ways: the shares of a cluster merge in shared memory (cluster_merge, called
// by the bf16 kernel at its end), or a second kernel merges partials from global memory.
#pragma once

// Combine of split-key partials ---------------------------------------------------------------

__device__ __forceinline__ void store4(float* dst, float4 v) { *reinterpret_cast<float4*>(dst) = v; }
__device__ __forceinline__ void store4(bf16* dst, float4 v) {
  __nv_bfloat162 pair[2] = {__floats2bfloat162_rn(v.x, v.y), __floats2bfloat162_rn(v.z, v.w)};
  *reinterpret_cast<uint2*>(dst) = *reinterpret_cast<const uint2*>(pair);
}

// One thread per (stacked row, 4 output dims): it weighs every share by its max and sum and
// merges them. All of a thread's loads are independent, so the shares arrive together instead
// of one round trip after another. kShares bounds the shares a thread holds: the host picks
// the smallest instance that covers the call's split count (holding 32 float4 shares for a
// call of 2 took ~200 registers a thread and made the combine 4-5x slower than its bytes).
constexpr int kCombineThreads = 256;

template <typename T, int kShares>
__global__ void __launch_bounds__(kCombineThreads) attn_combine(const Params p) {
  const int per_row = p.h / 4;
  const long long total = static_cast<long long>(p.batch) * p.kv_heads * p.m_rows * per_row;
  const long long i = static_cast<long long>(blockIdx.x) * kCombineThreads + threadIdx.x;
  if (i >= total) return;
  const long long row = i / per_row;
  const int c = static_cast<int>(i % per_row) * 4;
  const int m = static_cast<int>(row % p.m_rows);
  const int bg = static_cast<int>(row / p.m_rows);

  // Every share's max and sum first, all loads in flight together (a loop with a run-time trip
  // count would wait for each in turn), then every share's partial output likewise.
  const long long ml_stride = static_cast<long long>(p.batch) * p.kv_heads * p.m_rows * 2;
  const float* ml_src = p.part_ml + part_row(p, 0, bg, m) * 2;
  float2 ml[kShares];
#pragma unroll
  for (int s = 0; s < kShares; ++s) {
    ml[s] = s < p.splits ? *reinterpret_cast<const float2*>(ml_src + s * ml_stride) : make_float2(-INFINITY, 0.0f);
  }
  float mx = -INFINITY;
#pragma unroll
  for (int s = 0; s < kShares; ++s) mx = fmaxf(mx, ml[s].x);
  const float base = mx == -INFINITY ? 0.0f : mx;
  const float* src = p.part_o + part_row(p, 0, bg, m) * p.h + c;
  const long long split_stride = static_cast<long long>(p.batch) * p.kv_heads * p.m_rows * p.h;
  float sum = 0.0f;
  float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  // Predicated loads, not a branch around them, so the compiler issues them all up front.
  float4 v[kShares];
#pragma unroll
  for (int s = 0; s < kShares; ++s) {
    v[s] = s < p.splits ? *reinterpret_cast<const float4*>(src + s * split_stride) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  }
#pragma unroll
  for (int s = 0; s < kShares; ++s) {
    const float w = s < p.splits ? exp2f(ml[s].x - base) : 0.0f;  // an empty share (max -inf) weighs 0
    sum = fmaf(w, ml[s].y, sum);
    acc.x = fmaf(w, v[s].x, acc.x);
    acc.y = fmaf(w, v[s].y, acc.y);
    acc.z = fmaf(w, v[s].z, acc.z);
    acc.w = fmaf(w, v[s].w, acc.w);
  }
  const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
  const int b = bg / p.kv_heads, g = bg % p.kv_heads;
  T* dst = static_cast<T*>(p.out) + o_offset(p, b, g, m);
  store4(dst + c, make_float4(acc.x * inv, acc.y * inv, acc.z * inv, acc.w * inv));
}

template <typename T>
void launch_combine(int splits, unsigned blocks, cudaStream_t stream, const Params& p) {
  static_assert(kMaxSplits == 32, "attn_combine instances cover up to 32 shares");
  if (splits <= 2) {
    attn_combine<T, 2><<<blocks, kCombineThreads, 0, stream>>>(p);
  } else if (splits <= 4) {
    attn_combine<T, 4><<<blocks, kCombineThreads, 0, stream>>>(p);
  } else if (splits <= 8) {
    attn_combine<T, 8><<<blocks, kCombineThreads, 0, stream>>>(p);
  } else if (splits <= 16) {
    attn_combine<T, 16><<<blocks, kCombineThreads, 0, stream>>>(p);
  } else {
    attn_combine<T, 32><<<blocks, kCombineThreads, 0, stream>>>(p);
  }
}

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
// The cluster's merge of its shares (one per block, rank = blockIdx.z), called by every thread
// of every block after its key loop, with the thread's accumulators (rows lane/4 and lane/4 + 8
// of its warp's 16; row sums already added over the quad). Shared memory is reused: red_ml
// [64][2] (max, sum) and red_o [64][HD] f32.
template <int HD, int BK>
__device__ void cluster_merge(const Params& p, unsigned char* smem, float (&o)[HD / 8][4],
                              const float (&row_max)[2], const float (&row_sum)[2], int m0, int b,
                              int g) {
  static_assert(kBf16Rows * (HD + 2) * 4 <= Bf16Tile<HD, BK>::kSmem,
                "merge buffers fit the tile buffers");
  cg::cluster_group cluster = cg::this_cluster();
  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32;
  float* red_ml = reinterpret_cast<float*>(smem);  // [64][2]
  float* red_o = red_ml + kBf16Rows * 2;           // [64][HD]
  cp_async_wait_all();
  __syncthreads();  // every warp is done with the tiles the buffers reuse
  const int r_local[2] = {warp * 16 + lane / 4, warp * 16 + lane / 4 + 8};
  if (lane % 4 == 0) {
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      red_ml[r_local[i] * 2] = row_max[i];
      red_ml[r_local[i] * 2 + 1] = row_sum[i];
    }
  }
  cluster.sync();  // every share's max and sum are out
  // Each row's maximum over the shares; this share's output rescaled to it.
  const int n = p.splits;
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    float mx = -INFINITY;
    for (int r = 0; r < n; ++r) mx = fmaxf(mx, cluster.map_shared_rank(red_ml, r)[r_local[i] * 2]);
    const float base = mx == -INFINITY ? 0.0f : mx;
    const float w = exp2f(row_max[i] - base);  // an empty share (max -inf) weighs 0
    float* dst = red_o + r_local[i] * HD;
#pragma unroll
    for (int d = 0; d < HD / 8; ++d) {
      const int col = d * 8 + 2 * (lane % 4);
      *reinterpret_cast<float2*>(dst + col) = make_float2(o[d][2 * i] * w, o[d][2 * i + 1] * w);
    }
  }
  cluster.sync();  // every share's rescaled output is out
  // This block's slice of the rows: the shares' outputs and weighted sums added in rank order.
  const int rank = static_cast<int>(cluster.block_rank());
  const int per = (kBf16Rows + n - 1) / n;
  const int r_begin = rank * per, r_end = min(kBf16Rows, r_begin + per);
  const int q4 = p.h / 4;  // float4 columns of a row that hold output
  for (int e = tid; e < (r_end - r_begin) * q4; e += kThreads) {
    const int rl = r_begin + e / q4, c = (e % q4) * 4;
    const int m = m0 + rl;
    if (m >= p.m_rows) continue;
    float mx = -INFINITY;
    for (int r = 0; r < n; ++r) mx = fmaxf(mx, cluster.map_shared_rank(red_ml, r)[rl * 2]);
    const float base = mx == -INFINITY ? 0.0f : mx;
    float sum = 0.0f;
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int r = 0; r < n; ++r) {
      const float* ml = cluster.map_shared_rank(red_ml, r) + rl * 2;
      sum = fmaf(exp2f(ml[0] - base), ml[1], sum);
      const float4 v =
          *reinterpret_cast<const float4*>(cluster.map_shared_rank(red_o, r) + rl * HD + c);
      acc.x += v.x, acc.y += v.y, acc.z += v.z, acc.w += v.w;
    }
    const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
    bf16* dst = static_cast<bf16*>(p.out) + o_offset(p, b, g, m) + c;
    const __nv_bfloat162 pair[2] = {__floats2bfloat162_rn(acc.x * inv, acc.y * inv),
                                    __floats2bfloat162_rn(acc.z * inv, acc.w * inv)};
    *reinterpret_cast<uint2*>(dst) = *reinterpret_cast<const uint2*>(pair);
  }
  cluster.sync();  // no block leaves while another still reads its shared memory
}
#endif

// Host side of the cluster merge ------------------------------------------------------------

// A launch of `grid` whose z blocks form one cluster (attr: storage for the attribute).
cudaLaunchConfig_t cluster_config(dim3 grid, int smem, cudaStream_t stream, cudaLaunchAttribute (&attr)[1]) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = dim3(kThreads);
  cfg.dynamicSmemBytes = static_cast<std::size_t>(smem);
  cfg.stream = stream;
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = 1;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = grid.z;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  return cfg;
}

// Whether the current device launches thread-block clusters (compute capability 9.0 or newer).
bool cluster_capable() {
  int dev = 0, major = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return false;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) return false;
  return major >= 9;
}
