// GR00T N1.6's action-head pieces on the CPU kernels (notes/groot-n16.md §3, §8): the
// category-specific (per-embodiment) linears of the state/action encoders and the action
// decoder, and the alternating self/cross-attention DiT with AdaLN time conditioning.
//
// Matrices stay in the memory-mapped checkpoint: the DiT's nn.Linear weights go through
// kernels' linear() (f32 in place, bf16/f16 converted panel by panel), and a category linear
// converts only the selected embodiment's slice into its own f32 buffer (32 slots of the full
// encoders would be 1.3 GB in f32). Every buffer is sized when the engine is created.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/backends/cpu/kernels.hpp"
#include "runtime/model/groot/checkpoint.hpp"

namespace edgevla::backends::cpu::groot {

// y = x · W[e] + b[e] with W [slots, in, out] and b [slots, out] (not transposed like nn.Linear).
class CategoryLinear {
 public:
  static Expected<CategoryLinear> load(const model::groot::Checkpoint& ck, const std::string& name);
  std::int64_t slots() const { return slots_; }
  std::int64_t in() const { return in_; }
  std::int64_t out() const { return out_; }
  // Makes slot e the one apply() uses (f32 checkpoints: read in place; else converted into
  // buffers reserved at load). No allocation.
  void select(std::int64_t e);
  // y[m, out] (row stride ldy) = x[m, rows_in] · W[e][row0 : row0 + rows_in, :] (+ b[e] when
  // add_bias). rows_in = 0 means all in() rows.
  void apply(KernelContext& ctx, const float* x, std::int64_t m, std::int64_t ldx, float* y,
             std::int64_t ldy, std::int64_t row0 = 0, std::int64_t rows_in = 0,
             bool add_bias = true) const;
  const float* bias() const { return b_sel_.data(); }
  std::int64_t resident_bytes() const;

 private:
  const std::byte* w_ = nullptr;
  const std::byte* b_ = nullptr;
  DType w_dtype_ = DType::kF32, b_dtype_ = DType::kF32;
  std::int64_t slots_ = 0, in_ = 0, out_ = 0;
  const float* w_sel_ = nullptr;
  FloatBuffer w_own_, b_sel_;
};

// y[r, :] += b for rows of width n (row stride ldy).
void add_bias(float* y, std::int64_t rows, std::int64_t n, std::int64_t ldy, const float* b);

// The DiT: timestep embedder, blocks (even: cross-attention to the backbone features, text or
// image tokens; odd: self-attention over state + action tokens), AdaLN output and proj_out_2.
class Dit {
 public:
  struct Block {
    Linear norm1, q, k, v, out, ff1, ff2;
    bool cross = false;
    bool text = false;  // cross blocks: text tokens (else image tokens)
  };

  static Expected<Dit> load(const model::groot::Checkpoint& ck);
  std::int64_t width() const { return width_; }
  std::int64_t output_dim() const { return proj_out_2_.out; }
  // Floats of one timestep's modulation (every block's scale/shift and the output's shift/scale).
  std::int64_t modulation_size() const {
    return (static_cast<std::int64_t>(blocks_.size()) + 1) * 2 * width_;
  }

  // Buffers for `tokens` sequence rows and up to `max_keys` backbone tokens, for `threads`.
  void reserve(KernelContext& ctx, std::int64_t tokens, std::int64_t max_keys);
  // The modulation of integer timestep bucket `t`: sinusoid (256 channels, [cos, sin], f32) →
  // linear_1 → SiLU → linear_2 → SiLU, then each block's norm1.linear and proj_out_1.
  void modulation(KernelContext& ctx, int t, float* out);
  // The cross blocks' keys and values of the (vlln-normalised) backbone tokens: text blocks
  // read `text` [n_text, W], image blocks `image` [n_image, W]. Once per chunk.
  void cross_kv(KernelContext& ctx, const float* text, std::int64_t n_text, const float* image,
                std::int64_t n_image);
  // x [tokens, width] in place through every block; then the output norm and proj_out_2 of
  // rows [first_out, tokens) into y [tokens - first_out, output_dim].
  void forward(KernelContext& ctx, float* x, std::int64_t tokens, const float* mods,
               std::int64_t first_out, float* y);
  std::int64_t resident_bytes() const;

 private:
  std::int64_t width_ = 0, heads_ = 0, head_dim_ = 0, ff_dim_ = 0;
  Linear t1_, t2_, proj_out_1_, proj_out_2_;
  std::vector<Block> blocks_;
  std::int64_t n_text_ = 0, n_image_ = 0;
  std::vector<FloatBuffer> ck_, cv_;  // per block (cross blocks only): [keys, width]
  FloatBuffer h_, q_, k_, v_, o_, ff_, sinus_, temb_, temb_act_, zeros_;
  AttentionScratch attn_;
};

}  // namespace edgevla::backends::cpu::groot
