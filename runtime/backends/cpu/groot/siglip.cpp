#include "runtime/backends/cpu/groot/siglip.hpp"

#include <algorithm>
#include <cmath>

namespace edgevla::backends::cpu::groot_backbone {
namespace {

constexpr float kMlp1Eps = 1e-5f;  // mlp1's LayerNorm (nn.LayerNorm default), not the tower's

// x = gelu(x) with the exact erf (mlp1 uses nn.GELU()), in double as the reference rounds it.
void gelu_erf(KernelContext& ctx, float* x, std::int64_t n) {
  ctx.pool().parallel_for(n, 4096, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) {
      const double v = x[i];
      x[i] = static_cast<float>(0.5 * v * (1.0 + std::erf(v * 0.70710678118654752440)));
    }
  });
}

}  // namespace

void antialias_bilinear_weights(std::int64_t in, std::int64_t out, float* w) {
  const double scale = static_cast<double>(in) / static_cast<double>(out);
  // Shrinking widens the triangle filter by the scale (antialias); enlarging is plain bilinear.
  const double support = scale >= 1.0 ? scale : 1.0;
  const double invscale = scale >= 1.0 ? 1.0 / scale : 1.0;
  auto tent = [&](std::int64_t j, double center) {
    return std::max(0.0, 1.0 - std::abs((static_cast<double>(j) - center + 0.5) * invscale));
  };
  for (std::int64_t i = 0; i < out; ++i) {
    const double center = scale * (static_cast<double>(i) + 0.5);
    const std::int64_t xmin =
        std::max<std::int64_t>(static_cast<std::int64_t>(center - support + 0.5), 0);
    const std::int64_t xmax =
        std::min<std::int64_t>(static_cast<std::int64_t>(center + support + 0.5), in);
    double sum = 0;
    for (std::int64_t j = xmin; j < xmax; ++j) sum += tent(j, center);
    float* row = w + i * in;
    std::fill(row, row + in, 0.0f);
    for (std::int64_t j = xmin; j < xmax; ++j) {
      const double t = tent(j, center);
      row[j] = static_cast<float>(sum != 0 ? t / sum : t);
    }
  }
}

VisionTower::VisionTower(const model::groot::GrootConfig& c, SiglipWeights siglip, Mlp1Weights mlp1,
                         int max_views, std::int64_t max_edge, int threads)
    : width_(c.vision.hidden_size),
      heads_(c.vision.num_heads),
      head_dim_(c.vision.head_dim()),
      mlp_dim_(c.vision.intermediate_size),
      patch_(c.vision.patch_size),
      channels_(c.vision.num_channels),
      side_(c.vision.position_grid()),
      ratio_(c.unshuffle_factor),
      text_width_(c.text.hidden_size),
      eps_(static_cast<float>(c.vision.layer_norm_eps)),
      w_(std::move(siglip)),
      mlp1_(std::move(mlp1)) {
  const std::int64_t grid = max_edge / patch_;
  const std::int64_t per_view = grid * grid;
  const std::int64_t rows = max_views * per_view;
  const std::int64_t merged = rows / (ratio_ * ratio_);
  patches_.reserve(rows * patch_ * patch_ * channels_);
  for (FloatBuffer* b : {&x_, &y_, &q_, &k_, &v_, &o_}) b->reserve(rows * width_);
  h_.reserve(rows * mlp_dim_);
  merged_.reserve(merged * width_ * ratio_ * ratio_);
  merged_norm_.reserve(merged * width_ * ratio_ * ratio_);
  hidden_.reserve(merged * text_width_);
  pos_rows_.reserve(grid * side_ * width_);
  wy_.resize(static_cast<std::size_t>(grid * side_));
  wx_.resize(static_cast<std::size_t>(grid * side_));
  attn_.reserve(heads_, per_view, per_view, threads);
}

std::int64_t VisionTower::tokens_of(std::int64_t h, std::int64_t w) const {
  const std::int64_t m = patch_ * ratio_;
  return (h / m) * (w / m);
}

void VisionTower::add_positions(KernelContext& ctx, std::int64_t gh, std::int64_t gw, float* x) {
  antialias_bilinear_weights(side_, gh, wy_.data());
  antialias_bilinear_weights(side_, gw, wx_.data());
  // Along y: pos_rows[a] = Σ_i wy[a, i] · table[i] (each table row is [side, width]) ...
  gemm(ctx, gh, side_ * width_, side_, 1.0f, wy_.data(), side_, w_.position.data(), side_ * width_,
       false, 0.0f, pos_rows_.data(), side_ * width_);
  // ... then along x, added to the patch embeddings of grid row a.
  for (std::int64_t a = 0; a < gh; ++a) {
    gemm(ctx, gw, width_, side_, 1.0f, wx_.data(), side_, pos_rows_.data() + a * side_ * width_,
         width_, false, 1.0f, x + a * gw * width_, width_);
  }
}

void VisionTower::layer(KernelContext& ctx, const SiglipLayer& l, std::span<const ViewPixels> views,
                        std::int64_t rows) {
  const std::int64_t W = width_;
  layer_norm(ctx, x_.data(), rows, W, l.ln1_w.data(), l.ln1_b.data(), eps_, y_.data());
  linear(ctx, y_.data(), rows, W, l.q, q_.data(), W);
  linear(ctx, y_.data(), rows, W, l.k, k_.data(), W);
  linear(ctx, y_.data(), rows, W, l.v, v_.data(), W);
  // Attention stays inside each view (upstream's flash-attention varlen over packed images).
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim_));
  std::int64_t off = 0;
  for (const ViewPixels& v : views) {
    const std::int64_t n = (v.height / patch_) * (v.width / patch_);
    attention(ctx, q_.data() + off * W, n, W, heads_, heads_, head_dim_,
              KeyBlock{k_.data() + off * W, v_.data() + off * W, n, W}, KeyBlock{}, nullptr, scale,
              o_.data() + off * W, W, attn_);
    off += n;
  }
  linear(ctx, o_.data(), rows, W, l.o, x_.data(), W, /*accumulate=*/true);
  layer_norm(ctx, x_.data(), rows, W, l.ln2_w.data(), l.ln2_b.data(), eps_, y_.data());
  linear(ctx, y_.data(), rows, W, l.fc1, h_.data(), mlp_dim_, false, /*add_bias=*/false);
  bias_gelu(ctx, h_.data(), rows, mlp_dim_, l.fc1.bias.data());
  linear(ctx, h_.data(), rows, mlp_dim_, l.fc2, x_.data(), W, /*accumulate=*/true);
}

void VisionTower::encode(KernelContext& ctx, std::span<const ViewPixels> views, float* out,
                         std::int64_t ldo) {
  const std::int64_t P = patch_, C = channels_, W = width_, pp = P * P * C;
  // Patches as rows (py, px, c): the patch embedding becomes one GEMM over every view.
  std::int64_t rows = 0;
  for (const ViewPixels& v : views) {
    const std::int64_t gw = v.width / P, n = (v.height / P) * gw;
    const Tensor& t = *v.pixels;
    const std::size_t esize = dtype_size(t.dtype());
    const auto* base = static_cast<const std::byte*>(t.raw_data());
    float* dst0 = patches_.data() + rows * pp;
    ctx.pool().parallel_for(n, 8, [&](std::int64_t r0, std::int64_t r1) {
      float seg[kMaxPatchSize];
      for (std::int64_t r = r0; r < r1; ++r) {
        const std::int64_t a = r / gw, b = r % gw;
        float* dst = dst0 + r * pp;
        for (std::int64_t c = 0; c < C; ++c) {
          for (std::int64_t py = 0; py < P; ++py) {
            const std::int64_t src = (c * v.height + a * P + py) * v.width + b * P;
            to_f32(t.dtype(), base + static_cast<std::size_t>(src) * esize, seg, P);
            for (std::int64_t px = 0; px < P; ++px) dst[(py * P + px) * C + c] = seg[px];
          }
        }
      }
    });
    rows += n;
  }
  linear(ctx, patches_.data(), rows, pp, w_.patch, x_.data(), W);
  std::int64_t off = 0;
  for (const ViewPixels& v : views) {
    const std::int64_t gh = v.height / P, gw = v.width / P;
    add_positions(ctx, gh, gw, x_.data() + off * W);
    off += gh * gw;
  }
  for (const SiglipLayer& l : w_.layers) layer(ctx, l, views, rows);
  layer_norm(ctx, x_.data(), rows, W, w_.post_w.data(), w_.post_b.data(), eps_, y_.data());

  // Pixel unshuffle: merged token (i, j) takes channel c·r·r + dy·r + dx from token (i·r+dy,
  // j·r+dx).
  const std::int64_t r = ratio_, wide = W * r * r;
  std::int64_t in_off = 0, merged = 0;
  for (const ViewPixels& v : views) {
    const std::int64_t gh = v.height / P, gw = v.width / P, mw = gw / r, n = (gh / r) * mw;
    const float* src0 = y_.data() + in_off * W;
    float* dst0 = merged_.data() + merged * wide;
    ctx.pool().parallel_for(n, 4, [&](std::int64_t m0, std::int64_t m1) {
      for (std::int64_t m = m0; m < m1; ++m) {
        const std::int64_t i = m / mw, j = m % mw;
        float* dst = dst0 + m * wide;
        for (std::int64_t dy = 0; dy < r; ++dy) {
          for (std::int64_t dx = 0; dx < r; ++dx) {
            const float* src = src0 + ((i * r + dy) * gw + j * r + dx) * W;
            const std::int64_t slot = dy * r + dx;
            for (std::int64_t c = 0; c < W; ++c) dst[c * r * r + slot] = src[c];
          }
        }
      }
    });
    in_off += gh * gw;
    merged += n;
  }
  layer_norm(ctx, merged_.data(), merged, wide, mlp1_.ln_w.data(), mlp1_.ln_b.data(), kMlp1Eps,
             merged_norm_.data());
  linear(ctx, merged_norm_.data(), merged, wide, mlp1_.fc1, hidden_.data(), text_width_);
  gelu_erf(ctx, hidden_.data(), merged * text_width_);
  linear(ctx, hidden_.data(), merged, text_width_, mlp1_.fc2, out, ldo);
}

std::int64_t VisionTower::resident_bytes() const {
  std::int64_t total = cpu::resident_bytes(w_.patch) + cpu::resident_bytes(mlp1_.fc1) +
                       cpu::resident_bytes(mlp1_.fc2);
  for (const SiglipLayer& l : w_.layers) {
    for (const Linear* m : {&l.q, &l.k, &l.v, &l.o, &l.fc1, &l.fc2})
      total += cpu::resident_bytes(*m);
  }
  for (const FloatBuffer* b : {&patches_, &x_, &y_, &q_, &k_, &v_, &o_, &h_, &merged_,
                               &merged_norm_, &hidden_, &pos_rows_}) {
    total += cpu::resident_bytes(*b);
  }
  return total + cpu::resident_bytes(attn_.logits);
}

}  // namespace edgevla::backends::cpu::groot_backbone
