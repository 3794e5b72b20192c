// The warpgroup GEMM (kernels/wgmma_gemm.hpp) as the action heads use it, whatever their family:
// which of their GEMMs run on it (EDGEVLA_CUDA_WGMMA and friends), their weights tiled in place
// at load, and one call that runs a projection on a tiled weight.
//
// The default on compute capability 9.0 in bf16: every projection of the head's layers whose
// shape fits, the layers' kernels as one chain of launches (launch.cuh: each GEMM's first weight
// tiles load while the kernel before it runs). Environment, read when an engine is made:
//   EDGEVLA_CUDA_WGMMA=0            keeps cuBLASLt for all of them;
//   EDGEVLA_CUDA_WGMMA=a,b,...      only the named projections (the family names them);
//   EDGEVLA_CUDA_WGMMA_CHAIN=0      launches them plainly;
//   EDGEVLA_CUDA_WGMMA_PARTS=N      caps the k parts of the f32-parts projections (default 8,
//                                   the most: run 43 call 2);
//   EDGEVLA_CUDA_WGMMA_ROPE=1       rotates q and k in q|k|v's epilogue (pi0.5) instead of the
//                                   rope kernel after it: the same bits, but slower on the H200
//                                   (a head +0.45 ms computing the angles, run 34 call 6; +0.93 ms
//                                   reading them from a table made once a run, run 36 call 1), so
//                                   off by default;
//   EDGEVLA_CUDA_WGMMA_SPLIT=N      caps the k slices (a cluster) of the bf16-output projections
//                                   whose feature blocks leave multiprocessors idle (1 to 4);
//   EDGEVLA_CUDA_WGMMA_BACKBONE=1   also runs GR00T's backbone LLM on it (more than 56 rows: row
//                                   tiles), off by default: slower than cuBLASLt on the H200
//                                   (run 37 call 5);
//   EDGEVLA_CUDA_GEMM_NORM=1        runs the residual add and the norm after the o and down
//                                   projections in their GEMM (the kNorm epilogue, k parts in
//                                   scratch) instead of k parts and a norm kernel; =cluster does it
//                                   with k slices in a cluster; both slower on the H200 (pi0.5's
//                                   head +3.3 ms in clusters, +3.9 ms in k parts, run 41 calls
//                                   2-4), so off;
//   EDGEVLA_CUDA_WGMMA_W8=1         runs the heads' layer projections on int8 weights
//                                   (kernels/wgmma_w8.hpp, quantised at load, one scale a
//                                   feature; pi0 / pi0.5's four, GR00T's self q|k|v, out, ff1 and
//                                   ff2); not yet measured on a GPU, so off;
//   EDGEVLA_WGMMA_AHEAD=N           weight stages a GEMM copies before it waits for the kernel
//                                   ahead in the chain (0 to 8; default 4, run 41 calls 5, 7);
//   EDGEVLA_CUDA_WGMMA_MLP=1        runs GR00T's DiT MLP halves (ff1 → GELU → ff2) as one kernel
//                                   each (kernels/wgmma_mlp.hpp), where the device holds all its
//                                   clusters at once; off until measured on a GPU.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "runtime/backends/cuda/engine_common.hpp"
#include "runtime/backends/cuda/kernels/wgmma_gemm.hpp"
#include "runtime/backends/cuda/kernels/wgmma_heads.hpp"
#include "runtime/backends/cuda/kernels/wgmma_w8.hpp"

namespace edgevla::backends::cuda {

// How a head's projections launch on it: the caps on k parts and k slices and the device's
// multiprocessors.
struct WgmmaLaunch {
  int max_parts = kMaxKParts;
  int max_split = kWgmmaMaxSplit;
  int multiprocessors = 0;
};

struct WgmmaChoice {
  bool on = false;     // some projection may run on it
  bool chain = false;  // the layers as one chain of launches
  WgmmaLaunch caps;    // k parts and slices at most (multiprocessors: the engine's device)
  bool rope = false;   // RoPE in the q|k|v epilogue where the family has it
  bool mlp = false;    // the MLP half as one kernel where the family has it (GR00T's DiT)
  bool w8 = false;     // the projections on int8 weights (EDGEVLA_CUDA_WGMMA_W8=1)
  // A head's projections and attention in one kernel (wgmma_heads.hpp) where the family has such
  // heads (GR00T's DiT), EDGEVLA_CUDA_WGMMA_HEADS: bit 0 the self-attention blocks, bit 1 the
  // cross-attention ones (both by default).
  int heads = 0;
  // The residual add and the norm after it in the GEMM (EDGEVLA_CUDA_GEMM_NORM): 0 off, 1 with k
  // parts, 2 with k slices in a cluster.
  int norm = 0;
  std::string list;    // "all" or the names asked for
  bool asked(std::string_view name) const;
  WgmmaLaunch launch(int multiprocessors) const { return {caps.max_parts, caps.max_split, multiprocessors}; }
};

// What the environment asks of an engine `what` computing in `act` on the current device;
// `other_mode` names a mode that excludes it (empty: none), logged when the variable was set.
// `default_parts`: the family's cap on k parts where EDGEVLA_CUDA_WGMMA_PARTS does not set one.
WgmmaChoice wgmma_choice(DType act, std::string_view other_mode, std::string_view what,
                         int default_parts = kMaxKParts);

// A projection to run on the warpgroup GEMM: its weight (tiled in place by wgmma_tile_in_place,
// after which `w->w` holds the tiled layout only) and the epilogue its tiling is for.
struct WgmmaWeight {
  DevLinear* w = nullptr;
  WgmmaEpilogue epilogue = WgmmaEpilogue::kNone;
  WgmmaRope rope;  // kRope: which outputs are rotated heads
  // Above 0: laid out for the heads kernel (wgmma_heads_tile_weight) in heads of this many rows
  // instead of for the GEMM.
  std::int64_t head_dim = 0;
};

// Tiles every weight in place on `stream` through one scratch buffer (freed before it returns).
// Each must be contiguous (ld == in) and fit the kernel.
Status wgmma_tile_in_place(cudaStream_t stream, const std::vector<WgmmaWeight>& weights, std::string_view what);

// D = A · Wᵀ on a tiled weight, rows m: bf16 D [m, ldd] with the epilogue (kNone / kGelu add
// w.bias when it has one; kGeglu: w must have none), k split across a cluster as `how` allows;
// or, when max_parts > 1, f32 k parts S · ldd floats apart (at most how.max_parts; the bias left
// to the kernel that sums them). Returns the parts written. kRope: `rope` (with its position and
// frequencies). kF32: f32 D plus w.bias plus `addend` (f32 [m, ld_add], or null).
Expected<int> wgmma_linear(cudaStream_t stream, const void* a, std::int64_t m, std::int64_t lda, const DevLinear& w,
                           WgmmaEpilogue epilogue, void* d, std::int64_t ldd, int max_parts, const WgmmaLaunch& how,
                           const WgmmaRope& rope = {}, const float* addend = nullptr, std::int64_t ld_add = 0);

// The k slices or parts of a kNorm call on a weight [n, k]: as many as the k parts wgmma_linear
// would write for it (max_parts), at most 4, so that the residual stream gets the same bits.
int wgmma_norm_parts(std::int64_t n, std::int64_t k, int max_parts, const WgmmaLaunch& how);

// Whether a kNorm call of m rows on a weight [n, k] fits the device (wgmma_norm_fits), in k slices
// (clusters) or k parts.
bool wgmma_linear_norm_fits(std::int64_t m, std::int64_t n, std::int64_t k, int max_parts, const WgmmaLaunch& how,
                            bool clusters);

// x += A · Wᵀ + w.bias (gated as `norm` says), written back, and y (bf16 [m, ldy]) the normalised
// rows: the kNorm epilogue in wgmma_norm_parts' slices (clusters) or parts.
Status wgmma_linear_norm(cudaStream_t stream, const void* a, std::int64_t m, std::int64_t lda, const DevLinear& w,
                         const WgmmaNorm& norm, void* y, std::int64_t ldy, int max_parts, const WgmmaLaunch& how,
                         bool clusters);

// int8 copies of a head's projections (kernels/wgmma_w8.hpp), quantised once at load from their
// row-major bf16 weights (so before wgmma_tile_in_place tiles those) into a buffer the engine
// plans; the bf16 weights stay, for the paths that still read them.
class WgmmaW8Weights {
 public:
  struct Entry {
    const DevLinear* w = nullptr;
    WgmmaW8Epilogue form = WgmmaW8Epilogue::kBf16;  // kGeglu / kGelu for a weight run in that form
  };
  // Bytes of the buffer that quantize() fills for these weights.
  static std::size_t bytes(const std::vector<Entry>& entries);
  // Quantises every entry into `buffer` (bytes(entries), 256-byte aligned), on `stream`, and waits.
  Status quantize(cudaStream_t stream, void* buffer, const std::vector<Entry>& entries);
  bool has(const DevLinear& w) const { return map_.count(&w) != 0; }
  // D = A · Wᵀ on w's int8 copy, rows m: when max_parts > 1, f32 k parts m · ldd floats apart (as
  // many as wgmma_linear would write, returned); else bf16 D in w's form, w.bias added where the
  // form takes one (kBf16, kGelu).
  Expected<int> linear(cudaStream_t stream, const void* a, std::int64_t m, std::int64_t lda, const DevLinear& w, void* d,
                       std::int64_t ldd, int max_parts, const WgmmaLaunch& how) const;

 private:
  struct Quantised {
    const void* q = nullptr;
    const float* scales = nullptr;
    WgmmaW8Epilogue form = WgmmaW8Epilogue::kBf16;
  };
  std::unordered_map<const DevLinear*, Quantised> map_;
};

}  // namespace edgevla::backends::cuda
