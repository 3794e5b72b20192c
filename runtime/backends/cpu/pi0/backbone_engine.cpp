// Backbone on the CPU: SigLIP over the valid cameras, projector, token embeddings, and the
// Gemma prefix pass that yields each layer's keys (after RoPE) and values. Invalid prefix
// tokens (masked cameras, prompt padding) are dropped before any compute: they can never be
// attended (docs/model.md §5.4), so the cache holds only valid tokens and its mask is all true.
#include <cmath>

#include "runtime/backends/cpu/cpu_backend.hpp"
#include "runtime/backends/cpu/cpu_engine.hpp"
#include "runtime/backends/cpu/pi0/pi0_weights.hpp"
#include "runtime/model/pi0/pi0_family.hpp"

namespace edgevla::backends::cpu {
namespace {

constexpr float kNormEps = 1e-6f;

class BackboneEngine final : public CpuEngine {
 public:
  static Expected<std::unique_ptr<Engine>> create(const model::Model& m, const EngineOptions& o) {
    EDGEVLA_ASSIGN_OR_RETURN(const model::pi0::Pi0Model* pm, model::pi0::as_pi0(m));
    EDGEVLA_ASSIGN_OR_RETURN(const model::StageSpec* spec, m.stage(model::kBackbone));
    EDGEVLA_RETURN_IF_ERROR(check_cpu_options(o, "backbone (cpu)", spec->weight_bytes));
    const model::Checkpoint& ck = pm->checkpoint();
    auto e = std::unique_ptr<BackboneEngine>(new BackboneEngine(ck.config(), *spec, o));
    EDGEVLA_ASSIGN_OR_RETURN(e->vision_, load_vision(ck));
    EDGEVLA_ASSIGN_OR_RETURN(e->embed_, load_embedding(ck));
    EDGEVLA_ASSIGN_OR_RETURN(e->vlm_, load_vlm(ck));
    EDGEVLA_RETURN_IF_ERROR(e->allocate());
    return std::unique_ptr<Engine>(std::move(e));
  }

  Status run(const RunOptions& options) override;

  std::int64_t resident_bytes() const override {
    std::int64_t total = cpu::resident_bytes(vision_.patch) + cpu::resident_bytes(vision_.projector);
    for (const VisionLayer& l : vision_.layers) {
      for (const Linear* w : {&l.q, &l.k, &l.v, &l.o, &l.fc1, &l.fc2}) total += cpu::resident_bytes(*w);
    }
    for (const GemmaLayer& l : vlm_.layers) {
      for (const Linear* w : {&l.q, &l.k, &l.v, &l.o, &l.gate, &l.up, &l.down}) total += cpu::resident_bytes(*w);
    }
    total += cpu::resident_bytes(embed_.table, static_cast<std::size_t>(embed_.vocab * embed_.width) * dtype_size(embed_.dtype));
    for (const FloatBuffer* b : {&patches_, &ve_, &vy_, &vq_, &vk_, &vv_, &vo_, &vh_, &x_, &y_, &q_, &o_, &gate_, &up_}) {
      total += cpu::resident_bytes(*b);
    }
    total += cpu::resident_bytes(vattn_.logits) + cpu::resident_bytes(attn_.logits);
    total += cpu::resident_bytes(kv_own_.raw_data(), kv_own_.nbytes());
    return total;
  }

 private:
  BackboneEngine(const model::ModelConfig& c, const model::StageSpec& spec, const EngineOptions& o)
      : CpuEngine(std::string(model::pi0::kFamily), spec, o), cfg_(c) {}
  Status allocate();
  Status embed_cameras(const std::vector<const Tensor*>& images, float* x_rows);
  void vision_layer(const VisionLayer& l, std::int64_t cams);

  model::ModelConfig cfg_;
  VisionWeights vision_;
  Embedding embed_;
  TowerWeights vlm_;
  std::vector<float> inv_freq_;

  int in_tokens_ = -1, in_token_mask_ = -1;
  std::vector<int> in_images_;   // input index per camera slot
  int out_kv_ = -1, out_mask_ = -1, out_vision_ = -1;

  // Preallocated activations (uninitialised; sized for all cameras and a full prompt).
  FloatBuffer patches_, ve_, vy_, vq_, vk_, vv_, vo_, vh_;
  FloatBuffer x_, y_, q_, o_, gate_, up_;
  Tensor kv_own_;  // [L, 2, P, K, h]; a run fills the first L·2·n·K·h values
  Tensor mask_own_;
  std::vector<std::int32_t> prompt_ids_;  // valid prompt tokens of this run (capacity reserved)
  AttentionScratch vattn_, attn_;
};

Status BackboneEngine::allocate() {
  const auto& v = cfg_.vision;
  const std::int64_t C = cfg_.num_cameras(), N = v.tokens();
  const std::int64_t P = cfg_.prefix_len();
  const std::int64_t D = cfg_.vlm.width, L = cfg_.vlm.depth;
  const std::int64_t H = cfg_.vlm.num_heads, K = cfg_.vlm.num_kv_heads, h = cfg_.vlm.head_dim;

  for (const auto& cam : cfg_.cameras) {
    EDGEVLA_ASSIGN_OR_RETURN(const int i, input_slot("image." + cam));
    in_images_.push_back(i);
  }
  EDGEVLA_ASSIGN_OR_RETURN(in_tokens_, input_slot("tokens"));
  EDGEVLA_ASSIGN_OR_RETURN(in_token_mask_, input_slot("token_mask"));
  EDGEVLA_ASSIGN_OR_RETURN(out_kv_, output_slot("kv"));
  EDGEVLA_ASSIGN_OR_RETURN(out_mask_, output_slot("mask"));
  EDGEVLA_ASSIGN_OR_RETURN(out_vision_, output_slot("vision_embeddings"));

  const std::int64_t M = C * N, Dv = v.width, pp = 3LL * v.patch_size * v.patch_size;
  patches_.reserve(M * pp);
  for (FloatBuffer* b : {&ve_, &vy_, &vq_, &vk_, &vv_, &vo_}) b->reserve(M * Dv);
  vh_.reserve(M * v.mlp_dim);
  vattn_.reserve(v.num_heads, N, N, ctx_.pool().size());
  x_.reserve(P * D);
  y_.reserve(P * D);
  q_.reserve(P * H * h);
  o_.reserve(P * H * h);
  gate_.reserve(P * cfg_.vlm.mlp_dim);
  up_.reserve(P * cfg_.vlm.mlp_dim);
  attn_.reserve(H, P, P, ctx_.pool().size());
  std::int64_t max_in = std::max<std::int64_t>({pp, Dv, v.mlp_dim, D, H * h, cfg_.vlm.mlp_dim});
  ctx_.reserve_panels(max_in);
  EDGEVLA_ASSIGN_OR_RETURN(kv_own_, Tensor::empty(DType::kF32, Shape{L, 2, P, K, h}));
  EDGEVLA_ASSIGN_OR_RETURN(mask_own_, Tensor::empty(DType::kBool, Shape{P}));
  prompt_ids_.reserve(static_cast<std::size_t>(cfg_.token_len()) + 1);
  inv_freq_ = model::pi0::rope_inv_freq(h);
  return Status::ok();
}

void BackboneEngine::vision_layer(const VisionLayer& l, std::int64_t cams) {
  const auto& v = cfg_.vision;
  const std::int64_t N = v.tokens(), Dv = v.width, M = cams * N, hd = v.head_dim();
  layer_norm(ctx_, ve_.data(), M, Dv, l.ln1_w.data(), l.ln1_b.data(), kNormEps, vy_.data());
  linear(ctx_, vy_.data(), M, Dv, l.q, vq_.data(), Dv);
  linear(ctx_, vy_.data(), M, Dv, l.k, vk_.data(), Dv);
  linear(ctx_, vy_.data(), M, Dv, l.v, vv_.data(), Dv);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  for (std::int64_t c = 0; c < cams; ++c) {
    const std::int64_t off = c * N * Dv;
    attention(ctx_, vq_.data() + off, N, Dv, v.num_heads, v.num_heads, hd,
              KeyBlock{vk_.data() + off, vv_.data() + off, N, Dv}, KeyBlock{}, nullptr, scale,
              vo_.data() + off, Dv, vattn_);
  }
  linear(ctx_, vo_.data(), M, Dv, l.o, ve_.data(), Dv, /*accumulate=*/true);
  layer_norm(ctx_, ve_.data(), M, Dv, l.ln2_w.data(), l.ln2_b.data(), kNormEps, vy_.data());
  linear(ctx_, vy_.data(), M, Dv, l.fc1, vh_.data(), v.mlp_dim, false, /*add_bias=*/false);
  bias_gelu(ctx_, vh_.data(), M, v.mlp_dim, l.fc1.bias.data());
  linear(ctx_, vh_.data(), M, v.mlp_dim, l.fc2, ve_.data(), Dv, /*accumulate=*/true);
}

Status BackboneEngine::embed_cameras(const std::vector<const Tensor*>& images, float* x_rows) {
  const auto& v = cfg_.vision;
  const std::int64_t N = v.tokens(), Dv = v.width, S = v.image_size, p = v.patch_size;
  const std::int64_t g = v.grid(), pp = 3 * p * p, cams = static_cast<std::int64_t>(images.size());
  const std::int64_t M = cams * N;
  // Patches as rows [c·N + 16r + col, (ch, u, w)]: the conv becomes one GEMM.
  ctx_.pool().parallel_for(M, 16, [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t row = r0; row < r1; ++row) {
      const float* img = images[static_cast<std::size_t>(row / N)]->data<float>();
      const std::int64_t pr = (row % N) / g, pc = (row % N) % g;
      float* dst = patches_.data() + row * pp;
      for (std::int64_t ch = 0; ch < 3; ++ch) {
        for (std::int64_t u = 0; u < p; ++u) {
          const float* src = img + (ch * S + pr * p + u) * S + pc * p;
          std::copy(src, src + p, dst + (ch * p + u) * p);
        }
      }
    }
  });
  linear(ctx_, patches_.data(), M, pp, vision_.patch, ve_.data(), Dv);
  for (std::int64_t row = 0; row < M; ++row) {
    const float* pos = vision_.position.data() + (row % N) * Dv;
    float* e = ve_.data() + row * Dv;
    for (std::int64_t i = 0; i < Dv; ++i) e[i] += pos[i];
  }
  for (const VisionLayer& l : vision_.layers) vision_layer(l, cams);
  layer_norm(ctx_, ve_.data(), M, Dv, vision_.post_w.data(), vision_.post_b.data(), kNormEps, vy_.data());
  linear(ctx_, vy_.data(), M, Dv, vision_.projector, x_rows, cfg_.vlm.width);
  return Status::ok();
}

Status BackboneEngine::run(const RunOptions&) {
  const auto t0 = std::chrono::steady_clock::now();
  const ParkOnExit park(ctx_.pool());
  timings_ = {};
  in_bound_.resize(inputs_.size());
  out_bound_.resize(outputs_.size());
  const std::int64_t N = cfg_.vision.tokens(), D = cfg_.vlm.width, L = cfg_.vlm.depth;
  const std::int64_t H = cfg_.vlm.num_heads, K = cfg_.vlm.num_kv_heads, h = cfg_.vlm.head_dim;

  // Inputs.
  std::vector<const Tensor*> images;
  std::vector<int> slots;
  for (std::size_t c = 0; c < in_images_.size(); ++c) {
    const Tensor* t = bound_input(in_images_[c]);
    if (t == nullptr) continue;
    const TensorSpec& spec = inputs_[static_cast<std::size_t>(in_images_[c])];
    if (!(t->shape() == spec.max_shape)) {
      return invalid_argument("backbone input '" + spec.name + "' is " + t->shape().to_string() +
                              ", the model needs " + spec.max_shape.to_string() +
                              " (resize with padding in preprocess)");
    }
    images.push_back(t);
    slots.push_back(static_cast<int>(c));
  }
  EDGEVLA_RETURN_IF_ERROR(
      model::pi0::valid_prompt_ids(bound_input(in_tokens_), bound_input(in_token_mask_), embed_.vocab, prompt_ids_));
  const std::int64_t cams = static_cast<std::int64_t>(images.size());
  const auto n_text = static_cast<std::int64_t>(prompt_ids_.size());
  const std::int64_t n = cams * N + n_text;
  if (n == 0) return invalid_argument("backbone has nothing to attend: no camera and no prompt token");

  // Outputs: the caller's tensor when bound, else ours, filled compactly as [L, 2, n, K, h].
  const Tensor* bkv = bound_output(out_kv_);
  const Tensor& kv = bkv ? *bkv : kv_own_;
  if (kv.shape()[2] < n) {
    return invalid_argument("backbone output 'kv' " + kv.shape().to_string() + " holds fewer than the " +
                            std::to_string(n) + " prefix rows of this run");
  }
  {
    EDGEVLA_ASSIGN_OR_RETURN(Tensor flat, kv.reshape(Shape{kv.numel()}));
    EDGEVLA_ASSIGN_OR_RETURN(Tensor used, flat.slice(0, 0, L * 2 * n * K * h));
    EDGEVLA_ASSIGN_OR_RETURN(Tensor view, used.reshape(Shape{L, 2, n, K, h}));
    set_produced(out_kv_, std::move(view));
  }
  std::vector<float*> kout(static_cast<std::size_t>(L)), vout(static_cast<std::size_t>(L));
  for (std::int64_t l = 0; l < L; ++l) {
    kout[static_cast<std::size_t>(l)] = kv.data<float>() + (2 * l) * n * K * h;
    vout[static_cast<std::size_t>(l)] = kv.data<float>() + (2 * l + 1) * n * K * h;
  }

  // Image tokens (valid cameras, slot order) then text tokens.
  float* x = x_.data();
  if (cams > 0) EDGEVLA_RETURN_IF_ERROR(embed_cameras(images, x));
  const double t_vision = ms_since(t0);
  if (const Tensor* ve = bound_output(out_vision_)) {
    if (!(ve->shape() == outputs_[static_cast<std::size_t>(out_vision_)].max_shape)) {
      return invalid_argument("backbone output 'vision_embeddings' must be " +
                              outputs_[static_cast<std::size_t>(out_vision_)].max_shape.to_string());
    }
    float* dst = ve->data<float>();
    std::fill(dst, dst + ve->numel(), 0.0f);
    for (std::int64_t c = 0; c < cams; ++c) {
      std::copy(x + c * N * D, x + (c + 1) * N * D, dst + slots[static_cast<std::size_t>(c)] * N * D);
    }
    set_produced(out_vision_, *ve);
  } else {
    set_produced(out_vision_, Tensor());
  }
  const float emb_scale = static_cast<float>(std::sqrt(static_cast<double>(D)));
  const std::size_t esize = dtype_size(embed_.dtype);
  for (std::int64_t row = cams * N; const std::int32_t id : prompt_ids_) {
    float* xr = x + row * D;
    to_f32(embed_.dtype, static_cast<const std::byte*>(embed_.table) + static_cast<std::size_t>(id) * D * esize, xr, D);
    for (std::int64_t j = 0; j < D; ++j) xr[j] *= emb_scale;
    ++row;
  }

  // Prefix pass. Positions are 0..n-1: the valid tokens in order.
  const float scale = 1.0f / std::sqrt(static_cast<float>(h));
  for (std::int64_t l = 0; l < L; ++l) {
    const GemmaLayer& w = vlm_.layers[static_cast<std::size_t>(l)];
    float* kl = kout[static_cast<std::size_t>(l)];
    float* vl = vout[static_cast<std::size_t>(l)];
    rms_norm(ctx_, x, n, D, w.in_norm.data(), kNormEps, y_.data());
    linear(ctx_, y_.data(), n, D, w.k, kl, K * h);
    linear(ctx_, y_.data(), n, D, w.v, vl, K * h);
    rope(ctx_, kl, n, K, h, K * h, 0, inv_freq_.data());
    if (l == L - 1) break;  // the last layer only contributes its keys and values
    linear(ctx_, y_.data(), n, D, w.q, q_.data(), H * h);
    rope(ctx_, q_.data(), n, H, h, H * h, 0, inv_freq_.data());
    attention(ctx_, q_.data(), n, H * h, H, K, h, KeyBlock{kl, vl, n, K * h}, KeyBlock{}, nullptr,
              scale, o_.data(), H * h, attn_);
    linear(ctx_, o_.data(), n, H * h, w.o, x, D, /*accumulate=*/true);
    rms_norm(ctx_, x, n, D, w.post_norm.data(), kNormEps, y_.data());
    const std::int64_t F = cfg_.vlm.mlp_dim;
    linear(ctx_, y_.data(), n, D, w.gate, gate_.data(), F);
    linear(ctx_, y_.data(), n, D, w.up, up_.data(), F);
    geglu(ctx_, gate_.data(), up_.data(), n, F);
    linear(ctx_, gate_.data(), n, F, w.down, x, D, /*accumulate=*/true);
  }

  const Tensor* bm = bound_output(out_mask_);
  const Tensor& mt = bm ? *bm : mask_own_;
  if (mt.shape()[0] < n) return invalid_argument("backbone output 'mask' is shorter than the prefix");
  std::fill(mt.data<bool>(), mt.data<bool>() + n, true);
  EDGEVLA_ASSIGN_OR_RETURN(Tensor mview, mt.slice(0, 0, n));
  set_produced(out_mask_, std::move(mview));

  timings_.total_ms = ms_since(t0);
  timings_.parts = {{"vision", t_vision}, {"prefix", timings_.total_ms - t_vision}};
  return Status::ok();
}

}  // namespace

const bool kRegistered = register_engine("cpu", std::string(model::pi0::kFamily), std::string(model::kBackbone),
                                         BackboneEngine::create);

}  // namespace edgevla::backends::cpu
