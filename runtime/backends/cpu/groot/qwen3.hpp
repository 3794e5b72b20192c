// The truncated Qwen3 LLM of GR00T N1.6 on the CPU (notes/groot-n16.md §2, §8): the first
// select_layer decoder layers (RMSNorm ×w, GQA attention with per-head q/k RMSNorm before
// rotate-half RoPE at positions 0..L-1 of the padded sequence, causal plus padding mask, SwiGLU
// MLP, no biases) and the final norm, whose output is the backbone's features.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/backends/cpu/groot/backbone_weights.hpp"
#include "runtime/model/groot/config.hpp"

namespace edgevla::backends::cpu::groot_backbone {

class Qwen3Stack {
 public:
  // Buffers for up to `max_tokens` tokens, attention scratch for a pool of `threads`.
  Qwen3Stack(const model::groot::GrootConfig& config, Qwen3Weights weights, std::int64_t max_tokens,
             int threads);

  std::int64_t vocab() const { return w_.embed.vocab; }
  std::int64_t width() const { return width_; }
  // The residual stream [max_tokens, width]: embed() fills it, the caller may overwrite rows
  // (the image embeddings), forward() runs on it.
  float* residual() const { return x_.data(); }
  // Token embeddings of ids[0, n) (each within vocab(), checked by the caller) into residual().
  void embed(KernelContext& ctx, const std::int32_t* ids, std::int64_t n);
  // The kept layers on residual() rows [0, n), then the final norm into out [n, width]. mask[i]
  // false marks padding: it is attended by no token and its own attention output is zero
  // (upstream's varlen attention); its row still goes through the MLPs.
  void forward(KernelContext& ctx, std::int64_t n, const bool* mask, float* out);

  std::int64_t resident_bytes() const;

 private:
  void attend(KernelContext& ctx, std::int64_t n);

  std::int64_t width_, heads_, kv_heads_, head_dim_, mlp_dim_;
  float eps_;
  Qwen3Weights w_;
  std::vector<float> inv_freq_;
  std::vector<std::int32_t> causal_;  // key limit of compact row r: r + 1
  std::vector<std::int64_t> valid_;   // rows of this run's real tokens (capacity reserved)

  FloatBuffer x_, y_, q_, k_, v_, o_, gate_, up_;
  AttentionScratch attn_;
};

}  // namespace edgevla::backends::cpu::groot_backbone
