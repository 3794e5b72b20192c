// pi0.5's action expert, every layer of one denoising step, as one persistent kernel.
//
// Run as separate kernels, a step of the expert is ~180 launches (18 layers × norm, q|k|v GEMM,
// RoPE, attention, combine, o GEMM, gated norm, gate|up GEMM, GeGLU, down GEMM) over only 50
// rows: each GEMM is one partial wave that pays its pipeline fill and tail, and the small
// kernels between them leave the memory system idle. Here one block per multiprocessor runs
// every phase of every layer, with a grid-wide barrier between phases:
//   norm (gated residual + adaRMS) → q|k|v GEMM → sum + RoPE → attention (64-key chunks) →
//   combine → o GEMM → gated norm → gate|up GEMM → GeGLU → down GEMM → next layer
// and, after the last layer, the final gated norm. The GEMMs multiply bf16 on tensor cores
// (mma.sync m16n8k16, f32 accumulation) straight from global memory, split over
// (column group × k share) tasks sized so that every multiprocessor streams weights; k shares
// leave f32 partial sums that the next phase adds in a fixed order (deterministic). Before each
// barrier that precedes a GEMM, a block can ask L2 for its next weights, so the read starts
// while the barrier waits. The rounding points are those of the separate kernels (bf16 after
// each GEMM that feeds another, f32 residual stream), so both paths agree to bf16 rounding.
//
// bf16 only (`precision: f32` keeps the separate kernels); supported shapes are checked by
// fused_expert_unsupported.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/backends/cuda/kernels/common.hpp"

namespace edgevla::backends::cuda {

// One expert layer's weights, bf16 [out, in] row-major (the checkpoint's layout).
struct FusedExpertLayer {
  const void* qkv = nullptr;      // [(H + 2K)·h, E]
  const void* o = nullptr;        // [E, H·h]
  const void* gate_up = nullptr;  // [2F, E]: gate rows, then up rows
  const void* down = nullptr;     // [E, F]
};

struct FusedExpertShape {
  int rows = 0;  // S, the suffix rows (≤ 64)
  int width = 0, heads = 0, kv_heads = 0, head_dim = 0, mlp = 0, layers = 0;
  std::int64_t max_prefix = 0;  // rows of the prefix cache (its row stride)
};

// How one GEMM is split: column groups of nb·8 columns (nb 4 or 8) × ks shares of k, kc each.
struct FusedGemmSplit {
  int nb = 4, ks = 1, kc = 0;
};

// Everything the kernel reads and writes; built once per engine (FusedExpert::make) and
// completed per step with the step's modulations.
struct FusedExpertArgs {
  FusedExpertShape shape;
  const FusedExpertLayer* layers = nullptr;  // device array [layers]
  const float* mods = nullptr;  // this step's modulations f32 [2L + 1, 3, E] (scale | shift | gate)
  float* x = nullptr;           // residual f32 [S, E]: the embedded actions on entry, updated
  void* ys = nullptr;           // bf16 [S, E]: the last norm's output on exit (final adaRMS)
  void* qkv = nullptr;          // bf16 [S, (H + 2K)·h]
  void* o = nullptr;            // bf16 [S, H·h]
  void* g = nullptr;            // bf16 [S, F]
  float* partials = nullptr;    // f32 k-share sums
  float* attn = nullptr;        // f32 attention chunk partials
  const void* cache = nullptr;  // bf16 [L, 2, max_prefix, K, h]
  const std::int32_t* prefix_len = nullptr;  // valid cache rows, on the device
  const float* inv_freq = nullptr;           // f32 [h/2]
  float scale = 1.0f, eps = 1e-6f;
  unsigned* barrier = nullptr;  // two zeroed words, owned by the engine
  bool prefetch = false;  // L2 prefetch of the next weights before a barrier (measured slower on the H200)
  unsigned long long* trace = nullptr;  // optional: fused_expert_trace_slots × (grid + 1) words
  int grid = 0;
  std::size_t smem = 0;
  FusedGemmSplit split_qkv, split_o, split_gate_up, split_down;
};

// Why this shape cannot run fused (empty when it can).
std::string fused_expert_unsupported(const FusedExpertShape& s);

// Plans the grid (one block per multiprocessor of `device`) and the GEMM splits, and returns
// the workspace each of `partials` and `attn` needs (bytes) in the two out-parameters.
Expected<FusedExpertArgs> fused_expert_plan(const FusedExpertShape& s, int device, std::size_t* partial_bytes,
                                            std::size_t* attn_bytes);

// Phases (and grid barriers) per layer: norm, q|k|v GEMM, sum + RoPE, attention, combine,
// o GEMM, gated norm, gate|up GEMM, GeGLU, down GEMM.
inline constexpr int kFusedPhasesPerLayer = 10;

// Timing trace (diagnostic): each block's arrival at every barrier and block 0's release, in
// device nanoseconds; slots per step, and a one-line summary per phase kind.
int fused_expert_trace_slots(const FusedExpertShape& s);
std::string fused_expert_trace_report(const FusedExpertShape& s, int grid, const unsigned long long* trace);

// Enqueues one step (every layer, then the final norm). Capturable: no allocation, no host
// synchronisation. The launch is cooperative (every block resident), so the grid barriers
// cannot wait on a block that was never scheduled.
Status fused_expert(cudaStream_t stream, const FusedExpertArgs& args);

}  // namespace edgevla::backends::cuda
