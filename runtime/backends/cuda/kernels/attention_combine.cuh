// The split-key attention's combine (attention.cu's part): included by attention.cu only,
// inside its anonymous namespace, where Params, part_row, o_offset and kMaxSplits are defined.
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
  chain_enter();
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
  const float* src = p.part_o + part_row(p, 0, bg, m) * p.h + c;
  const long long split_stride = static_cast<long long>(p.batch) * p.kv_heads * p.m_rows * p.h;
  // Predicated loads, not a branch around them, so the compiler issues them all up front.
  float4 v[kShares];
#pragma unroll
  for (int s = 0; s < kShares; ++s) {
    v[s] = s < p.splits ? *reinterpret_cast<const float4*>(src + s * split_stride) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  }
  const float4 merged = merge_shares<kShares>(ml, v, p.splits);
  const int b = bg / p.kv_heads, g = bg % p.kv_heads;
  T* dst = static_cast<T*>(p.out) + o_offset(p, b, g, m);
  store4(dst + c, merged);
}

template <typename T>
void launch_combine(int splits, unsigned blocks, cudaStream_t stream, const Params& p) {
  static_assert(kMaxSplits <= 32, "attn_combine instances cover up to 32 shares");
  if constexpr (kMaxSplits > 16) {
    if (splits > 16) {
      launch(&attn_combine<T, 32>, dim3(blocks), dim3(kCombineThreads), 0, stream, p);
      return;
    }
  }
  if (splits <= 2) {
    launch(&attn_combine<T, 2>, dim3(blocks), dim3(kCombineThreads), 0, stream, p);
  } else if (splits <= 4) {
    launch(&attn_combine<T, 4>, dim3(blocks), dim3(kCombineThreads), 0, stream, p);
  } else if (splits <= 8) {
    launch(&attn_combine<T, 8>, dim3(blocks), dim3(kCombineThreads), 0, stream, p);
  } else {
    launch(&attn_combine<T, 16>, dim3(blocks), dim3(kCombineThreads), 0, stream, p);
  }
}
