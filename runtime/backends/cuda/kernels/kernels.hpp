// The fused element-wise, normalisation and layout kernels of the cuda backend. Every function
// only enqueues work on `stream` (no allocation, no host synchronisation), so whole forward
// passes can be captured into CUDA graphs. Row-major layouts; `act` names the activation dtype
// (f32 or bf16) of the tensors marked "act"; residual streams are f32; vectors are f32.
// Each returns the launch status (a bad dtype or size is an invalid_argument naming the kernel).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "runtime/backends/cuda/kernels/common.hpp"

namespace edgevla::backends::cuda {

// How a norm's residual input is laid out: `count` parts `stride` elements apart (the f32
// products of a GEMM whose k was split, gemm.hpp's k_split_args), added in order, then an
// optional f32 bias [width]. The default is one plain residual tensor.
struct ResidualParts {
  std::int64_t count = 1;
  std::int64_t stride = 0;
  const float* bias = nullptr;
};

// Gemma RMSNorm over rows: y = x · rsqrt(mean(x²) + eps) · (1 + w).
//   x f32 [rows, width] (row stride width); when `residual` is given, first x += residual
//   (residual of dtype residual_type, [rows, width]) and the sum is written back to x.
//   y act [rows, width].
Status rms_norm(cudaStream_t stream, float* x, const void* residual, DType residual_type, std::int64_t rows,
                std::int64_t width, const float* w, float eps, void* y, DType act, ResidualParts parts = {});

// Adaptive RMSNorm (pi0.5): y = x · rsqrt(mean(x²) + eps) · (1 + scale) + shift.
//   x f32 [rows, width]; scale, shift f32 [width] shared by all rows; y act [rows, width].
Status ada_rms_norm(cudaStream_t stream, const float* x, std::int64_t rows, std::int64_t width,
                    const float* scale, const float* shift, float eps, void* y, DType act);

// pi0.5's gated residual and the adaptive RMSNorm after it, in one pass over the row:
//   x += y · gate (written back; y of dtype y_type [rows, width], gate f32 [width]), then
//   out = x · rsqrt(mean(x²) + eps) · (1 + scale) + shift (out act [rows, width]).
// The same as gated_add followed by ada_rms_norm, one launch and one read of x fewer. With
// `parts`, y is the sum of its parts (plus their bias) before the gate.
Status gated_add_ada_rms_norm(cudaStream_t stream, float* x, const void* y, DType y_type, std::int64_t rows,
                              std::int64_t width, const float* gate, const float* scale, const float* shift, float eps,
                              void* out, DType act, ResidualParts parts = {});

// LayerNorm: y = (x - mean) / sqrt(var + eps) · w + b.  x f32 [rows, width], y act.
Status layer_norm(cudaStream_t stream, const float* x, std::int64_t rows, std::int64_t width, const float* w,
                  const float* b, float eps, void* y, DType act);

// x += residual (f32 [rows, width], laid out as `parts` says), written back, then layer_norm:
// a residual add (e.g. of a k-split GEMM's parts) and the LayerNorm after it in one pass.
Status add_layer_norm(cudaStream_t stream, float* x, const float* residual, std::int64_t rows, std::int64_t width,
                      const float* w, const float* b, float eps, void* y, DType act, ResidualParts parts = {});

// The two above with x [rows, width] in x_type, f32 or bf16 (a residual stream kept in the
// compute dtype, as the vision towers' under EDGEVLA_CUDA_TOWER_STREAM; the sums still in f32).
Status layer_norm(cudaStream_t stream, const void* x, DType x_type, std::int64_t rows, std::int64_t width,
                  const float* w, const float* b, float eps, void* y, DType act);
Status add_layer_norm(cudaStream_t stream, void* x, DType x_type, const float* residual, std::int64_t rows,
                      std::int64_t width, const float* w, const float* b, float eps, void* y, DType act,
                      ResidualParts parts = {});

// Rotary embedding, rotate-half pairs (i, i + h/2), in place on x act [rows, heads, h] with row
// stride ldx (elements), at position (*first_pos + row) for row; first_pos lives on the device
// (it changes from run to run inside a captured graph). inv_freq f32 [h/2].
Status rope(cudaStream_t stream, void* x, DType act, std::int64_t rows, std::int64_t heads, std::int64_t h,
            std::int64_t ldx, const std::int32_t* first_pos, const float* inv_freq);

// A fused q|k|v row's rotary embedding and cache writes in one launch: x act [rows, ldx] holds
// q_heads query heads, then kv_heads key heads, then kv_heads value heads of h each; the queries
// are rotated in place, the keys rotated into k_cache and the values copied into v_cache (both
// [rows, ld_cache], kv_heads·h used). The same values as rope() over q and k followed by copies of
// k and v. q_heads may be 0 (a last layer that only leaves its keys and values).
Status rope_into_cache(cudaStream_t stream, void* x, DType act, std::int64_t rows, std::int64_t q_heads,
                       std::int64_t kv_heads, std::int64_t h, std::int64_t ldx, void* k_cache, void* v_cache,
                       std::int64_t ld_cache, const std::int32_t* first_pos, const float* inv_freq);

// RoPE's angles as (cos, sin) pairs, the values rope() uses: table f32 [rows][half][2] (16-byte
// aligned) for positions *first_pos + r and frequencies inv_freq [half]. For a consumer that
// rotates the same rows many times (the warpgroup GEMM's RoPE epilogue, every layer and step).
Status rope_table(cudaStream_t stream, std::int64_t rows, std::int64_t half, const std::int32_t* first_pos,
                  const float* inv_freq, float* table);

// GeGLU on a fused gate|up GEMM output: out[r, i] = gelu_tanh(gu[r, i]) · gu[r, F + i].
//   gu act [rows, 2F], out act [rows, F].
Status geglu(cudaStream_t stream, const void* gu, std::int64_t rows, std::int64_t f, void* out, DType act);
// The same over `count` f32 parts of the gate|up product, part p at gu + p·stride (elements),
// each [rows, 2f]: summed in order, then GeGLU, written in act.
Status geglu_parts(cudaStream_t stream, const float* gu, int count, std::int64_t stride, std::int64_t rows,
                   std::int64_t f, void* out, DType act);

// In place: x = gelu_tanh(x + bias), x act [rows, n], bias f32 [n] (nullptr: none).
Status bias_gelu(cudaStream_t stream, void* x, DType act, std::int64_t rows, std::int64_t n, const float* bias);

// In place over x act [rows, n] with row stride ldx (elements): x = x + bias (bias f32 [n], nullptr:
// none), then x = gelu_tanh(x) when `gelu`. The epilogue the GEMM runs itself where cuBLASLt has
// none for a combination (bf16 output with an f32 bias); bias_gelu is this with ldx = n.
Status bias_act(cudaStream_t stream, void* x, DType act, std::int64_t rows, std::int64_t n, std::int64_t ldx,
                const float* bias, bool gelu);

// x += y · gate: x f32 [rows, n], y of dtype y_type [rows, n], gate f32 [n] (pi0.5's gated residual).
Status gated_add(cudaStream_t stream, float* x, const void* y, DType y_type, std::int64_t rows, std::int64_t n,
                 const float* gate);

// In place x = silu(x), x of dtype `type`, n elements.
Status silu(cudaStream_t stream, void* x, DType type, std::int64_t n);

// Patches of images f32 [cams, 3, S, S] (one image after the other) as GEMM rows:
//   out act [cams · g², 3·p·p], row c·g² + pr·g + pc, column (ch·p + u)·p + w, g = S / p.
// ld > 0: rows ld apart, columns 3·p·p to ld zero (a patch GEMM whose k is padded).
Status im2col_patches(cudaStream_t stream, const float* images, std::int64_t cams, std::int64_t s,
                      std::int64_t p, void* out, DType act, std::int64_t ld = 0);

// x f32 [rows, width] += table f32 [period, width] at row (r % period) (position embeddings).
Status add_periodic_rows(cudaStream_t stream, float* x, std::int64_t rows, std::int64_t width,
                         const float* table, std::int64_t period);

// Token embeddings: out f32 [n, width] row i = table[ids[i]] · scale, ids int32 on the device,
// table of dtype table_type [vocab, width]. Ids outside [0, vocab) give zero rows (the engine
// checks ids on the host before).
Status embed_tokens(cudaStream_t stream, const std::int32_t* ids, std::int64_t n, const void* table,
                    DType table_type, std::int64_t vocab, std::int64_t width, float scale, float* out);

// Converts n values between floating dtypes (f32, bf16, f16) on the device.
Status convert(cudaStream_t stream, const void* src, DType src_type, void* dst, DType dst_type, std::int64_t n);

// Euler update of flow matching: x += dt · v (both f32 [n]); when `v_out` is given, v is also
// copied there (the per-step velocity diagnostic).
Status euler_step(cudaStream_t stream, float* x, const float* v, float dt, std::int64_t n, float* v_out);

// The boundary between two Euler steps of a flow-matching head, one launch for what were four
// (output GEMM, euler_step, the conversion of the actions, the next step's input GEMM):
//   v    = y · w_outᵀ + b_out       y act [rows, width] (row stride ldy), w_out act [action_dim, ld_out]
//   x   += dt · v                   x f32 [rows, action_dim]; v_out f32 [rows, action_dim] gets v if given
//   next = act(x) · w_inᵀ + b_in    w_in act [next_width, ld_in], next next_type [rows, ld_next]
// act(x) is x rounded to the act dtype, as the conversion before the input GEMM rounds it. w_in
// nullptr: no input projection (the last step, or a head whose input path is more than one
// GEMM). Biases may be nullptr. width at most 8192, action_dim at most 256.
// Each block reads both weight matrices whole, so this pays only while they are small: pi0.5's
// 2 × 64 KB gain (head −0.05 ms on the H200), GR00T's decoder and encoder layers (256 + 384 KB,
// 50 rows) lose to the GEMMs (head +0.1 ms; bench/results/issue9_h200 run 29).
struct FlowStepArgs {
  DType act = DType::kBF16;
  std::int64_t rows = 0, width = 0, action_dim = 0;
  const void* y = nullptr;
  std::int64_t ldy = 0;
  const void* w_out = nullptr;
  std::int64_t ld_out = 0;
  const float* b_out = nullptr;
  float* x = nullptr;
  float dt = 0.0f;
  float* v_out = nullptr;
  const void* w_in = nullptr;
  std::int64_t ld_in = 0;
  const float* b_in = nullptr;
  std::int64_t next_width = 0;
  void* next = nullptr;
  DType next_type = DType::kF32;
  std::int64_t ld_next = 0;
};
Status flow_step(cudaStream_t stream, const FlowStepArgs& args);

// out f32 [rows, n] = in f32 [rows, n] + bias f32 [n] (broadcast), in may equal out.
Status add_bias(cudaStream_t stream, const float* in, std::int64_t rows, std::int64_t n, const float* bias,
                float* out);

// Counts non-finite values of x f32 [n] into *count (device int, added to).
Status count_nonfinite(cudaStream_t stream, const float* x, std::int64_t n, std::int32_t* count);

}  // namespace edgevla::backends::cuda
