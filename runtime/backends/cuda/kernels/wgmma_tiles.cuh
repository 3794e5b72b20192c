// What the warpgroup GEMM (wgmma_gemm.cu) and the MLP-half kernel (wgmma_mlp.cu) share: the
// tile shapes, the weight tile's layout and the descriptors the multiplies read, and the
// m64n56k16 multiply itself (sm_90a code only).
#pragma once

#include <cuda_bf16.h>

#include "runtime/backends/cuda/kernels/launch.cuh"
#include "runtime/backends/cuda/kernels/ptx.cuh"

namespace edgevla::backends::cuda::wgmma {

using bf16 = __nv_bfloat16;

constexpr int kBm = 64;                 // output features a block
constexpr int kBn = 56;                 // rows a row tile (a block holds 1 to kMaxRowTiles of them)
constexpr int kBk = 64;                 // k a stage
constexpr int kWTile = kBm * kBk;       // elements
constexpr int kATile = kBn * kBk;

// Where element i of a tiled weight [n, k] comes from: tiles of kBm rows × kBk columns, one
// tile (feature block nt, k block kb) after another along k, and inside a tile core matrices of
// 8 rows × 8 columns (16 bytes of bf16) along k first; row r and column c within the tile.
struct TiledPosition {
  long long nt, kb;
  int r, c;
};
__host__ __device__ inline TiledPosition tiled_position(long long i, long long k) {
  const long long kbs = k / kBk;
  const long long tile = i / kWTile;
  const int e = static_cast<int>(i % kWTile);
  return {tile / kbs, tile % kbs, (e / 64 / (kBk / 8)) * 8 + (e % 64) / 8, ((e / 64) % (kBk / 8)) * 8 + e % 8};
}

// The GeGLU tiling of a fused gate|up weight [n, k] (rows [gate (n/2); up (n/2)]): in warp w's 16
// rows of feature block nt, row i < 8 is gate feature nt·32 + 8w + i and row i + 8 its up, so
// that one thread's accumulators hold a gate and its up for the same feature and row.
__host__ __device__ inline long long geglu_source_row(long long nt, int r, long long n) {
  const long long feature = nt * (kBm / 2) + (r / 16) * 8 + (r % 8);
  return (r % 16) < 8 ? feature : n / 2 + feature;
}

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
// The weight tile: core-matrix order, no swizzle (tile_weight_kernel's layout).
__device__ __forceinline__ unsigned long long weight_descriptor(const void* tile) {
  return ptx::wg_descriptor(tile, 128, kBk * 16);
}
// A's box: rows of 128 bytes with the 128-byte swizzle (layout type 1 in bits 62-63), 8-row
// groups 1024 bytes apart; the leading offset is not used by this layout. `at` may be the box
// plus 32 bytes per 16 k (the swizzle is applied to the full address, the box 1024-aligned).
__device__ __forceinline__ unsigned long long swizzled_descriptor(const void* at) {
  constexpr unsigned kStride = 1024;
  return static_cast<unsigned long long>((ptx::smem_addr(at) >> 4) & 0x3fff) | (1ull << 16) |
         (static_cast<unsigned long long>((kStride >> 4) & 0x3fff) << 32) | (1ull << 62);
}
// The producer's walk (one thread; wgmma_gemm, wgmma_heads): the first `ahead` stages' weight tiles
// before the wait for the kernel ahead in a chain (the weights are no kernel's output, so they
// load while it finishes), then every k block's weight tile (once the consumers released its ring
// slot) and A's box. copy_w(slot, i) and copy_a(slot, i) issue copies counted on full[slot], whose
// expected bytes (stage_tx, both copies) this raises first.
template <class CopyW, class CopyA>
__device__ __forceinline__ void produce_stages(int kb_count, int stages, int ahead, unsigned stage_tx,
                                               unsigned long long* full, unsigned long long* empty, CopyW copy_w,
                                               CopyA copy_a) {
  for (int i = 0; i < ahead; ++i) {
    ptx::mbar_expect_tx(&full[i], stage_tx);
    copy_w(i, i);
  }
  chain_wait();
  // Only now may the next kernel of the chain be scheduled (one thread's release counts for the
  // block). Released any earlier, the kernels after it, which release as they start, could be
  // scheduled while kernels before this one still run, and the attention writes its shares
  // before it waits (it reads only the constant prefix there): run 34 call 3 saw different
  // actions when the GEMM released at its start.
  chain_release();
  for (int i = 0; i < kb_count; ++i) {
    const int s = i % stages;
    if (i >= ahead) {
      if (i >= stages) ptx::mbar_wait(&empty[s], ((i / stages) - 1) & 1);
      ptx::mbar_expect_tx(&full[s], stage_tx);
      copy_w(s, i);
    }
    copy_a(s, i);
  }
}

// k slices in a cluster (wgmma_gemm, wgmma_heads): a consumer thread's 28 sums into slot `slot` of
// the [slices][128][28] region at `sums` in the block of cluster rank `to` (sums and bar: this
// block's addresses of the same places), counted in bytes on that block's barrier. The caller has
// waited for the cluster barrier that follows the barriers' set-up.
__device__ __forceinline__ void send_slice_sums(const float (&acc)[28], float* sums, int slot, int tid,
                                                unsigned long long* bar, unsigned to) {
  const unsigned local = ptx::smem_addr(sums + (static_cast<long long>(slot) * 128 + tid) * 28);
  const unsigned remote = ptx::cluster_map(local, to), remote_bar = ptx::cluster_map(ptx::smem_addr(bar), to);
#pragma unroll
  for (int i = 0; i < 28; i += 4) ptx::store_async4(remote + i * 4, acc[i], acc[i + 1], acc[i + 2], acc[i + 3], remote_bar);
}
// The receiver adds kCount slots' sums to its own in slot order (deterministic: rank order).
template <int kCount>
__device__ __forceinline__ void add_slice_sums(float (&acc)[28], const float* sums, int tid) {
#pragma unroll
  for (int r = 0; r < kCount; ++r) {
    const float4* src = reinterpret_cast<const float4*>(sums + (static_cast<long long>(r) * 128 + tid) * 28);
#pragma unroll
    for (int i = 0; i < 7; ++i) {
      const float4 v = src[i];
      acc[4 * i] += v.x, acc[4 * i + 1] += v.y, acc[4 * i + 2] += v.z, acc[4 * i + 3] += v.w;
    }
  }
}

__device__ __forceinline__ void wgmma_m64n56(float (&d)[28], unsigned long long a, unsigned long long b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n56k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, "
      "%13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27}, %28, %29, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),
        "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),
        "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),
        "+f"(d[25]), "+f"(d[26]), "+f"(d[27])
      : "l"(a), "l"(b));
}
#endif

}  // namespace edgevla::backends::cuda::wgmma
