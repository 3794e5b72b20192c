// The split-key attention's combine (attention.cu's part): included by attention.cu only,
// inside its anonymous namespace, where Params, part_row, o_offset, kBf16Rows and kMaxSplits are
// defined.
#pragma once

// Combine of split-key partials ---------------------------------------------------------------

__device__ __forceinline__ void store4(float* dst, float4 v) { *reinterpret_cast<float4*>(dst) = v; }
__device__ __forceinline__ void store4(bf16* dst, float4 v) {
  __nv_bfloat162 pair[2] = {__floats2bfloat162_rn(v.x, v.y), __floats2bfloat162_rn(v.z, v.w)};
  *reinterpret_cast<uint2*>(dst) = *reinterpret_cast<const uint2*>(pair);
}

// One (stacked row, 4 output dims) of the merge: weighs every share by its max and sum and
// merges them. All of a thread's loads are independent, so the shares arrive together instead
// of one round trip after another. kShares bounds the shares a thread holds: the caller picks
// the smallest instance that covers the call's split count (holding 32 float4 shares for a
// call of 2 took ~200 registers a thread and made the combine 4-5x slower than its bytes).
// The loads go to L2 (ld.global.cg): in the attention kernel's own merge the partials were
// written by other blocks of the same launch.
template <typename T, int kShares>
__device__ __forceinline__ void combine_one(const Params& p, long long row, int c) {
  const int m = static_cast<int>(row % p.m_rows);
  const int bg = static_cast<int>(row / p.m_rows);

  // Every share's max and sum first, all loads in flight together (a loop with a run-time trip
  // count would wait for each in turn), then every share's partial output likewise.
  const long long ml_stride = static_cast<long long>(p.batch) * p.kv_heads * p.m_rows * 2;
  const float* ml_src = p.part_ml + part_row(p, 0, bg, m) * 2;
  float2 ml[kShares];
#pragma unroll
  for (int s = 0; s < kShares; ++s) {
    ml[s] = s < p.splits ? __ldcg(reinterpret_cast<const float2*>(ml_src + s * ml_stride))
                         : make_float2(-INFINITY, 0.0f);
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
    v[s] = s < p.splits ? __ldcg(reinterpret_cast<const float4*>(src + s * split_stride))
                        : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
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

// The combine kernel: one thread per (stacked row, 4 output dims) of the whole call.
constexpr int kCombineThreads = 256;

template <typename T, int kShares>
__global__ void __launch_bounds__(kCombineThreads) attn_combine(const Params p) {
  chain_enter();
  const int per_row = p.h / 4;
  const long long total = static_cast<long long>(p.batch) * p.kv_heads * p.m_rows * per_row;
  const long long i = static_cast<long long>(blockIdx.x) * kCombineThreads + threadIdx.x;
  if (i >= total) return;
  combine_one<T, kShares>(p, i / per_row, static_cast<int>(i % per_row) * 4);
}

// The merge inside the attention kernel (Params::merge_slot >= 0) ------------------------------
//
// When every block of the call is resident at once (one wave, launched cooperatively), the
// shares of a row tile need no second kernel: each block writes its partial, waits at a barrier
// of the tile's blocks, then merges a 1/splits part of the tile's rows and dims from all the
// partials. The barrier's two words (arrivals, generation) live in g_merge_slots, which start
// at zero when the module loads; the last block to arrive resets the arrivals and advances the
// generation, so every call leaves its words ready for the next one, whatever its shape.
constexpr int kMergeMaxShares = 16;   // splits a block's merge covers
// Below head dim 128 the kernel is built for two blocks a multiprocessor (~128 registers a
// thread), where holding 16 shares spills: its merge covers 8.
constexpr int kMergeNarrowShares = 8;
constexpr int kMergeWideHd = 128;
constexpr int kMergeSlotTiles = 128;  // (row tile, sequence · kv head) pairs of one scratch
constexpr int kMergeScratches = 256;  // scratch buffers given barrier words, per device
__device__ unsigned int g_merge_slots[kMergeScratches * kMergeSlotTiles * 2] = {};

// Returns once every block of this row tile has written its partial (all threads of the block
// call it; the partials' stores are made visible to the device before arriving).
__device__ __forceinline__ void shares_barrier(const Params& p) {
  unsigned int* slot = g_merge_slots + p.merge_slot + 2 * (blockIdx.y * gridDim.x + blockIdx.x);
  __syncthreads();
  if (threadIdx.x == 0) {
    volatile unsigned int* gen = slot + 1;
    const unsigned int mine = *gen;  // read before arriving: the last arrival changes it
    __threadfence();
    const unsigned int before = atomicAdd(slot, 1u);
    if (before == static_cast<unsigned int>(p.splits) - 1) {
      atomicExch(slot, 0u);
      __threadfence();
      atomicAdd(slot + 1, 1u);
    } else {
      while (*gen == mine) {
      }
    }
    __threadfence();
  }
  __syncthreads();
}

// This block's part of its row tile's merge (after shares_barrier).
template <typename T, int kShares>
__device__ __forceinline__ void merge_tile(const Params& p, int bg, int m0, int threads) {
  const int per_row = p.h / 4;
  const int items = min(kBf16Rows, p.m_rows - m0) * per_row;
  const int per = (items + p.splits - 1) / p.splits;
  const int begin = static_cast<int>(blockIdx.z) * per;
  const int end = min(items, begin + per);
  for (int i = begin + static_cast<int>(threadIdx.x); i < end; i += threads) {
    combine_one<T, kShares>(p, static_cast<long long>(bg) * p.m_rows + m0 + i / per_row, (i % per_row) * 4);
  }
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
