// What attention.cu's kernels and the warpgroup kernel (attention_wg.cu, built for sm_90a)
// share: the launch parameters and the device helpers that read them. Both files include it at
// namespace scope, so Params is one type and attention.cu can hand it to attention_wg.cu's launcher.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace edgevla::backends::cuda::attn {

// What the kernels read; strides in elements.
struct Params {
  const void* q;
  void* out;
  long long ldq, q_batch, ldo, o_batch;
  const void* ak;
  const void* av;
  long long a_ld, a_batch;
  const void* bk;
  const void* bv;
  long long b_ld, b_batch;
  const std::int32_t* a_len;
  const std::int32_t* b_limit;
  int a_max, b_len;
  int rows, kv_heads, group, h, m_rows;  // m_rows: stacked rows per kv head (rows · group)
  int batch, splits;
  float scale_log2;
  float* part_o;   // [splits][batch · kv_heads][m_rows][h]
  float* part_ml;  // [splits][batch · kv_heads][m_rows][2]: running max (log2 units), sum
  bool a_constant;  // block a is read before the chain's wait (AttentionArgs::a_constant)
  bool rotate;      // each row tile walks its share from a different tile (AttentionArgs::rotate)
  bool cluster;     // the shares of a row tile are one cluster and merge in it (attn_bf16 only)
  const float2* rope;  // q rows and block b keys rotated by these (cos, sin) rows (attn_bf16 only)
};

// Device helpers.

__device__ __forceinline__ int clamped_a_len(const Params& p) {
  if (p.a_len == nullptr) return p.a_max;
  return min(max(*p.a_len, 0), p.a_max);
}

// Visible keys of block b for stacked row m (m < m_rows).
__device__ __forceinline__ int b_visible(const Params& p, int m) {
  if (p.b_limit == nullptr || m >= p.m_rows) return p.b_len;
  return min(max(p.b_limit[m / p.group], 0), p.b_len);
}

// This block's share [begin, end) of the key tiles (na of block a, nb of block b).
__device__ __forceinline__ void split_range(int tiles, int splits, int& begin, int& end) {
  const int per = (tiles + splits - 1) / splits;
  begin = min(tiles, static_cast<int>(blockIdx.z) * per);
  end = min(tiles, begin + per);
}

// The key tile at walk position t of the share [begin, end): t itself, or with p.rotate the
// share rotated by the block's row tile, so that the blocks of a call (which start together) do
// not all read the same tile of K and V at the same moment. The online softmax takes the tiles in
// any order.
__device__ __forceinline__ int walk_tile(const Params& p, int t, int begin, int end) {
  if (!p.rotate) return t;
  const int n = end - begin;
  int w = t - begin + static_cast<int>(blockIdx.x % static_cast<unsigned>(n));
  if (w >= n) w -= n;
  return begin + w;
}

__device__ __forceinline__ long long q_offset(const Params& p, int b, int g, int m) {
  const int row = m / p.group;
  const int head = g * p.group + m % p.group;
  return b * p.q_batch + row * p.ldq + static_cast<long long>(head) * p.h;
}
__device__ __forceinline__ long long o_offset(const Params& p, int b, int g, int m) {
  const int row = m / p.group;
  const int head = g * p.group + m % p.group;
  return b * p.o_batch + row * p.ldo + static_cast<long long>(head) * p.h;
}
__device__ __forceinline__ long long part_row(const Params& p, int split, int bg, int m) {
  return (static_cast<long long>(split) * p.batch * p.kv_heads + bg) * p.m_rows + m;
}

// The warpgroup kernel (attention_wg.cu): head dim 256 (or, in the bulk-copy form with block a
// only, head dims 65-128 padded to 128), bf16, 64 stacked rows a warpgroup and one or two
// warpgroups a block (`groups`), 64-key tiles, q·kᵀ of the next tile and p·v of this one in flight
// while the softmax runs; block b (with its limits) only in the bulk-copy form. Runs on compute
// capability 9.0 only, from a build with sm_90a code (wg_built()).
constexpr int kWgKeys = 64;
constexpr int wg_rows(int groups) { return 64 * groups; }
// The head dim a call's head dim h runs at (256 or 128; 0: none).
constexpr int wg_head_dim(long long h) { return h == 256 ? 256 : h > 64 && h <= 128 && h % 8 == 0 ? 128 : 0; }
bool wg_built();
// Its shared memory a block at head dim hd (wg_head_dim), in the cp.async form or (tma) the
// bulk-tensor-copy form.
int wg_smem_bytes(int groups, bool tma, int hd = 256, int keys = kWgKeys);
// Whether the call's K and V (blocks a and b) can come by bulk tensor copies: 16-byte aligned
// bases and strides, and a driver with the encoder (checked without encoding the maps).
bool wg_tma_ready(const Params& p);
// Launches it (chained, launch.cuh) on grid (row tiles, batch · kv heads, splits); with tma, K and
// V come by bulk tensor copies where wg_tma_ready, else by cp.async (block a only:
// cudaErrorNotSupported for a call with block b, or at head dims below 256).
// keys: the walk tile, 64 keys or 128 (the trimmed form with one warpgroup and one share only;
// else 64).
cudaError_t launch_wg(const Params& p, dim3 grid, cudaStream_t stream, int groups, bool tma, int roles = 0,
                      bool qk_trim = false, int keys = kWgKeys);

}  // namespace edgevla::backends::cuda::attn
