// GR00T N1.6 backbone on the CPU (notes/groot-n16.md §2, §8): SigLIP2 over each bound view,
// pixel unshuffle and mlp1, the image embeddings spliced over the prompt's <IMG_CONTEXT>
// tokens in order, the kept Qwen3 layers and the final norm → backbone_features [L, W]. vlln
// belongs to the action head (its weights are action_head.vlln.*). Inputs and outputs are the
// groot family's backbone StageSpec (runtime/model/groot/groot_family.hpp); every buffer is
// sized for the spec's largest shapes when the engine is made, so a run allocates nothing.
#include <array>
#include <cmath>
#include <cstring>

#include "runtime/backends/cpu/cpu_backend.hpp"
#include "runtime/backends/cpu/cpu_engine.hpp"
#include "runtime/backends/cpu/groot/qwen3.hpp"
#include "runtime/backends/cpu/groot/siglip.hpp"
#include "runtime/model/groot/groot_family.hpp"
#include "runtime/model/groot/stage_inputs.hpp"

namespace edgevla::backends::cpu::groot_backbone {
namespace {

namespace mg = model::groot;

std::string view_name(std::size_t k) { return "image." + std::to_string(k); }

// The first non-finite value of a float tensor, or -1.
std::int64_t first_non_finite(const Tensor& t) {
  const std::int64_t n = t.numel();
  if (t.dtype() == DType::kF32) {
    const float* p = t.data<float>();
    for (std::int64_t i = 0; i < n; ++i) {
      if (!std::isfinite(p[i])) return i;
    }
  } else {  // bf16: exponent all ones is inf or nan
    const auto* p = reinterpret_cast<const std::uint16_t*>(t.raw_data());
    for (std::int64_t i = 0; i < n; ++i) {
      if ((p[i] & 0x7f80u) == 0x7f80u) return i;
    }
  }
  return -1;
}

class GrootBackboneEngine final : public CpuEngine {
 public:
  static Expected<std::unique_ptr<Engine>> create(const model::Model& m, const EngineOptions& o) {
    EDGEVLA_ASSIGN_OR_RETURN(const mg::GrootModel* gm, mg::as_groot(m));
    EDGEVLA_ASSIGN_OR_RETURN(const model::StageSpec* spec, m.stage(model::kBackbone));
    EDGEVLA_RETURN_IF_ERROR(check_cpu_options(o, "groot backbone (cpu)", spec->weight_bytes));
    const mg::GrootConfig& c = gm->config();
    if (c.vision.patch_size > kMaxPatchSize || c.unshuffle_factor < 1) {
      return invalid_argument("groot backbone (cpu): patch size " +
                              std::to_string(c.vision.patch_size) + " / unshuffle factor " +
                              std::to_string(c.unshuffle_factor) + " unsupported (patch at most " +
                              std::to_string(kMaxPatchSize) + ", factor >= 1)");
    }
    auto e = std::unique_ptr<GrootBackboneEngine>(new GrootBackboneEngine(c, *spec, o));
    EDGEVLA_RETURN_IF_ERROR(e->allocate(gm->checkpoint()));
    return std::unique_ptr<Engine>(std::move(e));
  }

  Status run(const RunOptions& options) override;
  std::int64_t resident_bytes() const override {
    std::int64_t total = vision_->resident_bytes() + llm_->resident_bytes();
    for (const Tensor* t : {&features_, &embeds_, &mask_out_, &image_mask_}) {
      total += cpu::resident_bytes(t->raw_data(), t->nbytes());
    }
    return total;
  }

 private:
  GrootBackboneEngine(const mg::GrootConfig& c, const model::StageSpec& spec,
                      const EngineOptions& o)
      : CpuEngine(std::string(mg::kFamily), spec, o),
        cfg_(c) {}
  Status allocate(const mg::Checkpoint& ck);
  // The bound views in order (image.0, image.1, ...), checked; fills views_.
  Status collect_views();
  // The prompt's ids and mask, checked against the vocabulary, the views and the outputs.
  Status check_prompt(const Tensor*& ids, const Tensor*& mask, std::int64_t& image_tokens);

  mg::GrootConfig cfg_;
  std::unique_ptr<VisionTower> vision_;
  std::unique_ptr<Qwen3Stack> llm_;
  std::int64_t max_tokens_ = 0, max_image_tokens_ = 0, merge_ = 0, max_edge_ = 0;

  std::vector<int> in_images_;
  int in_ids_ = -1, in_mask_ = -1;
  int out_features_ = -1, out_mask_ = -1, out_image_mask_ = -1, out_embeds_ = -1;

  std::vector<ViewPixels> views_;                     // this run's (capacity reserved)
  Tensor features_, embeds_, mask_out_, image_mask_;  // used when the caller binds none
};

Status GrootBackboneEngine::allocate(const mg::Checkpoint& ck) {
  for (std::size_t k = 0;; ++k) {
    const int i = input_index(view_name(k));
    if (i < 0) break;
    in_images_.push_back(i);
  }
  EDGEVLA_ASSIGN_OR_RETURN(in_ids_, input_slot("input_ids"));
  EDGEVLA_ASSIGN_OR_RETURN(in_mask_, input_slot("attention_mask"));
  EDGEVLA_ASSIGN_OR_RETURN(out_features_, output_slot("backbone_features"));
  EDGEVLA_ASSIGN_OR_RETURN(out_mask_, output_slot("attention_mask"));
  EDGEVLA_ASSIGN_OR_RETURN(out_image_mask_, output_slot("image_mask"));
  EDGEVLA_ASSIGN_OR_RETURN(out_embeds_, output_slot("image_embeds"));
  if (in_images_.empty()) return internal_error("groot backbone (cpu): the family's backbone spec declares no image.0");
  const Shape& img = inputs_[static_cast<std::size_t>(in_images_[0])].max_shape;
  max_edge_ = std::max(img[1], img[2]);
  const int views = static_cast<int>(in_images_.size());
  max_tokens_ = inputs_[static_cast<std::size_t>(in_ids_)].max_shape[0];
  merge_ = std::int64_t{cfg_.vision.patch_size} * cfg_.unshuffle_factor;
  const std::int64_t W = cfg_.text.hidden_size;
  max_image_tokens_ = views * (max_edge_ / merge_) * (max_edge_ / merge_);

  EDGEVLA_ASSIGN_OR_RETURN(SiglipWeights siglip, load_siglip(ck));
  EDGEVLA_ASSIGN_OR_RETURN(Mlp1Weights mlp1, load_mlp1(ck));
  EDGEVLA_ASSIGN_OR_RETURN(Qwen3Weights qwen, load_qwen3(ck));
  vision_ = std::make_unique<VisionTower>(cfg_, std::move(siglip), std::move(mlp1), views, max_edge_,
                                          ctx_.pool().size());
  llm_ = std::make_unique<Qwen3Stack>(cfg_, std::move(qwen), max_tokens_, ctx_.pool().size());
  const std::int64_t dv = cfg_.vision.hidden_size,
                     q = std::int64_t{cfg_.text.num_heads} * cfg_.text.head_dim;
  ctx_.reserve_panels(
      std::max<std::int64_t>({cfg_.vision.patch_dim(), dv, cfg_.vision.intermediate_size,
                              cfg_.mlp1_in(), W, q, cfg_.text.intermediate_size}));
  views_.reserve(in_images_.size());
  EDGEVLA_ASSIGN_OR_RETURN(features_, Tensor::empty(DType::kF32, Shape{max_tokens_, W}));
  EDGEVLA_ASSIGN_OR_RETURN(embeds_, Tensor::empty(DType::kF32, Shape{max_image_tokens_, W}));
  EDGEVLA_ASSIGN_OR_RETURN(mask_out_, Tensor::empty(DType::kBool, Shape{max_tokens_}));
  EDGEVLA_ASSIGN_OR_RETURN(image_mask_, Tensor::empty(DType::kBool, Shape{max_tokens_}));
  return Status::ok();
}

Status GrootBackboneEngine::collect_views() {
  views_.clear();
  std::size_t first_missing = in_images_.size();
  for (std::size_t k = 0; k < in_images_.size(); ++k) {
    const Tensor* t = bound_input(in_images_[k]);
    if (t == nullptr) {
      first_missing = std::min(first_missing, k);
      continue;
    }
    EDGEVLA_RETURN_IF_ERROR(mg::check_backbone_view(k, *t, first_missing, cfg_, max_edge_));
    const std::int64_t h = t->shape()[1], w = t->shape()[2];
    if (const std::int64_t bad = first_non_finite(*t); bad >= 0) {
      return invalid_argument("groot backbone: " + view_name(k) + " holds a non-finite pixel at [" +
                              std::to_string(bad / (h * w)) + "," + std::to_string((bad / w) % h) +
                              "," + std::to_string(bad % w) +
                              "]; check the camera frame and the pre-processing");
    }
    views_.push_back({t, h, w});
  }
  if (views_.empty()) {
    return invalid_argument(
        "groot backbone: no view bound; bind image.0 (and image.1.. for embodiments with "
        "more cameras)");
  }
  return Status::ok();
}

Status GrootBackboneEngine::check_prompt(const Tensor*& ids, const Tensor*& mask,
                                         std::int64_t& image_tokens) {
  ids = bound_input(in_ids_);
  mask = bound_input(in_mask_);
  if (ids == nullptr || mask == nullptr) {
    return invalid_argument(
        "groot backbone: bind input_ids and attention_mask (the tokenized prompt)");
  }
  std::array<mg::BoundView, mg::kMaxViews> views;  // no allocation per run
  std::size_t n = 0;
  for (const ViewPixels& v : views_) views[n++] = mg::BoundView{v.pixels, vision_->tokens_of(v.height, v.width)};
  EDGEVLA_ASSIGN_OR_RETURN(image_tokens, mg::check_backbone_prompt(*ids, *mask, max_tokens_, llm_->vocab(),
                                                                   cfg_.image_token_id, std::span(views.data(), n)));
  return Status::ok();
}

Status GrootBackboneEngine::run(const RunOptions&) {
  const auto t0 = std::chrono::steady_clock::now();
  const ParkOnExit park(ctx_.pool());
  in_bound_.resize(inputs_.size());
  out_bound_.resize(outputs_.size());
  const std::int64_t W = cfg_.text.hidden_size;

  EDGEVLA_RETURN_IF_ERROR(collect_views());
  const Tensor* ids = nullptr;
  const Tensor* mask = nullptr;
  std::int64_t n_img = 0;
  EDGEVLA_RETURN_IF_ERROR(check_prompt(ids, mask, n_img));
  const std::int64_t L = ids->shape()[0];

  // Outputs: the caller's tensors when bound, else ours.
  const Tensor* bf = bound_output(out_features_);
  const Tensor& feats = bf ? *bf : features_;
  if (feats.shape()[0] < L || feats.shape()[1] != W) {
    return invalid_argument("groot backbone: output backbone_features " +
                            feats.shape().to_string() + " cannot hold [" + std::to_string(L) + "," +
                            std::to_string(W) + "]");
  }
  const Tensor* be = bound_output(out_embeds_);
  const Tensor& embeds = be ? *be : embeds_;
  if (embeds.shape()[0] < n_img || embeds.shape()[1] != W) {
    return invalid_argument("groot backbone: output image_embeds " + embeds.shape().to_string() +
                            " cannot hold [" + std::to_string(n_img) + "," + std::to_string(W) +
                            "]");
  }

  vision_->encode(ctx_, views_, embeds.data<float>(), W);
  const double t_vision = ms_since(t0);

  // Token embeddings with the image embeddings over the <IMG_CONTEXT> tokens, in order.
  const std::int32_t* id = ids->data<std::int32_t>();
  llm_->embed(ctx_, id, L);
  const Tensor* bim = bound_output(out_image_mask_);
  const Tensor& imask = bim ? *bim : image_mask_;
  if (imask.shape()[0] < L) {
    return invalid_argument("groot backbone: output image_mask " + imask.shape().to_string() + " cannot hold [" +
                            std::to_string(L) + "]");
  }
  bool* image_mask = imask.data<bool>();
  const float* img = embeds.data<float>();
  float* x = llm_->residual();
  for (std::int64_t i = 0; i < L; ++i) {
    image_mask[i] = id[i] == cfg_.image_token_id;
    if (image_mask[i]) {
      std::memcpy(x + i * W, img, sizeof(float) * static_cast<std::size_t>(W));
      img += W;
    }
  }
  const bool* valid = mask->data<bool>();
  llm_->forward(ctx_, L, valid, feats.data<float>());
  std::copy(valid, valid + L, mask_out_.data<bool>());

  EDGEVLA_ASSIGN_OR_RETURN(Tensor fview, feats.slice(0, 0, L));
  set_produced(out_features_, std::move(fview));
  EDGEVLA_ASSIGN_OR_RETURN(Tensor eview, embeds.slice(0, 0, n_img));
  set_produced(out_embeds_, std::move(eview));
  EDGEVLA_ASSIGN_OR_RETURN(Tensor mview, mask_out_.slice(0, 0, L));
  set_produced(out_mask_, std::move(mview));
  EDGEVLA_ASSIGN_OR_RETURN(Tensor iview, imask.slice(0, 0, L));
  set_produced(out_image_mask_, std::move(iview));

  timings_.total_ms = ms_since(t0);
  if (timings_.parts.size() != 2)
    timings_.parts = {{"vision", 0.0}, {"llm", 0.0}};  // first run only
  timings_.parts[0].second = t_vision;
  timings_.parts[1].second = timings_.total_ms - t_vision;
  return Status::ok();
}

const bool kRegistered = register_engine(
    "cpu", std::string(mg::kFamily), std::string(model::kBackbone), GrootBackboneEngine::create);

}  // namespace
}  // namespace edgevla::backends::cpu::groot_backbone
