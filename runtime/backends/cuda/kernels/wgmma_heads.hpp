// A head's projections and its attention in one kernel, on Hopper's warpgroup multiplies: for
// GR00T's DiT, whose attention runs 51 rows at head dim 48, so that the attention kernel and its
// hand-over (bench/results/issue9_h200 run 44 call 2: 5.4 µs a block and step of the head's 4.7 ms)
// fold into the projection before it. On the H200 it took GR00T's 4-step head from 4.39-4.42 to
// 3.99-4.05 ms at one view (run 53: self blocks −0.18 ms, cross blocks −0.22).
//
// One thread-block cluster a head:
//   kSelf:  three blocks, one for each of the head's q, k and v over all of k (the weight [q; k; v]
//           of [3 · heads · hd, k]). Each block's product, plus its bias, rounded to bf16 (as the
//           GEMM's output), goes to the leader's shared memory (k and v over distributed shared
//           memory), which then runs the head's attention over the m rows, unmasked.
//   kCross: four blocks (three or two where the device cannot hold every head's cluster of four at
//           once: wgmma_heads_cross_split), each a slice of k of the head's q (the weight
//           [heads · hd, k]); the leader adds the others' sums in rank order (as wgmma_gemm's k
//           slices), adds the bias,
//           rounds to bf16, and attends to the first *key_count rows of the head's keys and values
//           (bf16, ld_kv apart, head h's at column h · hd), which it copies into shared memory
//           before its product is done: no kernel of a chain writes them (computed once a run).
// The output is bf16 [m, heads · hd] (row stride ldo), each head's hd columns at h · hd, as the
// attention kernel writes it. Scores are scaled by `scale`; softmax in f32 on the tensor cores'
// f32 sums, the probabilities rounded to bf16 for p · v (as attention.hpp's bf16 kernel).
//
// The weight is laid out once (wgmma_heads_tile_weight) in tiles of hd rows × 64 k, core-matrix
// order (wgmma_gemm's layout with hd rows instead of 64), one group of hd output rows after another,
// so that a block's stage is one bulk copy of hd · 128 bytes; the multiply is m64n56k16 with the
// rows past hd not used.
//
// Only compute capability 9.0 runs it (sm_90a code): wgmma_gemm_available() says whether this
// build and device do. hd 32 or 48, rows 1 to 56, k a multiple of 64 (at least 256 for kCross).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "runtime/backends/cuda/kernels/common.hpp"

namespace edgevla::backends::cuda {

enum class WgmmaHeadsMode { kSelf, kCross };

// Keys and values the kCross leader holds in shared memory at once (it walks longer ones in
// chunks of this many).
inline constexpr std::int64_t kWgmmaHeadsKeyChunk = 256;

// Whether rows m, heads of head_dim and k inputs fit the kernel.
bool wgmma_heads_fits(std::int64_t m, std::int64_t heads, std::int64_t head_dim, std::int64_t k, WgmmaHeadsMode mode);

// kCross: how many blocks a head's cluster takes (k slices: 4, or 3 or 2 where the current device
// cannot hold every head's cluster of 4 at once).
int wgmma_heads_cross_split(std::int64_t heads, std::int64_t head_dim);

// Lays out the row-major bf16 weight w [n, k] (row stride ld; n a multiple of head_dim) in groups
// of head_dim rows into `out` (n · k bf16, 16-byte aligned), on `stream`.
Status wgmma_heads_tile_weight(cudaStream_t stream, const void* w, std::int64_t n, std::int64_t k, std::int64_t ld,
                               std::int64_t head_dim, void* out);

struct WgmmaHeadsArgs {
  WgmmaHeadsMode mode = WgmmaHeadsMode::kSelf;
  const void* a = nullptr;  // bf16 [m, k], row stride lda (a multiple of 8), 16-byte aligned
  std::int64_t m = 0, k = 0, lda = 0;
  const void* w_tiled = nullptr;  // wgmma_heads_tile_weight's output: [3 · heads · hd, k] (kSelf), [heads · hd, k]
  const float* bias = nullptr;    // f32 [the weight's rows], or null
  std::int64_t heads = 0, head_dim = 0;
  float scale = 1.0f;
  // kCross: key t of head h at keys + t · ld_kv + h · hd (values alike), *key_count of them (device).
  const void* keys = nullptr;
  const void* values = nullptr;
  std::int64_t ld_kv = 0;
  const std::int32_t* key_count = nullptr;
  void* out = nullptr;  // bf16 [m, heads · hd], row stride ldo
  std::int64_t ldo = 0;
};

// Enqueues it on `stream` (chained inside a DependentLaunchScope); no allocation, no
// synchronisation (capturable).
Status wgmma_heads_attention(cudaStream_t stream, const WgmmaHeadsArgs& args);

}  // namespace edgevla::backends::cuda
