// CPU kernels of the pi0 / pi0.5 forward pass. GEMMs go to OpenBLAS (single-threaded calls,
// split over the engine's own pool so OpenBLAS's thread server never competes with it);
// everything between two GEMMs is a fused, vectorizable loop over rows.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/util/thread_pool.hpp"
#include "runtime/core/tensor.hpp"

namespace edgevla::backends::cpu {

// An uninitialised float array. Pages are only made resident when first written, so buffers
// sized for the largest input cost memory only for what a run actually uses.
class FloatBuffer {
 public:
  void reserve(std::int64_t n) {
    if (n > size_) {
      data_.reset(new float[static_cast<std::size_t>(n)]);
      size_ = n;
    }
  }
  float* data() const { return data_.get(); }
  std::int64_t size() const { return size_; }

 private:
  std::unique_ptr<float[]> data_;
  std::int64_t size_ = 0;
};

// A weight matrix [out, in] as stored in the checkpoint (f32 used in place; bf16/f16 converted
// panel by panel into scratch while multiplying), plus an optional f32 bias.
struct Linear {
  const void* w = nullptr;
  DType dtype = DType::kF32;
  std::int64_t out = 0;
  std::int64_t in = 0;
  std::vector<float> bias;  // empty: no bias
};

// Per-engine state the kernels share: the pool and per-thread conversion scratch.
class KernelContext {
 public:
  explicit KernelContext(int threads);
  ThreadPool& pool() { return pool_; }
  const ThreadPool& pool() const { return pool_; }
  // Makes room for converting panels of weights with up to `max_in` columns.
  void reserve_panels(std::int64_t max_in);
  float* panel(int thread) { return panels_[static_cast<std::size_t>(thread)].data(); }
  std::int64_t panel_rows() const { return panel_rows_; }

 private:
  ThreadPool pool_;
  std::int64_t panel_rows_ = 64;
  std::vector<std::vector<float>> panels_;
};

// y[M, out] (row stride ldy) = x[M, in] (row stride ldx) · Wᵀ + bias; with accumulate,
// y += x · Wᵀ + bias (the residual add fused into the GEMM). add_bias false leaves the bias to
// a fused epilogue of the caller (bias_gelu).
void linear(KernelContext& ctx, const float* x, std::int64_t m, std::int64_t ldx, const Linear& w,
            float* y, std::int64_t ldy, bool accumulate = false, bool add_bias = true);

// Plain GEMM on f32 operands: C[m,n] = alpha · A[m,k] · op(B) + beta · C, B is [n,k] when
// trans_b (row-major), else [k,n]. Split over the pool.
void gemm(KernelContext& ctx, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
          const float* a, std::int64_t lda, const float* b, std::int64_t ldb, bool trans_b,
          float beta, float* c, std::int64_t ldc);

// LayerNorm over rows: y = (x - mean) / sqrt(var + eps) · w + b.
void layer_norm(KernelContext& ctx, const float* x, std::int64_t rows, std::int64_t width,
                const float* w, const float* b, float eps, float* y);
// Adaptive LayerNorm (GR00T's DiT): y = (x - mean) / sqrt(var + eps) · (1 + scale) + shift,
// scale and shift [width] shared by all rows.
void ada_layer_norm(KernelContext& ctx, const float* x, std::int64_t rows, std::int64_t width,
                    const float* scale, const float* shift, float eps, float* y);
// Gemma RMSNorm: y = x · rsqrt(mean(x²) + eps) · (1 + w).
void rms_norm(KernelContext& ctx, const float* x, std::int64_t rows, std::int64_t width,
              const float* w, float eps, float* y);
// Adaptive RMSNorm (pi0.5): y = x · rsqrt(mean(x²) + eps) · (1 + scale) + shift, with scale
// and shift [width] shared by all rows.
void ada_rms_norm(KernelContext& ctx, const float* x, std::int64_t rows, std::int64_t width,
                  const float* scale, const float* shift, float eps, float* y);

// Rotary embedding, rotate-half pairs (k, k + h/2), in place on x[rows, heads, h] (row stride
// ldx) at positions first_pos + row, with inv_freq[h/2].
void rope(KernelContext& ctx, float* x, std::int64_t rows, std::int64_t heads, std::int64_t h,
          std::int64_t ldx, std::int64_t first_pos, const float* inv_freq);

// In place: x = gelu_tanh(x + bias) over rows of width n.
void bias_gelu(KernelContext& ctx, float* x, std::int64_t rows, std::int64_t n, const float* bias);
// GeGLU: gate[r, i] = gelu_tanh(gate[r, i]) · up[r, i].
void geglu(KernelContext& ctx, float* gate, const float* up, std::int64_t rows, std::int64_t n);
// x += y · gate (gate [n] shared by all rows): pi0.5's gated residual.
void gated_add(KernelContext& ctx, float* x, const float* y, std::int64_t rows, std::int64_t n,
               const float* gate);
void silu_inplace(float* x, std::int64_t n);

// Multi-query / grouped attention for one sequence.
//   q     [rows, heads, h]          (row stride ldq)
//   keys  in up to two blocks (prefix, own), each [len, kv_heads, h], values alike
//   out   [rows, heads, h]          (row stride ldo)
// Query row r may attend the first key_limit[r] keys of the concatenation (nullptr: all), which
// expresses the prefix-LM masks of pi0/pi0.5 once invalid prefix tokens are dropped.
struct KeyBlock {
  const float* k = nullptr;
  const float* v = nullptr;
  std::int64_t len = 0;
  std::int64_t ld = 0;  // row stride of k and v (elements)
};
// One GEMM-softmax-GEMM unit of work of attention().
struct AttentionTask {
  const float* q;
  float* o;
  std::int64_t n;        // query rows in this task
  std::int64_t lda;      // query row stride
  std::int64_t ldo;      // output row stride
  std::int64_t kv;       // kv head
  std::int64_t first;    // first stacked row (for key limits)
  std::int64_t per_row;  // stacked rows per query row (heads when stacked, else 1)
  float* logits;
};
// Sized by the engine before the first run (reserve), so attention never allocates.
// Logits are left uninitialised: only the rows a run uses are ever touched (resident).
// Query rows a task scores at once: its logits are [kAttentionTile, keys], so the scratch is
// bounded by the number of tasks, not by the sequence length squared.
inline constexpr std::int64_t kAttentionTile = 128;
struct AttentionScratch {
  FloatBuffer logits;  // [tasks, kAttentionTile, total keys]
  std::vector<AttentionTask> tasks;
  void reserve(std::int64_t heads, std::int64_t /*rows*/, std::int64_t keys, int threads) {
    const std::int64_t most_tasks = std::max<std::int64_t>(heads, threads);
    logits.reserve(most_tasks * kAttentionTile * keys);
    tasks.reserve(static_cast<std::size_t>(most_tasks));
  }
};
void attention(KernelContext& ctx, const float* q, std::int64_t rows, std::int64_t ldq,
               std::int64_t heads, std::int64_t kv_heads, std::int64_t h, const KeyBlock& a,
               const KeyBlock& b, const std::int32_t* key_limit, float scale, float* out,
               std::int64_t ldo, AttentionScratch& scratch);

// Bytes of [p, p + n) resident in memory (mincore over the pages it spans).
std::int64_t resident_bytes(const void* p, std::size_t n);
inline std::int64_t resident_bytes(const Linear& l) {
  return resident_bytes(l.w, static_cast<std::size_t>(l.out * l.in) * dtype_size(l.dtype)) +
         static_cast<std::int64_t>(l.bias.size() * sizeof(float));
}
inline std::int64_t resident_bytes(const FloatBuffer& b) {
  return resident_bytes(b.data(), static_cast<std::size_t>(b.size()) * sizeof(float));
}

// Converts n values of a floating dtype to f32.
void to_f32(DType dtype, const void* src, float* dst, std::int64_t n);

}  // namespace edgevla::backends::cpu
