// The kernels GR00T N1.6's engines need beside the shared ones (kernels.hpp): Qwen3's RMSNorm
// (times w, over whole rows or per head in place), SwiGLU, activations the GEMM epilogues lack
// (ReLU, SiLU, exact-erf GELU), row gathers (packing the attended tokens, splicing the image
// embeddings into the prompt), SigLIP2's patches in (py, px, c) order, its position table
// interpolated to each view's grid, the pixel unshuffle, and a transpose (the category-specific
// linears store W[in, out]). Like kernels.hpp: each only enqueues work on `stream` (no
// allocation, no host synchronisation, capturable); `act` is f32 or bf16; vectors are f32.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "runtime/backends/cuda/kernels/common.hpp"

namespace edgevla::backends::cuda {

// Qwen3 RMSNorm: y = x · rsqrt(mean(x²) + eps) · w, over `rows` rows of `width`.
// Row r lives at x + (r / group)·ldx + (r % group)·width (group = 1: plain rows of stride ldx;
// group = heads: the per-head q/k norm over [tokens, heads, width] with token stride ldx), and
// is written at the same place of y (stride ldy). x of dtype x_type, y of dtype y_type (f32 or
// bf16 each); x == y (same dtype and strides) normalises in place. w f32 [width].
Status rms_norm_rows(cudaStream_t stream, const void* x, DType x_type, std::int64_t ldx,
                     std::int64_t rows, std::int64_t group, std::int64_t width, const float* w,
                     float eps, void* y, DType y_type, std::int64_t ldy);

// Qwen3's attention inputs from one q|k|v GEMM output, in one pass: qkv act [rows, (H + 2K)·h]
// (row stride ldq; q heads, then k heads, then v heads). Each q head is RMS-normalised with
// q_norm (f32 [h]) and rotated (rotate-half RoPE at position = its row, inv_freq f32 [h/2]) in
// place. Each k head, normalised with k_norm and rotated, and each v head as it is, are written
// to row key_limit[r] - 1 of kv act [rows, 2·K·h] ([k heads | v heads]) when key_limit[r] > 0
// (key_limit int32 [rows] on the device: a real token's 1-based rank among the real tokens, 0
// for padding), so kv holds the real tokens' keys and values in order. Rows of kv no real token
// writes are left as they are (zero them once per pass). angles (optional): rope_table()'s
// (cos, sin) for positions 0..rows-1 and inv_freq, f32 [rows][h/2][2], read instead of computed
// (the same values: row r's position is r).
Status qwen_qk_norm_rope(cudaStream_t stream, void* qkv, std::int64_t ldq, std::int64_t rows,
                         std::int64_t heads, std::int64_t kv_heads, std::int64_t h,
                         const float* q_norm, const float* k_norm, float eps, const float* inv_freq,
                         const std::int32_t* key_limit, void* kv, DType act,
                         const float* angles = nullptr);

// SwiGLU on a fused gate|up GEMM output: out[r, i] = silu(gu[r, i]) · gu[r, F + i].
//   gu act [rows, 2F], out act [rows, F].
Status swiglu(cudaStream_t stream, const void* gu, std::int64_t rows, std::int64_t f, void* out,
              DType act);

enum class Activation : std::uint8_t { kRelu, kSilu, kGeluErf };

// In place over x of dtype `type` (f32 or bf16) [rows, n], row stride ldx: x = act(x + bias)
// (bias f32 [n], nullptr: none).
Status bias_activation(cudaStream_t stream, void* x, DType type, std::int64_t rows, std::int64_t n,
                       std::int64_t ldx, const float* bias, Activation act);

// dst row i = src row idx[i] for i < rows (idx int32 on the device); idx[i] < 0: the row is
// zeroed when zero_missing, else left as it is. src of dtype src_type (f32, bf16, f16), row
// stride lds; dst of dtype dst_type (f32 or bf16), row stride ldd; `width` elements a row.
Status gather_rows(cudaStream_t stream, const void* src, DType src_type, std::int64_t lds,
                   const std::int32_t* idx, std::int64_t rows, std::int64_t width, void* dst,
                   DType dst_type, std::int64_t ldd, bool zero_missing);

// One view's pixels [3, h, w] (dtype src_type: f32 or bf16) as patch rows for SigLIP2's
// Linear patch embedding: out act [(h/p)·(w/p), p·p·3], row a·(w/p) + b, column (py·p + px)·3 + c.
// ld > 0: rows ld apart, columns p·p·3 to ld zero (a patch GEMM whose k is padded).
Status image_patches(cudaStream_t stream, const void* image, DType src_type, std::int64_t h,
                     std::int64_t w, std::int64_t p, void* out, DType act, std::int64_t ld = 0);

// x f32 [gh·gw, width] += the position table f32 [side·side, width] interpolated to a gh × gw
// grid: pos(a, b) = Σ_i Σ_j wy[a, i] · wx[b, j] · table[i·side + j] (wy f32 [gh, side], wx f32
// [gw, side]: the separable interpolation weights, made once on the host).
Status add_grid_positions(cudaStream_t stream, float* x, std::int64_t gh, std::int64_t gw,
                          std::int64_t width, const float* table, std::int64_t side,
                          const float* wy, const float* wx);

// Pixel unshuffle by r: tokens src f32 [gh·gw, d] (row-major grid) -> dst f32
// [(gh/r)·(gw/r), d·r·r], merged token (i, j) channel c·r·r + dy·r + dx = src token
// (i·r + dy, j·r + dx) channel c.
Status pixel_unshuffle(cudaStream_t stream, const float* src, std::int64_t gh, std::int64_t gw,
                       std::int64_t d, std::int64_t r, float* dst);

// The end of one Euler step of the action head, one launch in its chain of launches (launch.cuh):
// the decoder's last layer left as f32 k parts, v = Σ parts + bias (parts [count][rows, n],
// `part_stride` floats apart; bias f32 [n]); x += dt · v (x f32 [rows, n]); v also written to
// vel (f32 [rows, n]) and the new x rounded into x_act (dtype act: the next step's encoder input);
// then `width` floats of `row_src` copied to `row_dst` (the state token's row of the residual
// stream, which the DiT overwrote, for the next step). Every pointer on the device.
Status groot_step_end(cudaStream_t stream, const float* parts, int count, std::int64_t part_stride,
                      const float* bias, std::int64_t rows, std::int64_t n, float dt, float* x,
                      float* vel, void* x_act, DType act, const float* row_src, float* row_dst,
                      std::int64_t width);

// dst [cols, rows] = srcᵀ, src [rows, cols], both of dtype `type` (f32 or bf16), contiguous.
Status transpose(cudaStream_t stream, const void* src, std::int64_t rows, std::int64_t cols,
                 void* dst, DType type);

}  // namespace edgevla::backends::cuda
