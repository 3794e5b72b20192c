// GR00T N1.6's vision path on the CPU (notes/groot-n16.md §2, §8): the SigLIP2 tower over each
// view at its own size (patch Linear, the learned 16×16 position table interpolated bilinearly
// with antialias to the view's patch grid, pre-LN encoder layers with attention inside each view
// only, post LayerNorm), the pixel unshuffle that merges r×r neighbouring tokens (channel
// c·r·r + dy·r + dx, merged tokens row-major), and mlp1 to the LLM's width.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "runtime/backends/cpu/groot/backbone_weights.hpp"
#include "runtime/model/groot/config.hpp"

namespace edgevla::backends::cpu::groot_backbone {

// One view's pixels: [3, h, w] f32 or bf16, h and w multiples of patch · unshuffle (checked
// by the caller).
// The largest patch edge the tower takes (patch rows are converted through a stack buffer).
inline constexpr std::int64_t kMaxPatchSize = 64;

struct ViewPixels {
  const Tensor* pixels = nullptr;
  std::int64_t height = 0;
  std::int64_t width = 0;
};

class VisionTower {
 public:
  // Buffers for up to `max_views` views of at most `max_edge` pixels a side, attention scratch
  // for a pool of `threads`.
  VisionTower(const model::groot::GrootConfig& config, SiglipWeights siglip, Mlp1Weights mlp1,
              int max_views, std::int64_t max_edge, int threads);

  // Image tokens a view of h × w pixels becomes.
  std::int64_t tokens_of(std::int64_t h, std::int64_t w) const;
  // Runs the tower on `views` and writes their mlp1 outputs, view after view, to out
  // [Σ tokens_of, text width] (row stride `ldo`).
  void encode(KernelContext& ctx, std::span<const ViewPixels> views, float* out, std::int64_t ldo);

  std::int64_t resident_bytes() const;

 private:
  // Writes the position table interpolated to a gh × gw grid, added to rows x[gh·gw, width].
  void add_positions(KernelContext& ctx, std::int64_t gh, std::int64_t gw, float* x);
  void layer(KernelContext& ctx, const SiglipLayer& l, std::span<const ViewPixels> views,
             std::int64_t rows);

  std::int64_t width_, heads_, head_dim_, mlp_dim_, patch_, channels_, side_, ratio_, text_width_;
  float eps_;
  SiglipWeights w_;
  Mlp1Weights mlp1_;

  // Preallocated (uninitialised) for every view at the largest size.
  FloatBuffer patches_, x_, y_, q_, k_, v_, o_, h_;
  FloatBuffer merged_, merged_norm_, hidden_;
  FloatBuffer pos_rows_;        // [grid rows, side, width]: the table interpolated along y
  std::vector<float> wy_, wx_;  // antialiased bilinear weights [out, side]
  AttentionScratch attn_;
};

// F.interpolate(bilinear, align_corners=False, antialias=True) along one axis from `in` to
// `out` samples, as a row-major [out, in] weight matrix written to w.
void antialias_bilinear_weights(std::int64_t in, std::int64_t out, float* w);

}  // namespace edgevla::backends::cpu::groot_backbone
