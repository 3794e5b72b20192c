// A few-rows GEMM on Hopper's warpgroup multiplies, for the action heads' projections (at most
// 56 rows): D[m, n] = A[m, k] · Wᵀ, A and W bf16, f32 accumulation, D bf16 (optionally with a
// bias, GELU, the GeGLU of a fused gate|up, or RoPE applied in the epilogue) or f32 k parts.
// Both action heads run their projections on it by default on Hopper (wgmma_plan.hpp).
//
// The weight is laid out once (wgmma_tile_weight) as 64 × 64 tiles in core-matrix order (8 rows ×
// 16 bytes contiguous), contiguous per (64 output features, 64 k), so that a block's pipeline
// stage is one 8 KB bulk copy; a block owns 64 output features for all rows: one producer thread
// streams its weight tiles (and A's 56 × 64 box beside each) through an 8-stage ring, one
// warpgroup issues wgmma.m64n56k16 on each stage.
//
// Where it stands (bench/results/issue9_h200, notes.md "Run 33" and "Run 34"): with A also laid
// out in tiles and fetched by bulk copies, it read pi0.5's gate|up (16.8 MB) in 6.3 µs against
// cuBLASLt's 7.0, and with the GeGLU epilogue in 7.25 against 8.1 for GEMM then GeGLU (run 33,
// calls 5-6). Here A is row-major, as the norms write it, and each stage fetches its 56 × 64 box
// with one bulk tensor copy (a tensor map made per call on the host, so a captured graph keeps
// it) in the 128-byte swizzled layout the multiplies read; copying it with the producer warp's
// loads and stores, or its cp.async copies, was 2-3x slower (run 33 call 7, run 34 call 1). In
// the kernel bench (run 34 call 2) against cuBLASLt: o 3.8 against 5.9 µs and down 4.8 against
// 7.2 in 8 k parts, gate|up 6.7 against 7.1, q|k|v 5.3 against 5.0; chained in the heads it took
// pi0.5's head from 8.2 to 6.5 ms (run 34 call 4). Run 35: the GeGLU form 8.4 against 10.7 µs
// once GELU's division took the fast path (call 5); GR00T's cross q in four k slices 6.5 against
// 7.0 µs (call 3).
//
// kGeglu: W's rows are [gate (n/2); up (n/2)], and the tiling pairs them so that each thread
// holds a gate and its up for the same feature and row: D[m, n/2] = gelu_tanh(gate) · up, the
// gate and up rounded to bf16 first (as a bf16 gate|up GEMM followed by the geglu kernel).
// kF32Parts: k is split into k_parts near-equal parts (of whole 64-wide blocks), each written in
// f32 to its own D (part p at d + p · part_stride floats), for the narrow projections whose
// feature blocks alone would leave most multiprocessors idle; the norm after them adds the parts
// (ResidualParts), as it does cuBLASLt's. kNone and kGelu add an optional f32 bias; kGelu then
// applies GELU-tanh (GR00T's ff1), both rounded to bf16 once; kSilu and kRelu the same with SiLU
// or ReLU (GR00T's action encoder and decoder). kF32: one f32 output, D = A · Wᵀ + bias + addend
// (an optional f32 [m, n] table of row stride ld_add, which may be D itself: a residual add).
// kNorm (WgmmaNorm): the residual add and the row norm after it, done by the GEMM that produces
// the residual's update (the heads' o and down projections): the k slices' sums (in a cluster) or
// k parts (in scratch, added by the last of a feature block's parts to arrive), in order as the
// norm kernels add k parts, plus the bias go into the f32 residual stream x (gated or not), and D
// gets the normalised rows in bf16; the feature blocks exchange their rows' partial
// sums through global memory, so every block of the call must be resident at once (checked at
// launch from the driver's occupancy figures, which do not know of an MPS client's share of the
// multiprocessors: do not ask for it there; at most 56 rows). Slower than k parts + the norm kernel in the chained heads (pi0.5's
// head +3.3 to +3.9 ms, bench/results/issue9_h200 run 41), so the engines take it only when asked. kRope (q|k|v): the tiling pairs
// each rotated dim with its partner in one thread's rows, and the epilogue rotates q and k as the
// rope kernel would after the GEMM (bf16-rounded product, f32 rotation, rounded again).
//
// Only compute capability 9.0 runs it, from code built for sm_90a; wgmma_gemm_available() says
// whether this build and the current device do. n and k multiples of 64 (kGeglu: n of 128).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "runtime/backends/cuda/kernels/common.hpp"

namespace edgevla::backends::cuda {

// Rows of one row tile: the action heads' products (at most this many rows) run one a block, with
// k slices where they help; longer products (the backbones') take two to four row tiles a block
// (224 rows) and as many blocks along the rows as they need, without k slices.
inline constexpr std::int64_t kWgmmaMaxRows = 56;
inline constexpr std::int64_t kWgmmaMaxAllRows = 1 << 20;

// Row tiles a block takes for m rows (1 to 4).
int wgmma_row_tiles(std::int64_t m);

enum class WgmmaEpilogue { kNone, kGeglu, kF32Parts, kGelu, kRope, kSilu, kRelu, kF32, kNorm };

// kNorm: which norm follows the residual add, per row of x after it (x̂ = x · rsqrt(mean(x²) + eps)):
//   kRms:      x += r,              D = x̂ · (1 + weight)           (Gemma's RMSNorm: rms_norm)
//   kGatedAda: x += r · gate,       D = x̂ · (1 + weight) + shift   (pi0.5: gated_add_ada_rms_norm)
// where r = A · Wᵀ (+ bias), its k slices added in order, as the norm kernels add k parts (so x is
// the same bits as theirs; D may differ from theirs by the sum of squares' order, a bf16 step in
// rare elements).
enum class WgmmaNormKind { kRms, kGatedAda };

struct WgmmaNorm {
  WgmmaNormKind kind = WgmmaNormKind::kRms;
  float* x = nullptr;             // f32 [m, n], row stride ldx: the residual stream, updated in place
  std::int64_t ldx = 0;
  const float* gate = nullptr;    // kGatedAda: f32 [n], or null for an ungated add
  const float* weight = nullptr;  // f32 [n]: w (kRms) or scale (kGatedAda)
  const float* shift = nullptr;   // kGatedAda: f32 [n]
  float eps = 1e-6f;
  // wgmma_norm_scratch_bytes(n) bytes of device memory, zeroed once before its first call (it
  // is left zeroed); one call at a time may use it.
  void* scratch = nullptr;
};

// Bytes of a kNorm call's scratch for n outputs: the rows' partial sums of each feature block and
// the counters the blocks meet on.
std::size_t wgmma_norm_scratch_bytes(std::int64_t n);

// kRope: the first `features` outputs are heads of head_dim (a multiple of 64) that RoPE rotates
// (dim d with d + head_dim/2, by the angle (first_pos + row) · inv_freq[d], as kernels.hpp's rope);
// the outputs past them (the values) are written as they are.
struct WgmmaRope {
  std::int64_t features = 0, head_dim = 0;
  const std::int32_t* first_pos = nullptr;  // device
  const float* inv_freq = nullptr;          // device [head_dim / 2]
  // Optional: the angles' (cos, sin) for the call's rows, kernels.hpp's rope_table (device, f32
  // [m][head_dim / 2][2], 16-byte aligned), read instead of computed (the same values).
  const float* table = nullptr;
};

// Whether the build holds sm_90a code for it and the current device is of compute capability 9.0.
bool wgmma_gemm_available();

// Whether a weight [n, k] (and rows m) fits the kernel's shapes.
bool wgmma_gemm_fits(std::int64_t m, std::int64_t n, std::int64_t k, WgmmaEpilogue epilogue);

// Bytes of the tiled copy of a bf16 weight [n, k].
std::size_t wgmma_tiled_bytes(std::int64_t n, std::int64_t k);

// Lays out the row-major bf16 weight w [n, k] (row stride ld elements) for the kernel into `out`
// (wgmma_tiled_bytes, 16-byte aligned), on `stream`.
// kRope: `rope`'s features and head_dim say which rows pair up.
Status wgmma_tile_weight(cudaStream_t stream, const void* w, std::int64_t n, std::int64_t k, std::int64_t ld,
                         WgmmaEpilogue epilogue, void* out, const WgmmaRope& rope = {});

struct WgmmaGemmArgs {
  const void* a = nullptr;        // bf16 [m, k], row stride lda (a multiple of 8), 16-byte aligned
  std::int64_t m = 0, k = 0, lda = 0;
  const void* w_tiled = nullptr;  // wgmma_tile_weight's output for [n, k] and this epilogue
  std::int64_t n = 0;
  WgmmaEpilogue epilogue = WgmmaEpilogue::kNone;
  void* d = nullptr;              // bf16 [m, n] (kGeglu: [m, n / 2]; kF32Parts, kF32: f32), row stride ldd
  std::int64_t ldd = 0;
  const float* bias = nullptr;     // kNone / kGelu / kSilu / kRelu / kRope / kF32: f32 [n], or null
  const float* addend = nullptr;   // kF32 only: f32 [m, n] added to the output (row stride ld_add), or null
  std::int64_t ld_add = 0;
  WgmmaRope rope;                 // kRope
  WgmmaNorm norm;                 // kNorm (D: bf16 [m, n], the normalised rows)
  int k_parts = 1;                // kF32Parts: 1 to k / 64; kNorm: 1 to 4 (then no k_split)
  std::int64_t part_stride = 0;   // floats between parts (at least (m - 1) · ldd + n)
  // kNone, kGelu, kSilu, kRelu, kF32, kGeglu, kNorm: k split into this many slices (1 to kWgmmaMaxSplit, at most k / 64),
  // the blocks of one feature block a thread-block cluster whose leader adds the slices' sums
  // (over distributed shared memory, in rank order) before its epilogue: for the projections
  // whose feature blocks alone leave most multiprocessors idle.
  int k_split = 1;
};

inline constexpr int kWgmmaMaxSplit = 4;

// How many k slices a bf16-output product of a weight [n, k] should take on `multiprocessors`:
// none unless its feature blocks fill at most a quarter of them; then the most (up to max_split)
// that keep every block in one wave, with at least two k blocks a slice.
int wgmma_k_split(std::int64_t n, std::int64_t k, int max_split, int multiprocessors);

// How many k parts a kF32Parts product of a weight [n, k] should take on `multiprocessors`: about
// one block a multiprocessor, at least two k blocks a part, at most max_parts.
int wgmma_k_parts(std::int64_t n, std::int64_t k, int max_parts, int multiprocessors);

// Whether a kNorm call of m rows and n outputs in k_split slices or k_parts parts fits: at most 56
// rows, at most 4 parts and not both, and the current device holds all of its n / 64 feature
// blocks (clusters of k_split) or all its blocks (k parts) at once.
bool wgmma_norm_fits(std::int64_t m, std::int64_t n, int k_split, int k_parts = 1);

// How many weight stages a block copies before it waits for the kernel ahead in a chain (0 to 8,
// the ring's depth; EDGEVLA_WGMMA_AHEAD, read once a process; default 4, measured best of 2-8).
int wgmma_stages_ahead();

// Whether the weights' bulk copies mark their L2 lines first to evict (EDGEVLA_WGMMA_EVICT_FIRST,
// 0 or 1, read once a process; default 1): a head streams ~0.6 GB of weights a step through L2,
// which otherwise evicts what every step reads again (activations, the prefix cache, cross keys).
bool wgmma_weights_evict_first();

// Enqueues the product on `stream`; no allocation, no synchronisation (capturable).
Status wgmma_gemm(cudaStream_t stream, const WgmmaGemmArgs& args);

}  // namespace edgevla::backends::cuda
