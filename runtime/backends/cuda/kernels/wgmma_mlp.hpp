// An MLP half as one kernel on Hopper's warpgroup multiplies: parts = h · W2ᵀ in f32 k parts for
// the norm after it (ResidualParts), for at most 56 rows, with h = gelu_tanh(x · W1ᵀ + b1) (GR00T's
// ff1 → GELU → ff2) or, `geglu`, h = gelu_tanh(gate) · up of a fused gate|up W1 (pi0.5's expert:
// gate|up → GeGLU → down). The same result, bit for bit, as wgmma_gemm's kGelu (or kGeglu)
// product into bf16 h followed by its kF32Parts product over h in hidden / (64 · cluster) parts,
// without h leaving the chip and with one launch instead of two.
//
// The grid is hidden / 64 blocks in clusters of `cluster` blocks. Block r of cluster c makes h's
// 64 features (c · cluster + r) · 64 ... as wgmma_gemm's one-row-tile block does (one producer
// thread streaming W1's tiles and x's boxes through an 8-stage ring, one consumer warpgroup),
// rounds them to bf16 after bias and GELU, and sends them to every block of its cluster (bulk
// copies between shared memories, counted on the receiver's barrier): each block then holds the
// cluster's 64 · cluster features of h. Then it multiplies them by W2's tiles for its
// n_out / cluster outputs and the cluster's k slice of W2, which the producer streams through the
// same ring (so they load while h is made and sent), and writes part c of the output.
//
// Not yet measured on a GPU (built in run 39 after the device time; notes.md "Run 39"). Only
// compute capability 9.0 runs it, from sm_90a code (wgmma_gemm_available()).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "runtime/backends/cuda/kernels/common.hpp"

namespace edgevla::backends::cuda {

struct WgmmaMlpArgs {
  const void* x = nullptr;         // bf16 [m, d], row stride ldx (a multiple of 8), 16-byte aligned
  std::int64_t m = 0, d = 0, ldx = 0;
  const void* w1_tiled = nullptr;  // wgmma_tile_weight's output for W1 [hidden, d], kGelu
                                   // (geglu: [2 · hidden, d], gate rows then up rows, kGeglu)
  const float* b1 = nullptr;       // f32 [hidden], or null (geglu: null)
  bool geglu = false;
  std::int64_t hidden = 0;
  const void* w2_tiled = nullptr;  // wgmma_tile_weight's output for W2 [n_out, hidden], kF32Parts
  std::int64_t n_out = 0;
  float* parts = nullptr;          // f32 [hidden / (64 · cluster)][m, ldp], parts part_stride floats apart
  std::int64_t ldp = 0, part_stride = 0;
  int cluster = 12;                // blocks a cluster (2 to 12)
};

// Parts the kernel writes for these shapes: hidden / (64 · cluster).
int wgmma_mlp_parts(std::int64_t hidden, int cluster);
// Whether the shapes fit it: 1 to 56 rows; d and hidden multiples of 64; hidden a multiple of
// 64 · cluster; n_out a multiple of 64 · cluster, at most 4 · 64 outputs a block.
bool wgmma_mlp_fits(std::int64_t m, std::int64_t d, std::int64_t hidden, std::int64_t n_out, int cluster);
// How many of its clusters the current device runs at once (cudaOccupancyMaxActiveClusters; 0
// where it cannot say): fewer than the grid's clusters means a second wave.
int wgmma_mlp_resident_clusters(std::int64_t m, std::int64_t d, std::int64_t hidden, std::int64_t n_out, int cluster,
                                bool geglu = false);
// Enqueues it on `stream` (chained to the kernel before it inside a DependentLaunchScope, as
// wgmma_gemm); no allocation, no synchronisation (capturable).
Status wgmma_mlp(cudaStream_t stream, const WgmmaMlpArgs& args);

}  // namespace edgevla::backends::cuda
