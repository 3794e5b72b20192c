#include "runtime/backends/cpu/groot/dit.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace edgevla::backends::cpu::groot {
namespace {

using model::groot::Checkpoint;

constexpr std::int64_t kTimestepChannels =
    256;  // diffusers Timesteps(256, flip_sin_to_cos=True, shift=1)
constexpr float kBlockEps = 1e-5f;
constexpr float kOutputEps = 1e-6f;

Expected<Tensor> get(const Checkpoint& ck, const std::string& name) {
  EDGEVLA_ASSIGN_OR_RETURN(Tensor t, ck.weight(name));
  if (!t.is_contiguous())
    return internal_error("groot action_head: weight '" + name + "' is not contiguous");
  return t;
}

// An nn.Linear "<name>.weight" [out, in] + "<name>.bias" [out].
Expected<Linear> lin(const Checkpoint& ck, const std::string& name) {
  EDGEVLA_ASSIGN_OR_RETURN(Tensor w, get(ck, name + ".weight"));
  EDGEVLA_ASSIGN_OR_RETURN(Tensor b, get(ck, name + ".bias"));
  Linear l;
  l.w = w.raw_data();
  l.dtype = w.dtype();
  l.out = w.shape()[0];
  l.in = w.numel() / l.out;
  l.bias.resize(static_cast<std::size_t>(b.numel()));
  to_f32(b.dtype(), b.raw_data(), l.bias.data(), b.numel());
  return l;
}

std::int64_t linear_bytes(const Linear& l) { return cpu::resident_bytes(l); }

}  // namespace

void add_bias(float* y, std::int64_t rows, std::int64_t n, std::int64_t ldy, const float* b) {
  for (std::int64_t r = 0; r < rows; ++r) {
    float* yr = y + r * ldy;
    for (std::int64_t i = 0; i < n; ++i) yr[i] += b[i];
  }
}

// --- CategoryLinear ---------------------------------------------------------------------------

Expected<CategoryLinear> CategoryLinear::load(const Checkpoint& ck, const std::string& name) {
  EDGEVLA_ASSIGN_OR_RETURN(Tensor w, get(ck, name + ".W"));
  EDGEVLA_ASSIGN_OR_RETURN(Tensor b, get(ck, name + ".b"));
  if (w.rank() != 3 || b.rank() != 2 || b.shape()[0] != w.shape()[0] ||
      b.shape()[1] != w.shape()[2]) {
    return invalid_argument("groot action_head: '" + name + ".W' " + w.shape().to_string() +
                            " and '" + name + ".b' " + b.shape().to_string() +
                            " are not [slots,in,out] and [slots,out]");
  }
  CategoryLinear c;
  c.w_ = w.raw_data();
  c.b_ = b.raw_data();
  c.w_dtype_ = w.dtype();
  c.b_dtype_ = b.dtype();
  c.slots_ = w.shape()[0];
  c.in_ = w.shape()[1];
  c.out_ = w.shape()[2];
  if (c.w_dtype_ != DType::kF32) c.w_own_.reserve(c.in_ * c.out_);
  c.b_sel_.reserve(c.out_);
  return c;
}

void CategoryLinear::select(std::int64_t e) {
  const std::int64_t n = in_ * out_;
  const std::byte* w = w_ + static_cast<std::size_t>(e * n) * dtype_size(w_dtype_);
  if (w_dtype_ == DType::kF32) {
    w_sel_ = reinterpret_cast<const float*>(w);
  } else {
    to_f32(w_dtype_, w, w_own_.data(), n);
    w_sel_ = w_own_.data();
  }
  to_f32(b_dtype_, b_ + static_cast<std::size_t>(e * out_) * dtype_size(b_dtype_), b_sel_.data(),
         out_);
}

void CategoryLinear::apply(KernelContext& ctx, const float* x, std::int64_t m, std::int64_t ldx,
                           float* y, std::int64_t ldy, std::int64_t row0, std::int64_t rows_in,
                           bool with_bias) const {
  const std::int64_t k = rows_in > 0 ? rows_in : in_;
  gemm(ctx, m, out_, k, 1.0f, x, ldx, w_sel_ + row0 * out_, out_, /*trans_b=*/false, 0.0f, y, ldy);
  if (with_bias) add_bias(y, m, out_, ldy, b_sel_.data());
}

std::int64_t CategoryLinear::resident_bytes() const {
  return cpu::resident_bytes(w_,
                             static_cast<std::size_t>(slots_ * in_ * out_) * dtype_size(w_dtype_)) +
         cpu::resident_bytes(w_own_) + cpu::resident_bytes(b_sel_);
}

// --- Dit --------------------------------------------------------------------------------------

Expected<Dit> Dit::load(const Checkpoint& ck) {
  const model::groot::GrootConfig& c = ck.config();
  const std::string p(model::groot::kDitPrefix);
  Dit d;
  d.width_ = c.dit.inner_dim();
  d.heads_ = c.dit.num_heads;
  d.head_dim_ = c.dit.head_dim;
  d.ff_dim_ = c.ff_dim();
  EDGEVLA_ASSIGN_OR_RETURN(d.t1_, lin(ck, p + "timestep_encoder.timestep_embedder.linear_1"));
  EDGEVLA_ASSIGN_OR_RETURN(d.t2_, lin(ck, p + "timestep_encoder.timestep_embedder.linear_2"));
  EDGEVLA_ASSIGN_OR_RETURN(d.proj_out_1_, lin(ck, p + "proj_out_1"));
  EDGEVLA_ASSIGN_OR_RETURN(d.proj_out_2_, lin(ck, p + "proj_out_2"));
  const int every = std::max(1, c.attend_text_every_n_blocks);
  for (int i = 0; i < c.dit.num_layers; ++i) {
    const std::string b = p + "transformer_blocks." + std::to_string(i) + ".";
    Block blk;
    EDGEVLA_ASSIGN_OR_RETURN(blk.norm1, lin(ck, b + "norm1.linear"));
    EDGEVLA_ASSIGN_OR_RETURN(blk.q, lin(ck, b + "attn1.to_q"));
    EDGEVLA_ASSIGN_OR_RETURN(blk.k, lin(ck, b + "attn1.to_k"));
    EDGEVLA_ASSIGN_OR_RETURN(blk.v, lin(ck, b + "attn1.to_v"));
    EDGEVLA_ASSIGN_OR_RETURN(blk.out, lin(ck, b + "attn1.to_out.0"));
    EDGEVLA_ASSIGN_OR_RETURN(blk.ff1, lin(ck, b + "ff.net.0.proj"));
    EDGEVLA_ASSIGN_OR_RETURN(blk.ff2, lin(ck, b + "ff.net.2"));
    // Even blocks cross-attend: those at multiples of 2·attend_text_every_n_blocks see the text.
    blk.cross = i % 2 == 0;
    blk.text = blk.cross && i % (2 * every) == 0;
    d.blocks_.push_back(std::move(blk));
  }
  return d;
}

void Dit::reserve(KernelContext& ctx, std::int64_t tokens, std::int64_t max_keys) {
  const std::int64_t E = width_;
  ck_.resize(blocks_.size());
  cv_.resize(blocks_.size());
  for (std::size_t i = 0; i < blocks_.size(); ++i) {
    if (!blocks_[i].cross) continue;
    ck_[i].reserve(max_keys * E);
    cv_[i].reserve(max_keys * E);
  }
  h_.reserve(tokens * E);
  q_.reserve(tokens * E);
  k_.reserve(tokens * E);
  v_.reserve(tokens * E);
  o_.reserve(tokens * E);
  ff_.reserve(tokens * ff_dim_);
  sinus_.reserve(kTimestepChannels);
  temb_.reserve(E);
  temb_act_.reserve(E);
  zeros_.reserve(E);
  std::fill(zeros_.data(), zeros_.data() + E, 0.0f);
  attn_.reserve(heads_, tokens, std::max(tokens, max_keys), ctx.pool().size());
  std::int64_t widest = std::max<std::int64_t>({kTimestepChannels, E, ff_dim_});
  for (const Block& b : blocks_) widest = std::max({widest, b.k.in, b.v.in});
  ctx.reserve_panels(widest);
}

void Dit::modulation(KernelContext& ctx, int t, float* out) {
  // Frequencies and angles in float32, as upstream computes them before any cast.
  const std::int64_t half = kTimestepChannels / 2;
  const float base = -std::log(10000.0f);
  float* s = sinus_.data();
  for (std::int64_t i = 0; i < half; ++i) {
    const float exponent = base * static_cast<float>(i) / static_cast<float>(half - 1);
    const float a = static_cast<float>(t) * std::exp(exponent);
    s[i] = std::cos(a);
    s[half + i] = std::sin(a);
  }
  linear(ctx, s, 1, kTimestepChannels, t1_, temb_act_.data(), width_);
  silu_inplace(temb_act_.data(), width_);
  linear(ctx, temb_act_.data(), 1, width_, t2_, temb_.data(), width_);
  silu_inplace(temb_.data(), width_);
  const std::int64_t E = width_;
  for (std::size_t i = 0; i < blocks_.size(); ++i) {
    linear(ctx, temb_.data(), 1, E, blocks_[i].norm1, out + static_cast<std::int64_t>(i) * 2 * E,
           2 * E);
  }
  linear(ctx, temb_.data(), 1, E, proj_out_1_,
         out + static_cast<std::int64_t>(blocks_.size()) * 2 * E, 2 * E);
}

void Dit::cross_kv(KernelContext& ctx, const float* text, std::int64_t n_text, const float* image,
                   std::int64_t n_image) {
  n_text_ = n_text;
  n_image_ = n_image;
  for (std::size_t i = 0; i < blocks_.size(); ++i) {
    const Block& b = blocks_[i];
    if (!b.cross) continue;
    const float* src = b.text ? text : image;
    const std::int64_t n = b.text ? n_text : n_image;
    linear(ctx, src, n, b.k.in, b.k, ck_[i].data(), width_);
    linear(ctx, src, n, b.v.in, b.v, cv_[i].data(), width_);
  }
}

void Dit::forward(KernelContext& ctx, float* x, std::int64_t S, const float* mods,
                  std::int64_t first_out, float* y) {
  const std::int64_t E = width_, F = ff_dim_, H = heads_, hd = head_dim_;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  float* h = h_.data();
  float* o = o_.data();
  for (std::size_t i = 0; i < blocks_.size(); ++i) {
    const Block& b = blocks_[i];
    const float* mod = mods + static_cast<std::int64_t>(i) * 2 * E;  // [scale, shift]
    ada_layer_norm(ctx, x, S, E, mod, mod + E, kBlockEps, h);
    linear(ctx, h, S, E, b.q, q_.data(), E);
    if (b.cross) {
      const std::int64_t n = b.text ? n_text_ : n_image_;
      if (n == 0) {
        // No key to attend: upstream's varlen attention gives zeros for such rows.
        std::fill(o, o + S * E, 0.0f);
      } else {
        attention(ctx, q_.data(), S, E, H, H, hd, KeyBlock{ck_[i].data(), cv_[i].data(), n, E},
                  KeyBlock{}, nullptr, scale, o, E, attn_);
      }
    } else {
      linear(ctx, h, S, E, b.k, k_.data(), E);
      linear(ctx, h, S, E, b.v, v_.data(), E);
      attention(ctx, q_.data(), S, E, H, H, hd, KeyBlock{k_.data(), v_.data(), S, E}, KeyBlock{},
                nullptr, scale, o, E, attn_);
    }
    linear(ctx, o, S, E, b.out, x, E, /*accumulate=*/true);
    ada_layer_norm(ctx, x, S, E, zeros_.data(), zeros_.data(), kBlockEps, h);  // plain LayerNorm
    linear(ctx, h, S, E, b.ff1, ff_.data(), F, false, /*add_bias=*/false);
    bias_gelu(ctx, ff_.data(), S, F, b.ff1.bias.data());
    linear(ctx, ff_.data(), S, F, b.ff2, x, E, /*accumulate=*/true);
  }
  // Output: [shift, scale] (the reverse of the blocks' order), only for the rows asked for.
  const float* mod = mods + static_cast<std::int64_t>(blocks_.size()) * 2 * E;
  const std::int64_t rows = S - first_out;
  ada_layer_norm(ctx, x + first_out * E, rows, E, mod + E, mod, kOutputEps, h);
  linear(ctx, h, rows, E, proj_out_2_, y, proj_out_2_.out);
}

std::int64_t Dit::resident_bytes() const {
  std::int64_t total =
      linear_bytes(t1_) + linear_bytes(t2_) + linear_bytes(proj_out_1_) + linear_bytes(proj_out_2_);
  for (const Block& b : blocks_) {
    for (const Linear* l : {&b.norm1, &b.q, &b.k, &b.v, &b.out, &b.ff1, &b.ff2})
      total += linear_bytes(*l);
  }
  for (const auto& v : {&ck_, &cv_}) {
    for (const FloatBuffer& f : *v) total += cpu::resident_bytes(f);
  }
  for (const FloatBuffer* f :
       {&h_, &q_, &k_, &v_, &o_, &ff_, &sinus_, &temb_, &temb_act_, &zeros_}) {
    total += cpu::resident_bytes(*f);
  }
  return total + cpu::resident_bytes(attn_.logits);
}

}  // namespace edgevla::backends::cpu::groot
