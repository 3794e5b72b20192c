#include "runtime/backends/cpu/groot/qwen3.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace edgevla::backends::cpu::groot_backbone {
namespace {

// Qwen3's RMSNorm: y = x · rsqrt(mean(x²) + eps) · w (not Gemma's 1 + w), over rows of `width`.
void rms_norm_rows(KernelContext& ctx, const float* x, std::int64_t rows, std::int64_t width,
                   const float* w, float eps, float* y) {
  ctx.pool().parallel_for(
      rows, std::max<std::int64_t>(1, 8192 / width), [&](std::int64_t r0, std::int64_t r1) {
        for (std::int64_t r = r0; r < r1; ++r) {
          const float* xr = x + r * width;
          float* yr = y + r * width;
          float ss = 0.0f;
          for (std::int64_t i = 0; i < width; ++i) ss += xr[i] * xr[i];
          const float inv = 1.0f / std::sqrt(ss / static_cast<float>(width) + eps);
          for (std::int64_t i = 0; i < width; ++i) yr[i] = xr[i] * inv * w[i];
        }
      });
}

// gate = silu(gate) · up.
void swiglu(KernelContext& ctx, float* gate, const float* up, std::int64_t n) {
  ctx.pool().parallel_for(n, 16384, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) gate[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
  });
}

}  // namespace

Qwen3Stack::Qwen3Stack(const model::groot::GrootConfig& c, Qwen3Weights weights,
                       std::int64_t max_tokens, int threads)
    : width_(c.text.hidden_size),
      heads_(c.text.num_heads),
      kv_heads_(c.text.num_kv_heads),
      head_dim_(c.text.head_dim),
      mlp_dim_(c.text.intermediate_size),
      eps_(static_cast<float>(c.text.rms_norm_eps)),
      w_(std::move(weights)) {
  // inv_freq in float32, as transformers builds it (notes §8: tables in fp32).
  const float theta = static_cast<float>(c.text.rope_theta);
  for (std::int64_t i = 0; i < head_dim_; i += 2) {
    inv_freq_.push_back(1.0f /
                        std::pow(theta, static_cast<float>(i) / static_cast<float>(head_dim_)));
  }
  causal_.resize(static_cast<std::size_t>(max_tokens));
  for (std::int64_t r = 0; r < max_tokens; ++r)
    causal_[static_cast<std::size_t>(r)] = static_cast<std::int32_t>(r + 1);
  valid_.reserve(static_cast<std::size_t>(max_tokens));
  x_.reserve(max_tokens * width_);
  y_.reserve(max_tokens * width_);
  q_.reserve(max_tokens * heads_ * head_dim_);
  o_.reserve(max_tokens * heads_ * head_dim_);
  k_.reserve(max_tokens * kv_heads_ * head_dim_);
  v_.reserve(max_tokens * kv_heads_ * head_dim_);
  gate_.reserve(max_tokens * mlp_dim_);
  up_.reserve(max_tokens * mlp_dim_);
  attn_.reserve(heads_, max_tokens, max_tokens, threads);
}

void Qwen3Stack::embed(KernelContext& ctx, const std::int32_t* ids, std::int64_t n) {
  const std::size_t row_bytes = static_cast<std::size_t>(width_) * dtype_size(w_.embed.dtype);
  ctx.pool().parallel_for(n, 16, [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) {
      const auto* src = static_cast<const std::byte*>(w_.embed.data) +
                        static_cast<std::size_t>(ids[r]) * row_bytes;
      to_f32(w_.embed.dtype, src, x_.data() + r * width_, width_);
    }
  });
}

// o[0, n) = attention of q/k/v rows [0, n): causal over the real tokens only. Padding rows are
// moved out of the way (the real rows compacted in place, in order, so causality by position
// is causality by compact row), and get zero output.
void Qwen3Stack::attend(KernelContext& ctx, std::int64_t n) {
  const std::int64_t qw = heads_ * head_dim_, kw = kv_heads_ * head_dim_;
  const auto m = static_cast<std::int64_t>(valid_.size());
  const bool compact = m != n;
  if (compact) {
    // valid_[i] >= i: copying in increasing i never overwrites a row still to be read.
    for (std::int64_t i = 0; i < m; ++i) {
      const std::int64_t s = valid_[static_cast<std::size_t>(i)];
      if (s == i) continue;
      std::memcpy(q_.data() + i * qw, q_.data() + s * qw,
                  sizeof(float) * static_cast<std::size_t>(qw));
      std::memcpy(k_.data() + i * kw, k_.data() + s * kw,
                  sizeof(float) * static_cast<std::size_t>(kw));
      std::memcpy(v_.data() + i * kw, v_.data() + s * kw,
                  sizeof(float) * static_cast<std::size_t>(kw));
    }
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim_));
  if (m > 0) {
    attention(ctx, q_.data(), m, qw, heads_, kv_heads_, head_dim_,
              KeyBlock{k_.data(), v_.data(), m, kw}, KeyBlock{}, causal_.data(), scale, o_.data(),
              qw, attn_);
  }
  if (compact) {
    // Back to the token rows, from the last: valid_[i] >= i, so no compact row is overwritten
    // before it moved. Then the padding rows' outputs are zero.
    for (std::int64_t i = m - 1; i >= 0; --i) {
      const std::int64_t d = valid_[static_cast<std::size_t>(i)];
      if (d != i)
        std::memcpy(o_.data() + d * qw, o_.data() + i * qw,
                    sizeof(float) * static_cast<std::size_t>(qw));
    }
    std::int64_t next = 0;
    for (std::int64_t r = 0; r < n; ++r) {
      if (next < m && valid_[static_cast<std::size_t>(next)] == r) {
        ++next;
        continue;
      }
      std::fill(o_.data() + r * qw, o_.data() + (r + 1) * qw, 0.0f);
    }
  }
}

void Qwen3Stack::forward(KernelContext& ctx, std::int64_t n, const bool* mask, float* out) {
  valid_.clear();
  for (std::int64_t r = 0; r < n; ++r) {
    if (mask[r]) valid_.push_back(r);
  }
  const std::int64_t W = width_, H = heads_, K = kv_heads_, h = head_dim_, F = mlp_dim_;
  float* x = x_.data();
  for (const Qwen3Layer& l : w_.layers) {
    rms_norm_rows(ctx, x, n, W, l.in_norm.data(), eps_, y_.data());
    linear(ctx, y_.data(), n, W, l.q, q_.data(), H * h);
    linear(ctx, y_.data(), n, W, l.k, k_.data(), K * h);
    linear(ctx, y_.data(), n, W, l.v, v_.data(), K * h);
    // q_norm / k_norm per head, then RoPE at the padded sequence's positions 0..n-1.
    rms_norm_rows(ctx, q_.data(), n * H, h, l.q_norm.data(), eps_, q_.data());
    rms_norm_rows(ctx, k_.data(), n * K, h, l.k_norm.data(), eps_, k_.data());
    rope(ctx, q_.data(), n, H, h, H * h, 0, inv_freq_.data());
    rope(ctx, k_.data(), n, K, h, K * h, 0, inv_freq_.data());
    attend(ctx, n);
    linear(ctx, o_.data(), n, H * h, l.o, x, W, /*accumulate=*/true);
    rms_norm_rows(ctx, x, n, W, l.post_norm.data(), eps_, y_.data());
    linear(ctx, y_.data(), n, W, l.gate, gate_.data(), F);
    linear(ctx, y_.data(), n, W, l.up, up_.data(), F);
    swiglu(ctx, gate_.data(), up_.data(), n * F);
    linear(ctx, gate_.data(), n, F, l.down, x, W, /*accumulate=*/true);
  }
  rms_norm_rows(ctx, x, n, W, w_.final_norm.data(), eps_, out);
}

std::int64_t Qwen3Stack::resident_bytes() const {
  std::int64_t total =
      cpu::resident_bytes(w_.embed.data, static_cast<std::size_t>(w_.embed.vocab * w_.embed.width) *
                                             dtype_size(w_.embed.dtype));
  for (const Qwen3Layer& l : w_.layers) {
    for (const Linear* m : {&l.q, &l.k, &l.v, &l.o, &l.gate, &l.up, &l.down})
      total += cpu::resident_bytes(*m);
  }
  for (const FloatBuffer* b : {&x_, &y_, &q_, &k_, &v_, &o_, &gate_, &up_})
    total += cpu::resident_bytes(*b);
  return total + cpu::resident_bytes(attn_.logits);
}

}  // namespace edgevla::backends::cpu::groot_backbone
