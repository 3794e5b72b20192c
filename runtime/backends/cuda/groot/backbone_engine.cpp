// GR00T N1.6 backbone on the GPU (notes/groot-n16.md §2, §8), the same contract as the CPU
// engine (runtime/backends/cpu/groot/backbone_engine.cpp): SigLIP2 over each bound view at its
// own size (patch Linear on (py, px, c) rows, the learned position table interpolated to the
// view's grid, attention inside each view only), pixel unshuffle and mlp1, the image embeddings
// spliced over the prompt's <IMG_CONTEXT> tokens, the kept Qwen3 layers (per-head q/k RMSNorm,
// RoPE at positions 0..L-1 of the padded sequence, causal attention over the real tokens only:
// their keys are gathered in order, padding rows see no key and get zero attention output) and
// the final norm → backbone_features.
// The whole pass is one CUDA graph per (view sizes and dtypes, prompt-length bucket of 16
// rows); the prompt's mask, ids and image positions are device arrays the graph reads, so one
// graph serves every prompt of its bucket.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <map>
#include <string_view>

#include "runtime/backends/cpu/groot/backbone_weights.hpp"
#include "runtime/backends/cpu/groot/siglip.hpp"
#include "runtime/backends/cuda/groot/groot_cuda.hpp"
#include "runtime/backends/cuda/kernels/attention.hpp"
#include "runtime/backends/cuda/kernels/groot_kernels.hpp"
#include "runtime/backends/cuda/kernels/kernels.hpp"
#include "runtime/backends/cuda/vision_tower.hpp"
#include "runtime/backends/cuda/wgmma_plan.hpp"
#include "runtime/model/groot/stage_inputs.hpp"

namespace edgevla::backends::cuda::groot {
namespace {

namespace mg = model::groot;
namespace cg = cpu::groot_backbone;

constexpr float kMlp1Eps = 1e-5f;

struct QwenLayerDev {
  float *in_norm = nullptr, *post_norm = nullptr, *q_norm = nullptr, *k_norm = nullptr;
  // in_norm − 1 and post_norm − 1: Qwen's norm (· w) as the kernel that adds k parts computes
  // it (· (1 + w)).
  float *in_norm_m1 = nullptr, *post_norm_m1 = nullptr;
  DevLinear qkv, o, gate_up, down;
};

// One bound view of this run.
struct View {
  const Tensor* pixels = nullptr;
  std::int64_t h = 0, w = 0;
  DType dtype = DType::kF32;
};

std::string view_name(std::size_t k) { return "image." + std::to_string(k); }

class BackboneEngine final : public GrootCudaEngine {
 public:
  static Expected<std::unique_ptr<Engine>> create(const model::Model& m, const EngineOptions& o) {
    EDGEVLA_ASSIGN_OR_RETURN(const mg::GrootModel* gm, mg::as_groot(m));
    EDGEVLA_ASSIGN_OR_RETURN(const model::StageSpec* spec, m.stage(model::kBackbone));
    EDGEVLA_ASSIGN_OR_RETURN(DeviceInfo info, select_device(o, "groot backbone (cuda)"));
    auto e = std::unique_ptr<BackboneEngine>(
        new BackboneEngine(gm->config(), *spec, info, compute_dtype(o)));
    EDGEVLA_RETURN_IF_ERROR(e->init_device());
    EDGEVLA_RETURN_IF_ERROR(e->load(gm->checkpoint(), o));
    return std::unique_ptr<Engine>(std::move(e));
  }
  Status run(const RunOptions& options) override;

 private:
  BackboneEngine(const mg::GrootConfig& c, const model::StageSpec& spec, DeviceInfo info, DType act)
      : GrootCudaEngine(spec, std::move(info), act), cfg_(c) {}
  Status load(const mg::Checkpoint& ck, const EngineOptions& o);
  Status collect_views();
  Status check_prompt(const Tensor*& ids, const Tensor*& mask, std::int64_t& image_tokens);
  // The views' non-finite pixel counts, read back from the device: an error naming the first bad view.
  Status check_pixels(const std::int32_t* bad) const;
  Status forward(std::int64_t rows);
  Status vision();
  Status llm(std::int64_t rows);
  // Opt-in (EDGEVLA_CUDA_WGMMA_BACKBONE=1, where the device and dtype take the warpgroup GEMM and
  // EDGEVLA_CUDA_WGMMA is not 0): the LLM's four projections on it (wgmma_plan.hpp), their weights
  // tiled in place, and its layers as one chain of launches. At load, after upload. Off by default:
  // on the H200 it made the backbone 0.18 / 0.32 ms slower at 1 / 2 views than cuBLASLt (run 37
  // call 5): at 131-220 rows each block of 64 features reads all of A again (0.5-0.9 MB a block,
  // twice the weights' bytes in L2 traffic for gate|up), and q|k|v's 64 blocks leave half the
  // device idle without k slices.
  Status plan_llm_wgmma();
  std::int64_t grid_offset(std::int64_t g) const { return g * (g - 1) / 2 * side_; }

  mg::GrootConfig cfg_;
  std::int64_t max_edge_ = 0, merge_ = 0, side_ = 0, max_grid_ = 0, max_tokens_ = 0, max_rows_ = 0;
  std::int64_t max_patches_ = 0, max_merged_ = 0, image_slot_ = 0;
  std::vector<int> in_images_;
  int in_ids_ = -1, in_mask_ = -1, out_features_ = -1, out_mask_ = -1, out_image_mask_ = -1,
      out_embeds_ = -1;

  // Weights.
  DevLinear patch_, mlp1_fc1_, mlp1_fc2_;
  float *position_ = nullptr, *mlp1_ln_w_ = nullptr, *mlp1_ln_b_ = nullptr;
  VisionTower tower_;
  void* embed_ = nullptr;
  std::int64_t vocab_ = 0;
  std::vector<QwenLayerDev> ql_;
  bool wg_llm_ = false, wg_chain_ = false;
  bool chain_own_ = backbone_chain_enabled();  // the tower's and LLM's own kernels chained
  WgmmaLaunch wg_how_;
  float* final_norm_ = nullptr;
  std::vector<float> grid_weights_host_, inv_freq_host_;
  float *grid_weights_ = nullptr, *inv_freq_ = nullptr;

  // Buffers.
  std::byte* images_ = nullptr;  // view k at k · image_slot_ bytes, as bound (f32 or bf16)
  void *patches_ = nullptr, *vy_ = nullptr, *vqkv_ = nullptr, *vo_ = nullptr, *vh_ = nullptr;
  void* vs_ = nullptr;  // the tower's residual stream in act_ (VisionTower::stream_in_act)
  float *ve_ = nullptr, *vpost_ = nullptr, *merged_ = nullptr, *img_ = nullptr;
  float* positions_ = nullptr;  // per view slot: the position table interpolated to its grid
  std::array<std::pair<std::int64_t, std::int64_t>, mg::kMaxViews>
      position_grids_{};  // what each slot holds
  void *merged_act_ = nullptr, *mh_ = nullptr;
  float *x_ = nullptr, *feat_ = nullptr;
  // The residual GEMMs' k parts, [max_parts_, rows, width] f32 (engine_common.hpp:
  // kMaxBackboneParts).
  float* parts_ = nullptr;
  int max_parts_ = backbone_parts();
  std::vector<std::vector<float>> norm_m1_host_;  // the − 1 vectors, alive until the upload
  float* final_norm_m1_ = nullptr;
  void *y_ = nullptr, *qkv_ = nullptr, *kvc_ = nullptr, *o_ = nullptr, *gu_ = nullptr,
       *g_ = nullptr;
  std::int32_t* ints_ = nullptr;  // ids | image row | key limit, max_rows_ each
  float* rope_angles_ = nullptr;   // the LLM's RoPE (cos, sin) for positions 0..max_rows_-1
  std::int32_t* rope_first_ = nullptr;  // 0: the table's first position
  std::int32_t* bad_ = nullptr;   // non-finite pixels per view (f32 views)
  void* scratch_ = nullptr;
  std::size_t scratch_bytes_ = 0;

  // Host side.
  std::vector<View> views_;
  std::unique_ptr<PinnedBuffer> pinned_ints_;
  Event pixels_counted_;  // after the non-finite pixel count's copy to the host (fenced runs)
  bool overlap_ = overlap_enabled();
  Tensor features_, mask_out_, image_mask_;
  // (rows, then h, w, dtype of each view): a fixed-size key, so a run allocates nothing.
  using GraphKey = std::array<std::int64_t, 1 + 3 * mg::kMaxViews>;
  std::map<GraphKey, Graph> graphs_;
};

Status BackboneEngine::load(const mg::Checkpoint& ck, const EngineOptions& o) {
  for (std::size_t k = 0;; ++k) {
    const int i = input_index(view_name(k));
    if (i < 0) break;
    in_images_.push_back(i);
  }
  EDGEVLA_ASSIGN_OR_RETURN(in_ids_, input_slot("input_ids"));
  EDGEVLA_ASSIGN_OR_RETURN(in_mask_, input_slot("attention_mask"));
  EDGEVLA_ASSIGN_OR_RETURN(out_features_, output_slot("backbone_features"));
  EDGEVLA_ASSIGN_OR_RETURN(out_mask_, output_slot("attention_mask"));
  // Bound on this device, the features stay there (no host round trip): an action head on the same
  // device reads them in place, one in another process maps the block.
  outputs_[static_cast<std::size_t>(out_features_)].device = Device::cuda(info_.index);
  EDGEVLA_ASSIGN_OR_RETURN(out_image_mask_, output_slot("image_mask"));
  EDGEVLA_ASSIGN_OR_RETURN(out_embeds_, output_slot("image_embeds"));
  if (in_images_.empty() || in_images_.size() > static_cast<std::size_t>(mg::kMaxViews)) {
    return internal_error("groot backbone (cuda): the family's backbone spec declares " +
                          std::to_string(in_images_.size()) + " views, not 1 to " + std::to_string(mg::kMaxViews));
  }
  const auto& v = cfg_.vision;
  const auto& t = cfg_.text;
  if (v.head_dim() % 8 != 0 || t.head_dim % 8 != 0 || v.head_dim() > 256 || t.head_dim > 256) {
    return invalid_argument("groot backbone (cuda): head sizes " + std::to_string(v.head_dim()) +
                            " (vision) / " + std::to_string(t.head_dim) +
                            " (LLM) must be multiples of 8 up to 256");
  }
  const Shape& img = inputs_[static_cast<std::size_t>(in_images_[0])].max_shape;
  max_edge_ = std::max(img[1], img[2]);
  merge_ = std::int64_t{v.patch_size} * cfg_.unshuffle_factor;
  side_ = v.position_grid();
  max_grid_ = max_edge_ / v.patch_size;
  max_tokens_ = inputs_[static_cast<std::size_t>(in_ids_)].max_shape[0];
  max_rows_ = padded_rows(max_tokens_);
  const auto views = static_cast<std::int64_t>(in_images_.size());
  max_patches_ = views * max_grid_ * max_grid_;
  max_merged_ = max_patches_ / (cfg_.unshuffle_factor * cfg_.unshuffle_factor);
  image_slot_ = (3 * max_edge_ * max_edge_ * 4 + 255) / 256 * 256;

  EDGEVLA_ASSIGN_OR_RETURN(cg::SiglipWeights sw, cg::load_siglip(ck));
  EDGEVLA_ASSIGN_OR_RETURN(cg::Mlp1Weights mw, cg::load_mlp1(ck));
  EDGEVLA_ASSIGN_OR_RETURN(cg::Qwen3Weights qw, cg::load_qwen3(ck));
  WeightPlan wp(act_);
  wp.linear_padded(patch_, sw.patch, sw.patch.out, VisionTower::patch_width(sw.patch.in));
  wp.vector(position_, sw.position);
  tower_.plan(wp, sw.layers, sw.post_w, sw.post_b);
  wp.vector(mlp1_ln_w_, mw.ln_w);
  wp.vector(mlp1_ln_b_, mw.ln_b);
  wp.linear(mlp1_fc1_, {&mw.fc1});
  wp.linear(mlp1_fc2_, {&mw.fc2});
  vocab_ = qw.embed.vocab;
  wp.matrix(embed_, qw.embed.data, qw.embed.dtype, qw.embed.vocab, qw.embed.width);
  ql_.resize(qw.layers.size());
  const auto minus_one = [&](const std::vector<float>& w) -> const std::vector<float>& {
    norm_m1_host_.emplace_back(w);
    for (float& x : norm_m1_host_.back()) x -= 1.0f;
    return norm_m1_host_.back();
  };
  norm_m1_host_.reserve(2 * qw.layers.size() + 1);  // no reallocation: the plan holds their data
  for (std::size_t i = 0; i < qw.layers.size(); ++i) {
    const cg::Qwen3Layer& s = qw.layers[i];
    QwenLayerDev& d = ql_[i];
    wp.vector(d.in_norm, s.in_norm);
    wp.vector(d.post_norm, s.post_norm);
    wp.vector(d.in_norm_m1, minus_one(s.in_norm));
    wp.vector(d.post_norm_m1, minus_one(s.post_norm));
    wp.vector(d.q_norm, s.q_norm);
    wp.vector(d.k_norm, s.k_norm);
    wp.linear(d.qkv, {&s.q, &s.k, &s.v});
    wp.linear(d.o, {&s.o});
    wp.linear(d.gate_up, {&s.gate, &s.up});
    wp.linear(d.down, {&s.down});
  }
  wp.vector(final_norm_, qw.final_norm);
  wp.vector(final_norm_m1_, minus_one(qw.final_norm));
  // The position table's interpolation weights for every grid size g (wy and wx alike):
  // [g, side] at grid_offset(g), in the CPU engine's antialiased bilinear form.
  grid_weights_host_.assign(static_cast<std::size_t>(grid_offset(max_grid_ + 1)), 0.0f);
  for (std::int64_t g = 1; g <= max_grid_; ++g) {
    cg::antialias_bilinear_weights(side_, g, grid_weights_host_.data() + grid_offset(g));
  }
  wp.vector(grid_weights_, grid_weights_host_);
  // RoPE frequencies in float32, as transformers builds them (notes §8: tables in fp32).
  const float theta = static_cast<float>(t.rope_theta);
  for (std::int64_t i = 0; i < t.head_dim; i += 2) {
    inv_freq_host_.push_back(
        1.0f / std::pow(theta, static_cast<float>(i) / static_cast<float>(t.head_dim)));
  }
  wp.vector(inv_freq_, inv_freq_host_);
  wp.place(arena_);

  const std::int64_t M = max_patches_, Mm = max_merged_, Dv = v.hidden_size;
  const std::int64_t pp = v.patch_dim(), wide = cfg_.mlp1_in(), W = t.hidden_size, R = max_rows_;
  const std::int64_t H = t.num_heads, K = t.num_kv_heads, h = t.head_dim, F = t.intermediate_size;
  const std::int64_t Q = (H + 2 * K) * h;
  BufferPlan buf(arena_);
  buf(images_, static_cast<std::size_t>(views * image_slot_));
  buf(patches_, bytes_of(act_, M * VisionTower::patch_width(pp)));
  buf(ve_, bytes_of(DType::kF32, M * Dv));
  buf(positions_, bytes_of(DType::kF32, M * Dv));
  buf(vy_, bytes_of(act_, M * Dv));
  buf(vqkv_, bytes_of(act_, M * 3 * Dv));
  buf(vo_, bytes_of(act_, M * Dv));
  buf(vh_, bytes_of(act_, M * tower_.mlp()));
  if (tower_.stream_in_act(act_)) buf(vs_, bytes_of(act_, M * Dv));
  buf(vpost_, bytes_of(DType::kF32, M * Dv));
  buf(merged_, bytes_of(DType::kF32, Mm * wide));
  buf(merged_act_, bytes_of(act_, Mm * wide));
  buf(mh_, bytes_of(act_, Mm * W));
  buf(img_, bytes_of(DType::kF32, Mm * W));
  if (max_parts_ > 1) {
    const std::int64_t cap = kBackbonePartsMaxRows;
    buf(parts_, bytes_of(DType::kF32, max_parts_ * std::max(std::min(M, cap) * Dv, std::min(R, cap) * W)));
  }
  buf(x_, bytes_of(DType::kF32, R * W));
  buf(feat_, bytes_of(DType::kF32, R * W));
  buf(y_, bytes_of(act_, R * W));
  buf(qkv_, bytes_of(act_, R * Q));
  buf(kvc_, bytes_of(act_, R * 2 * K * h));
  buf(o_, bytes_of(act_, R * H * h));
  buf(gu_, bytes_of(act_, R * 2 * F));
  buf(g_, bytes_of(act_, R * F));
  buf(ints_, bytes_of(DType::kI32, 3 * R));
  buf(rope_angles_, bytes_of(DType::kF32, R * h));  // [R][h/2] (cos, sin)
  buf(rope_first_, bytes_of(DType::kI32, 1));
  buf(bad_, bytes_of(DType::kI32, mg::kMaxViews));
  AttentionArgs va{act_, views, max_grid_ * max_grid_, v.num_heads, v.num_heads, v.head_dim()};
  va.a_max = max_grid_ * max_grid_;
  AttentionArgs la{act_, 1, R, H, K, h};
  la.b_len = R;
  // The most the tower takes at any view count and view size (patches a view), and the LLM at any
  // prompt bucket.
  scratch_bytes_ = std::max(attention_scratch_bytes_upto(va, 1), attention_scratch_bytes_upto(la, row_bucket()));
  buf(scratch_, scratch_bytes_);
  EDGEVLA_RETURN_IF_ERROR(allocate_and_upload(wp, ck, o));
  buf.resolve();
  EDGEVLA_RETURN_IF_ERROR(plan_llm_wgmma());
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(x_, 0, bytes_of(DType::kF32, R * W), stream_.get()));
  // The LLM's RoPE angles for positions 0..R-1 (a row's position is its index), made once: the
  // q/k norm kernel reads them instead of computing them in every head of every layer.
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(rope_first_, 0, sizeof(std::int32_t), stream_.get()));
  EDGEVLA_RETURN_IF_ERROR(rope_table(stream_.get(), R, h / 2, rope_first_, inv_freq_, rope_angles_));
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_.get()));
  EDGEVLA_ASSIGN_OR_RETURN(PinnedBuffer pinned,
                           PinnedBuffer::allocate(bytes_of(DType::kI32, 3 * R + mg::kMaxViews)));
  pinned_ints_ = std::make_unique<PinnedBuffer>(std::move(pinned));
  EDGEVLA_ASSIGN_OR_RETURN(pixels_counted_, Event::create());
  EDGEVLA_ASSIGN_OR_RETURN(features_, Tensor::empty(DType::kF32, Shape{max_tokens_, W}));
  EDGEVLA_ASSIGN_OR_RETURN(mask_out_, Tensor::empty(DType::kBool, Shape{max_tokens_}));
  EDGEVLA_ASSIGN_OR_RETURN(image_mask_, Tensor::empty(DType::kBool, Shape{max_tokens_}));
  views_.reserve(in_images_.size());
  return Status::ok();
}

Status BackboneEngine::plan_llm_wgmma() {
  const char* env = std::getenv("EDGEVLA_CUDA_WGMMA_BACKBONE");
  if (env == nullptr || std::string_view(env) != "1") return Status::ok();
  const WgmmaChoice c = wgmma_choice(act_, "", "groot backbone (cuda)");
  if (!c.on || ql_.empty()) return Status::ok();
  std::vector<WgmmaWeight> weights;
  for (QwenLayerDev& l : ql_) {
    for (DevLinear* w : {&l.qkv, &l.o, &l.gate_up, &l.down}) {
      if (w->ld != w->in || !wgmma_gemm_fits(1, w->out, w->in, WgmmaEpilogue::kNone)) {
        spdlog::info("groot backbone (cuda): the LLM stays on cuBLASLt (a {} x {} projection does not fit the "
                     "warpgroup GEMM)", w->out, w->in);
        return Status::ok();
      }
      weights.push_back({w, WgmmaEpilogue::kNone});
    }
  }
  EDGEVLA_RETURN_IF_ERROR(wgmma_tile_in_place(stream_.get(), weights, "groot backbone (cuda)"));
  wg_llm_ = true;
  wg_chain_ = c.chain;
  wg_how_ = c.launch(info_.multiprocessors);
  spdlog::info("groot backbone (cuda): the LLM's {} projections on the warpgroup GEMM{}", weights.size(),
               wg_chain_ ? ", its layers chained" : "");
  return Status::ok();
}

Status BackboneEngine::collect_views() {
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
    views_.push_back({t, h, w, t->dtype()});
  }
  if (views_.empty()) {
    return invalid_argument(
        "groot backbone: no view bound; bind image.0 (and image.1.. for embodiments with more "
        "cameras)");
  }
  return Status::ok();
}

Status BackboneEngine::check_pixels(const std::int32_t* bad) const {
  for (std::size_t k = 0; k < views_.size(); ++k) {
    if (bad[k] > 0) {
      return invalid_argument("groot backbone: " + view_name(k) + " holds " + std::to_string(bad[k]) +
                              " non-finite pixel(s); check the camera frame and the pre-processing");
    }
  }
  return Status::ok();
}

Status BackboneEngine::check_prompt(const Tensor*& ids, const Tensor*& mask,
                                    std::int64_t& image_tokens) {
  ids = bound_input(in_ids_);
  mask = bound_input(in_mask_);
  if (ids == nullptr || mask == nullptr) {
    return invalid_argument(
        "groot backbone: bind input_ids and attention_mask (the tokenized prompt)");
  }
  if (!ids->device().is_cpu() || !mask->device().is_cpu()) {
    return invalid_argument(
        "groot backbone (cuda): input_ids and attention_mask must be host tensors");
  }
  std::array<mg::BoundView, mg::kMaxViews> views;  // no allocation per run
  std::size_t n = 0;
  for (const View& v : views_) views[n++] = mg::BoundView{v.pixels, (v.h / merge_) * (v.w / merge_)};
  EDGEVLA_ASSIGN_OR_RETURN(image_tokens, mg::check_backbone_prompt(*ids, *mask, max_tokens_, vocab_,
                                                                   cfg_.image_token_id, std::span(views.data(), n)));
  return Status::ok();
}

// SigLIP2, unshuffle and mlp1 over this run's views → img_ [merged tokens, W] f32.
Status BackboneEngine::vision() {
  const auto& v = cfg_.vision;
  const std::int64_t P = v.patch_size, Dv = v.hidden_size;
  const std::int64_t r = cfg_.unshuffle_factor, wide = cfg_.mlp1_in(), W = cfg_.text.hidden_size;
  const std::size_t es = dtype_size(act_);
  const float eps = static_cast<float>(v.layer_norm_eps);
  cudaStream_t s = stream_.get();
  const Gemm mm = gemm();
  std::int64_t M = 0;
  for (std::size_t k = 0; k < views_.size(); ++k) {
    const View& vw = views_[k];
    EDGEVLA_RETURN_IF_ERROR(image_patches(
        s, images_ + static_cast<std::int64_t>(k) * image_slot_, vw.dtype, vw.h, vw.w, P,
        static_cast<std::byte*>(patches_) + static_cast<std::size_t>(M * patch_.in) * es, act_, patch_.in));
    M += (vw.h / P) * (vw.w / P);
  }
  EDGEVLA_RETURN_IF_ERROR(mm(patches_, M, patch_.in, patch_, ve_, DType::kF32, Dv));
  std::int64_t off = 0;
  for (std::size_t k = 0; k < views_.size(); ++k) {
    const std::int64_t n = (views_[k].h / P) * (views_[k].w / P);
    const float* table = positions_ + static_cast<std::int64_t>(k) * max_grid_ * max_grid_ * Dv;
    EDGEVLA_RETURN_IF_ERROR(add_periodic_rows(s, ve_ + off * Dv, n, Dv, table, n));
    off += n;
  }
  // Attention inside each view only (upstream's per-image flash attention); consecutive views of
  // one size are one batched call.
  std::array<VisionTower::Images, mg::kMaxViews> runs{};
  std::size_t n_runs = 0;
  for (std::size_t k = 0; k < views_.size();) {
    std::size_t same = 1;
    while (k + same < views_.size() && views_[k + same].h == views_[k].h && views_[k + same].w == views_[k].w) ++same;
    runs[n_runs++] = VisionTower::Images{static_cast<std::int64_t>(same), (views_[k].h / P) * (views_[k].w / P)};
    k += same;
  }
  {
    const DependentLaunchScope chained(chain_own_);
    EDGEVLA_RETURN_IF_ERROR(tower_.encode(mm, VisionTower::Dims{Dv, v.num_heads, eps},
                                          VisionTower::Buffers{ve_, vy_, vqkv_, vo_, vh_, parts_, max_parts_, scratch_,
                                                               scratch_bytes_, vs_},
                                          {runs.data(), n_runs}, vpost_, DType::kF32, ablation_));
  }
  off = 0;
  std::int64_t merged = 0;
  for (const View& vw : views_) {
    const std::int64_t gh = vw.h / P, gw = vw.w / P;
    EDGEVLA_RETURN_IF_ERROR(
        pixel_unshuffle(s, vpost_ + off * Dv, gh, gw, Dv, r, merged_ + merged * wide));
    off += gh * gw;
    merged += (gh / r) * (gw / r);
  }
  EDGEVLA_RETURN_IF_ERROR(
      layer_norm(s, merged_, merged, wide, mlp1_ln_w_, mlp1_ln_b_, kMlp1Eps, merged_act_, act_));
  EDGEVLA_RETURN_IF_ERROR(mm(merged_act_, merged, wide, mlp1_fc1_, mh_, act_, W));
  EDGEVLA_RETURN_IF_ERROR(
      bias_activation(s, mh_, act_, merged, W, W, nullptr, Activation::kGeluErf));
  return mm(mh_, merged, W, mlp1_fc2_, img_, DType::kF32, W);
}

// Token embeddings, the image rows spliced in, the kept layers and the final norm over `rows`
// (a bucket) → feat_.
Status BackboneEngine::llm(std::int64_t rows) {
  const auto& t = cfg_.text;
  const std::int64_t W = t.hidden_size, H = t.num_heads, K = t.num_kv_heads, h = t.head_dim,
                     F = t.intermediate_size;
  const std::int64_t Q = (H + 2 * K) * h, R = max_rows_;
  const std::size_t es = dtype_size(act_);
  const float eps = static_cast<float>(t.rms_norm_eps);
  cudaStream_t s = stream_.get();
  const Gemm mm = gemm();
  const std::int32_t* ids = ints_;
  const std::int32_t* image_row = ints_ + R;
  const std::int32_t* key_limit = ints_ + 2 * R;
  // Packed key|value rows past the real tokens stay zero for the whole pass (the attention
  // loads them, masked): cleared once here.
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(kvc_, 0, bytes_of(act_, rows * 2 * K * h), s));
  EDGEVLA_RETURN_IF_ERROR(embed_tokens(s, ids, rows, embed_, act_, vocab_, W, 1.0f, x_));
  EDGEVLA_RETURN_IF_ERROR(
      gather_rows(s, img_, DType::kF32, W, image_row, rows, W, x_, DType::kF32, W, false));
  const float scale = 1.0f / std::sqrt(static_cast<float>(h));
  auto* q = static_cast<std::byte*>(qkv_);
  ResidualParts pending{0, rows * W, nullptr};  // the last residual GEMM's parts, for the next norm
  // Qwen's RMSNorm over x: with parts pending, the kernel that adds them first (its (1 + w) with
  // w − 1); else the one-block-a-row kernel with w.
  // Profiling builds: the LLM's kernel classes left out (llm_norm, llm_qkv, llm_rope, llm_attention,
  // llm_o, llm_gate_up, llm_swiglu, llm_down; the tower's in vision_tower.hpp).
  const Ablation& ab = ablation_;
  const auto norm = [&](const float* w, const float* w_m1, void* y, DType y_type) {
    if (ab.skip("llm_norm") && y != feat_) {
      pending.count = 0;
      return Status::ok();
    }
    const Status st =
        pending.count > 0
            ? rms_norm(s, x_, parts_, DType::kF32, rows, W, w_m1, eps, y, y_type, pending)
            : rms_norm_rows(s, x_, DType::kF32, W, rows, 1, W, w, eps, y, y_type, W);
    pending.count = 0;
    return st;
  };
  const bool parted = rows <= kBackbonePartsMaxRows && parts_ != nullptr && max_parts_ > 1;
  const auto residual_gemm = [&](std::string_view what, const void* a, std::int64_t k, const DevLinear& w) -> Status {
    if (ab.skip(what)) return Status::ok();
    if (!wg_llm_) return mm.residual(a, rows, k, w, x_, parted ? parts_ : nullptr, max_parts_, pending);
    if (parted) {
      // k parts for the next norm to add, as on cuBLASLt.
      EDGEVLA_ASSIGN_OR_RETURN(const int count,
                               wgmma_linear(s, a, rows, k, w, WgmmaEpilogue::kNone, parts_, w.out, max_parts_, wg_how_));
      pending = ResidualParts{count, rows * w.out, w.bias};
      return Status::ok();
    }
    // Added into the stream in place (x = A · Wᵀ + bias + x).
    pending.count = 0;
    return wgmma_linear(s, a, rows, k, w, WgmmaEpilogue::kF32, x_, w.out, 1, wg_how_, {}, x_, w.out).status();
  };
  const auto linear = [&](const void* a, const DevLinear& w, void* d, std::int64_t ldd) -> Status {
    if (!wg_llm_) return mm(a, rows, W, w, d, act_, ldd);
    return wgmma_linear(s, a, rows, W, w, WgmmaEpilogue::kNone, d, ldd, 1, wg_how_).status();
  };
  // On the warpgroup GEMM, the layers as one chain of launches (each GEMM's first weight tiles load
  // while the kernel before it runs); on cuBLASLt, the own kernels only with chain_own_.
  const DependentLaunchScope chained((wg_llm_ && wg_chain_) || chain_own_);
  for (const QwenLayerDev& l : ql_) {
    EDGEVLA_RETURN_IF_ERROR(norm(l.in_norm, l.in_norm_m1, y_, act_));
    if (!ab.skip("llm_qkv")) EDGEVLA_RETURN_IF_ERROR(linear(y_, l.qkv, qkv_, Q));
    // q_norm / k_norm per head and RoPE at positions 0..rows-1 (q in place), the real tokens'
    // keys|values packed in order: causal by position is then causal by packed row, and
    // key_limit[r] (0 for padding) bounds what row r sees.
    if (!ab.skip("llm_rope")) {
      EDGEVLA_RETURN_IF_ERROR(qwen_qk_norm_rope(s, q, Q, rows, H, K, h, l.q_norm, l.k_norm, eps,
                                                inv_freq_, key_limit, kvc_, act_, rope_angles_));
    }
    AttentionArgs a{act_, 1, rows, H, K, h, scale};
    a.q = q;
    a.ldq = Q;
    a.out = o_;
    a.ldo = H * h;
    a.b = KvBlock{kvc_, static_cast<std::byte*>(kvc_) + K * h * es, 2 * K * h, 0};
    a.b_len = rows;
    a.b_limit = key_limit;
    a.scratch = scratch_;
    a.scratch_bytes = scratch_bytes_;
    if (!ab.skip("llm_attention")) EDGEVLA_RETURN_IF_ERROR(attention(s, a));
    EDGEVLA_RETURN_IF_ERROR(residual_gemm("llm_o", o_, H * h, l.o));
    EDGEVLA_RETURN_IF_ERROR(norm(l.post_norm, l.post_norm_m1, y_, act_));
    if (!ab.skip("llm_gate_up")) EDGEVLA_RETURN_IF_ERROR(linear(y_, l.gate_up, gu_, 2 * F));
    if (!ab.skip("llm_swiglu")) EDGEVLA_RETURN_IF_ERROR(swiglu(s, gu_, rows, F, g_, act_));
    EDGEVLA_RETURN_IF_ERROR(residual_gemm("llm_down", g_, F, l.down));
  }
  return norm(final_norm_, final_norm_m1_, feat_, DType::kF32);
}

Status BackboneEngine::forward(std::int64_t rows) {
  EDGEVLA_RETURN_IF_ERROR(vision());
  return llm(rows);
}

Status BackboneEngine::run(const RunOptions&) {
  const NvtxRange nvtx(family(), stage());
  const auto t0 = std::chrono::steady_clock::now();
  timings_ = {};
  in_bound_.resize(inputs_.size());
  out_bound_.resize(outputs_.size());
  const std::int64_t W = cfg_.text.hidden_size, R = max_rows_;
  cudaStream_t s = stream_.get();
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaSetDevice(info_.index));
  // Inputs still being written by queued device work: this stream waits for it, on the device.
  EDGEVLA_ASSIGN_OR_RETURN(const InputWait input_wait, wait_for_inputs(bound_inputs(), s, info_.index));
  EDGEVLA_RETURN_IF_ERROR(collect_views());
  const Tensor* ids = nullptr;
  const Tensor* mask = nullptr;
  std::int64_t n_img = 0;
  EDGEVLA_RETURN_IF_ERROR(check_prompt(ids, mask, n_img));
  const std::int64_t L = ids->shape()[0];
  const std::int64_t rows = padded_rows(L);

  const Tensor* bf = bound_output(out_features_);
  const Tensor& feats = bf ? *bf : features_;
  if (feats.dtype() != DType::kF32 || feats.shape()[0] < L || feats.shape()[1] != W ||
      !(feats.device().is_cpu() || feats.device() == Device::cuda(info_.index))) {
    return invalid_argument("groot backbone: output backbone_features " + feats.describe() +
                            " cannot take f32 [" + std::to_string(L) + "," + std::to_string(W) +
                            "] (bind a host or cuda:" + std::to_string(info_.index) +
                            " f32 tensor)");
  }
  const Tensor* be = bound_output(out_embeds_);
  if (be != nullptr && (be->dtype() != DType::kF32 || be->shape()[0] < n_img ||
                        be->shape()[1] != W || !be->device().is_cpu())) {
    return invalid_argument("groot backbone: output image_embeds " + be->describe() +
                            " cannot take host f32 [" + std::to_string(n_img) + "," +
                            std::to_string(W) + "]");
  }

  // The features bound where they may carry a fence (may_fence), and no output read on the host:
  // they go out with a fence while the stream still computes (the action head's stream waits for
  // it on the device); the non-finite pixel check then reads its count once the counting is done,
  // the pass already queued behind it, and only then copies the features out and fences them (a
  // refused chunk leaves the bound features untouched). Otherwise this stream finishes here.
  const bool fenced = bf != nullptr && be == nullptr && may_fence(*bf, info_.index);
  std::int32_t* bad = static_cast<std::int32_t*>(pinned_ints_->get()) + 3 * R;

  // Inputs to the device: pixels as bound, then ids | image row | key limit.
  for (std::size_t k = 0; k < views_.size(); ++k) {
    const Tensor* t = views_[k].pixels;
    const auto kind = t->device().is_cpu() ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToDevice;
    EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(
        images_ + static_cast<std::int64_t>(k) * image_slot_, t->raw_data(), t->nbytes(), kind, s));
  }
  const std::int32_t* id = ids->data<std::int32_t>();
  const bool* valid = mask->data<bool>();
  bool* image_mask = image_mask_.data<bool>();
  auto* ints = static_cast<std::int32_t*>(pinned_ints_->get());
  std::int32_t images = 0, keys = 0;
  for (std::int64_t i = 0; i < R; ++i) {
    const bool in = i < L;
    const bool is_image = in && id[i] == cfg_.image_token_id;
    if (in) image_mask[i] = is_image;
    ints[i] = in ? id[i] : 0;
    ints[R + i] = is_image ? images++ : -1;
    ints[2 * R + i] = in && valid[i] ? ++keys : 0;
  }
  EDGEVLA_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(ints_, ints, bytes_of(DType::kI32, 3 * R), cudaMemcpyHostToDevice, s));
  // Each view slot's interpolated position table, made when the slot's grid changes (outside
  // the graph, which adds it).
  const std::int64_t P = cfg_.vision.patch_size, Dv = cfg_.vision.hidden_size;
  for (std::size_t k = 0; k < views_.size(); ++k) {
    const std::int64_t gh = views_[k].h / P, gw = views_[k].w / P;
    if (position_grids_[k] == std::make_pair(gh, gw)) continue;
    float* slot = positions_ + static_cast<std::int64_t>(k) * max_grid_ * max_grid_ * Dv;
    EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(slot, 0, bytes_of(DType::kF32, gh * gw * Dv), s));
    EDGEVLA_RETURN_IF_ERROR(add_grid_positions(s, slot, gh, gw, Dv, position_, side_,
                                               grid_weights_ + grid_offset(gh),
                                               grid_weights_ + grid_offset(gw)));
    position_grids_[k] = {gh, gw};
  }
  // Non-finite pixels are counted on the device and reported after the run (f32 views; a bf16
  // view is taken as it is).
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(bad_, 0, bytes_of(DType::kI32, mg::kMaxViews), s));
  for (std::size_t k = 0; k < views_.size(); ++k) {
    if (views_[k].dtype != DType::kF32) continue;
    const auto* pixels =
        reinterpret_cast<const float*>(images_ + static_cast<std::int64_t>(k) * image_slot_);
    EDGEVLA_RETURN_IF_ERROR(count_nonfinite(s, pixels, 3 * views_[k].h * views_[k].w, bad_ + k));
  }
  if (fenced) {
    EDGEVLA_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(bad, bad_, bytes_of(DType::kI32, mg::kMaxViews), cudaMemcpyDeviceToHost, s));
    EDGEVLA_CUDA_RETURN_IF_ERROR(cudaEventRecord(pixels_counted_.get(), s));
  }
  // Fenced runs: the count read once its copy is done. Before the pass is queued only with
  // EDGEVLA_CUDA_GROOT_OVERLAP=0; by default after, so the host's wake-up and the launch no
  // longer sit between the counting and the pass on the device (run 59).
  const auto check_counted_pixels = [&]() -> Status {
    EDGEVLA_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(pixels_counted_.get()));
    return check_pixels(bad);
  };
  if (fenced && !overlap_) EDGEVLA_RETURN_IF_ERROR(check_counted_pixels());

  // The pass: captured once per (views, bucket) after a first eager run (which plans GEMMs).
  GraphKey key{};
  key[0] = rows;
  for (std::size_t k = 0; k < views_.size(); ++k) {
    key[1 + 3 * k] = views_[k].h;
    key[2 + 3 * k] = views_[k].w;
    key[3 + 3 * k] = static_cast<std::int64_t>(views_[k].dtype) + 1;
  }
  auto it = graphs_.find(key);
  if (it == graphs_.end()) {
    EDGEVLA_RETURN_IF_ERROR(forward(rows));
    EDGEVLA_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(s));
    EDGEVLA_ASSIGN_OR_RETURN(Graph g, Graph::capture(s, [&] { return forward(rows); }));
    log_plans();
    if (graphs_.size() >= 32)
      graphs_.clear();  // frames of ever new sizes: do not keep graphs without bound
    graphs_.emplace(key, std::move(g));
  } else {
    EDGEVLA_RETURN_IF_ERROR(it->second.launch(s));
  }
  if (fenced && overlap_) EDGEVLA_RETURN_IF_ERROR(check_counted_pixels());

  // Outputs.
  const auto fkind = feats.device().is_cpu() ? cudaMemcpyDeviceToHost : cudaMemcpyDeviceToDevice;
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(
      feats.raw_data(), feat_, static_cast<std::size_t>(L * W) * sizeof(float), fkind, s));
  if (be != nullptr) {
    EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(
        be->raw_data(), img_, static_cast<std::size_t>(n_img * W) * 4, cudaMemcpyDeviceToHost, s));
  }
  std::copy(valid, valid + L, mask_out_.data<bool>());
  if (fenced) {
    EDGEVLA_RETURN_IF_ERROR(fence_output(*bf, s, info_.index));
  } else {
    EDGEVLA_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(bad, bad_, bytes_of(DType::kI32, mg::kMaxViews), cudaMemcpyDeviceToHost, s));
    EDGEVLA_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(s));
    EDGEVLA_RETURN_IF_ERROR(check_pixels(bad));
    EDGEVLA_ASSIGN_OR_RETURN(timings_.input_wait_ms, input_wait.waited_ms());
  }
  EDGEVLA_ASSIGN_OR_RETURN(Tensor fview, feats.slice(0, 0, L));
  set_produced(out_features_, std::move(fview));
  if (be != nullptr) {
    EDGEVLA_ASSIGN_OR_RETURN(Tensor eview, be->slice(0, 0, n_img));
    set_produced(out_embeds_, std::move(eview));
  } else {
    set_produced(out_embeds_, Tensor());
  }
  EDGEVLA_ASSIGN_OR_RETURN(Tensor mview, mask_out_.slice(0, 0, L));
  set_produced(out_mask_, std::move(mview));
  EDGEVLA_ASSIGN_OR_RETURN(Tensor iview, image_mask_.slice(0, 0, L));
  set_produced(out_image_mask_, std::move(iview));
  timings_.total_ms = ms_since(t0);
  // Fenced: the host's part (the consumer's stream waits for the rest and counts it to this
  // stage, RunTimings::input_wait_ms).
  timings_.parts = {{fenced ? "backbone_enqueue" : "backbone_gpu", timings_.total_ms}};
  return Status::ok();
}

}  // namespace

const bool kGrootBackboneRegistered = register_engine(
    "cuda", std::string(mg::kFamily), std::string(model::kBackbone), BackboneEngine::create);

}  // namespace edgevla::backends::cuda::groot
