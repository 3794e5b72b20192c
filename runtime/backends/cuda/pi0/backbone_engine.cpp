// pi0 / pi0.5 backbone on the GPU: SigLIP over the valid cameras, projector, token embeddings,
// and the Gemma prefix pass that leaves every layer's keys (after RoPE) and values in a device
// cache [L, 2, P, K, h]. Invalid prefix tokens are dropped before any compute, as on the CPU.
// The whole pass is one CUDA graph per (cameras, prefix-length bucket): rows are padded up to
// the bucket (16 rows), the real length is read on the device (attention), so a graph serves
// every prompt length of its bucket.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <string_view>
#include <tuple>
#include <vector>

#include "runtime/backends/cuda/fence.hpp"
#include "runtime/backends/cuda/kernels/attention.hpp"
#include "runtime/backends/cuda/kernels/kernels.hpp"
#include "runtime/backends/cuda/pi0/pi0_cuda.hpp"
#include "runtime/backends/cuda/vision_tower.hpp"

namespace edgevla::backends::cuda::pi0 {
namespace {

constexpr float kNormEps = 1e-6f;

struct GemmaLayerDev {
  float *in_norm = nullptr, *post_norm = nullptr;
  DevLinear qkv, o, gate_up, down;
};

class BackboneEngine final : public CudaEngine {
 public:
  static Expected<std::unique_ptr<Engine>> create(const model::Model& m, const EngineOptions& o) {
    EDGEVLA_ASSIGN_OR_RETURN(const model::pi0::Pi0Model* pm, model::pi0::as_pi0(m));
    EDGEVLA_ASSIGN_OR_RETURN(const model::StageSpec* spec, m.stage(model::kBackbone));
    EDGEVLA_ASSIGN_OR_RETURN(DeviceInfo info, select_device(o, "backbone (cuda)"));
    auto e = std::unique_ptr<BackboneEngine>(new BackboneEngine(pm->config(), *spec, info, compute_dtype(o)));
    EDGEVLA_RETURN_IF_ERROR(e->init_device());
    EDGEVLA_RETURN_IF_ERROR(e->load(*pm, o));
    return std::unique_ptr<Engine>(std::move(e));
  }
  Status run(const RunOptions& options) override;

 private:
  BackboneEngine(const model::ModelConfig& c, const model::StageSpec& spec, DeviceInfo info, DType act)
      : CudaEngine(spec, std::move(info), act), cfg_(c) {}
  Status load(const model::pi0::Pi0Model& m, const EngineOptions& o);
  // `into`: a bound cache [L, 2, P, K, h] on this device that each layer's keys and values are
  // also copied into as they are made (layer fences into a bound block), or nullptr.
  Status forward(std::int64_t cams, std::int64_t rows, std::byte* into);

  model::ModelConfig cfg_;
  int in_tokens_ = -1, in_token_mask_ = -1, out_kv_ = -1, out_mask_ = -1, out_vision_ = -1;
  std::vector<int> in_images_;

  // Weights.
  DevLinear patch_, projector_;
  float* position_ = nullptr;
  VisionTower tower_;
  void* embed_ = nullptr;
  std::vector<GemmaLayerDev> gl_;
  // Buffers (arena offsets resolved to pointers after allocation).
  float* images_ = nullptr;
  void *patches_ = nullptr, *vy_ = nullptr, *vqkv_ = nullptr, *vo_ = nullptr, *vh_ = nullptr;
  void* vs_ = nullptr;  // the tower's residual stream in act_ (VisionTower::stream_in_act)
  float *ve_ = nullptr, *x_ = nullptr;
  // The residual GEMMs' (o, fc2 / down) k parts, which the norm after each adds to the residual
  // stream: [max_parts_, rows, width] f32 (engine_common.hpp: kMaxBackboneParts).
  float* parts_ = nullptr;
  int max_parts_ = backbone_parts();
  void* kv_conv_ = nullptr;
  float* vis_ = nullptr;  // the projector's output per valid camera, kept for the diagnostic output
  void *y_ = nullptr, *qkv_ = nullptr, *o_ = nullptr, *gu_ = nullptr, *g_ = nullptr, *kv_ = nullptr;
  std::int32_t *ids_ = nullptr, *n_dev_ = nullptr, *zero_ = nullptr;
  void* scratch_ = nullptr;
  std::size_t scratch_bytes_ = 0;
  std::vector<float> inv_freq_host_;
  float* inv_freq_ = nullptr;
  // Host side.
  std::vector<std::int32_t> ids_host_;    // padded to the largest bucket
  std::vector<std::int32_t> prompt_ids_;  // valid prompt tokens of this run
  Tensor mask_own_;
  // (cameras, rows bucket, the bound cache written inside the pass or nullptr).
  std::map<std::tuple<std::int64_t, std::int64_t, std::byte*>, Graph> graphs_;
  // Each layer's keys and values written (EDGEVLA_CUDA_LAYER_FENCES): handed out with the cache
  // this engine keeps (kv unbound), so an action head on this device starts its first step on
  // layer i once layer i is done instead of after the whole pass; with layer_fences_bound_, also
  // with a cache bound on this device (a bus block), written layer by layer inside the pass.
  std::shared_ptr<LayerEvents> layer_events_;
  bool chain_own_ = backbone_chain_enabled();  // the tower's and the layers' own kernels chained
  bool layer_fences_bound_ = false;
  // The bound blocks written inside the pass (at most kMaxLayeredBlocks, the first ones seen).
  std::vector<std::byte*> layered_blocks_;
  bool admit_layered_block(std::byte* block);
};

// EDGEVLA_CUDA_LAYER_FENCES: 0 off; 1 per-layer events with the engine's own cache only; 2 (default)
// also with a bound cache on the device.
int layer_fences() {
  const char* v = std::getenv("EDGEVLA_CUDA_LAYER_FENCES");
  if (v == nullptr || *v == '\0') return 2;
  const std::string_view s(v);
  return s == "0" ? 0 : s == "1" ? 1 : 2;
}

Status BackboneEngine::load(const model::pi0::Pi0Model& m, const EngineOptions& o) {
  const model::Checkpoint& ck = m.checkpoint();
  const auto& v = cfg_.vision;
  const std::int64_t C = cfg_.num_cameras(), N = v.tokens(), S = v.image_size, pp = 3LL * v.patch_size * v.patch_size;
  const std::int64_t T = cfg_.token_len(), P = cfg_.prefix_len(), Dv = v.width;
  const std::int64_t D = cfg_.vlm.width, L = cfg_.vlm.depth, F = cfg_.vlm.mlp_dim;
  const std::int64_t H = cfg_.vlm.num_heads, K = cfg_.vlm.num_kv_heads, h = cfg_.vlm.head_dim;
  for (const auto& cam : cfg_.cameras) {
    EDGEVLA_ASSIGN_OR_RETURN(const int i, input_slot("image." + cam));
    in_images_.push_back(i);
  }
  EDGEVLA_ASSIGN_OR_RETURN(in_tokens_, input_slot("tokens"));
  EDGEVLA_ASSIGN_OR_RETURN(in_token_mask_, input_slot("token_mask"));
  EDGEVLA_ASSIGN_OR_RETURN(out_kv_, output_slot("kv"));
  // The cache is handed over in the compute dtype (bf16: half the bytes to move); a caller may
  // bind an f32 tensor instead (diagnostics, a consumer that wants f32).
  // Bound on this device at the model's full size [L, 2, P, K, h] in the compute dtype, the cache
  // is handed over on the device (one device copy, no host round trip): an action head on the
  // same device reads it in place.
  TensorSpec& kv_spec = outputs_[static_cast<std::size_t>(out_kv_)];
  kv_spec.dtype = act_;
  kv_spec.accepts = {DType::kF32, DType::kBF16};
  kv_spec.device = Device::cuda(info_.index);
  EDGEVLA_ASSIGN_OR_RETURN(out_mask_, output_slot("mask"));
  EDGEVLA_ASSIGN_OR_RETURN(out_vision_, output_slot("vision_embeddings"));

  // The checkpoint's tensors (views of the mapping) and their device plan.
  EDGEVLA_ASSIGN_OR_RETURN(cpu::VisionWeights vw, cpu::load_vision(ck));
  EDGEVLA_ASSIGN_OR_RETURN(cpu::Embedding emb, cpu::load_embedding(ck));
  EDGEVLA_ASSIGN_OR_RETURN(cpu::TowerWeights tw, cpu::load_vlm(ck));
  WeightPlan wp(act_);
  wp.linear_padded(patch_, vw.patch, vw.patch.out, VisionTower::patch_width(vw.patch.in));
  wp.vector(position_, vw.position);
  tower_.plan(wp, vw.layers, vw.post_w, vw.post_b);
  wp.linear(projector_, {&vw.projector});
  wp.matrix(embed_, emb.table, emb.dtype, emb.vocab, emb.width);
  gl_.resize(tw.layers.size());
  for (std::size_t i = 0; i < tw.layers.size(); ++i) {
    const cpu::GemmaLayer& s = tw.layers[i];
    GemmaLayerDev& d = gl_[i];
    wp.vector(d.in_norm, s.in_norm);
    wp.vector(d.post_norm, s.post_norm);
    wp.linear(d.qkv, {&s.q, &s.k, &s.v});
    wp.linear(d.o, {&s.o});
    wp.linear(d.gate_up, {&s.gate, &s.up});
    wp.linear(d.down, {&s.down});
  }
  inv_freq_host_ = model::pi0::rope_inv_freq(h);
  wp.vector(inv_freq_, inv_freq_host_);
  wp.place(arena_);

  // Activation buffers, sized for every camera and a full prompt.
  const std::int64_t M = C * N, Q = (H + 2 * K) * h;
  BufferPlan buf(arena_);
  buf(images_, bytes_of(DType::kF32, C * 3 * S * S));
  buf(patches_, bytes_of(act_, M * VisionTower::patch_width(pp)));
  buf(ve_, bytes_of(DType::kF32, M * Dv));
  buf(vis_, bytes_of(DType::kF32, M * D));
  buf(vy_, bytes_of(act_, M * Dv));
  buf(vqkv_, bytes_of(act_, M * 3 * Dv));
  buf(vo_, bytes_of(act_, M * Dv));
  buf(vh_, bytes_of(act_, M * tower_.mlp()));
  if (tower_.stream_in_act(act_)) buf(vs_, bytes_of(act_, M * Dv));
  const std::int64_t Pb = padded_rows(P);
  buf(x_, bytes_of(DType::kF32, Pb * D));
  buf(y_, bytes_of(act_, Pb * D));
  buf(qkv_, bytes_of(act_, Pb * Q));
  buf(o_, bytes_of(act_, Pb * H * h));
  buf(gu_, bytes_of(act_, Pb * 2 * F));
  buf(g_, bytes_of(act_, Pb * F));
  if (max_parts_ > 1) {
    const std::int64_t cap = kBackbonePartsMaxRows;
    buf(parts_, bytes_of(DType::kF32, max_parts_ * std::max(std::min(M, cap) * Dv, std::min(Pb, cap) * D)));
  }
  buf(kv_, bytes_of(act_, L * 2 * Pb * K * h));
  buf(kv_conv_, bytes_of(DType::kF32, L * 2 * Pb * K * h));  // the cache in a bound output's dtype
  buf(ids_, bytes_of(DType::kI32, Pb));
  buf(n_dev_, 16);
  buf(zero_, 16);
  // Attention scratch: the most SigLIP takes at any camera count and the prefix at any bucket
  // (one view's prefix splits its keys, three views' does not).
  AttentionArgs va{act_, C, N, v.num_heads, v.num_heads, Dv / v.num_heads};
  va.a_max = N;
  AttentionArgs pa{act_, 1, Pb, H, K, h};
  pa.a_max = Pb;
  scratch_bytes_ = std::max(attention_scratch_bytes_upto(va, N), attention_scratch_bytes_upto(pa, row_bucket()));
  buf(scratch_, scratch_bytes_);
  EDGEVLA_RETURN_IF_ERROR(allocate_and_upload(wp, m, o));
  buf.resolve();
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(zero_, 0, 16, stream_.get()));
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(x_, 0, bytes_of(DType::kF32, Pb * D), stream_.get()));
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_.get()));
  EDGEVLA_ASSIGN_OR_RETURN(mask_own_, Tensor::empty(DType::kBool, Shape{Pb}));
  if (const int lf = layer_fences(); lf > 0) {
    EDGEVLA_ASSIGN_OR_RETURN(layer_events_, LayerEvents::create(info_.index, static_cast<int>(L)));
    layer_fences_bound_ = lf == 2;
  }
  ids_host_.assign(static_cast<std::size_t>(Pb), 0);
  prompt_ids_.reserve(static_cast<std::size_t>(T) + 1);
  return Status::ok();
}

bool BackboneEngine::admit_layered_block(std::byte* block) {
  if (std::find(layered_blocks_.begin(), layered_blocks_.end(), block) != layered_blocks_.end()) return true;
  if (layered_blocks_.size() >= kMaxLayeredBlocks) return false;
  layered_blocks_.push_back(block);
  return true;
}

// The pass over `cams` cameras (images_ holds them) and `rows` prefix rows (a bucket).
Status BackboneEngine::forward(std::int64_t cams, std::int64_t rows, std::byte* into) {
  const auto& v = cfg_.vision;
  const std::int64_t N = v.tokens(), Dv = v.width, M = cams * N;
  const std::int64_t D = cfg_.vlm.width, L = cfg_.vlm.depth, F = cfg_.vlm.mlp_dim;
  const std::int64_t H = cfg_.vlm.num_heads, K = cfg_.vlm.num_kv_heads, h = cfg_.vlm.head_dim, Q = (H + 2 * K) * h;
  const std::int64_t Pb = padded_rows(cfg_.prefix_len());
  cudaStream_t s = stream_.get();
  const Gemm mm = gemm();
  if (cams > 0) {
    EDGEVLA_RETURN_IF_ERROR(
        im2col_patches(s, images_, cams, v.image_size, v.patch_size, patches_, act_, patch_.in));
    EDGEVLA_RETURN_IF_ERROR(mm(patches_, M, patch_.in, patch_, ve_, DType::kF32, Dv));
    EDGEVLA_RETURN_IF_ERROR(add_periodic_rows(s, ve_, M, Dv, position_, N));
    const VisionTower::Images all{cams, N};
    {
      const DependentLaunchScope chained(chain_own_);
      EDGEVLA_RETURN_IF_ERROR(tower_.encode(mm, VisionTower::Dims{Dv, v.num_heads, kNormEps},
                                            VisionTower::Buffers{ve_, vy_, vqkv_, vo_, vh_, parts_, max_parts_,
                                                                 scratch_, scratch_bytes_, vs_},
                                            {&all, 1}, vy_, act_, ablation_));
    }
    EDGEVLA_RETURN_IF_ERROR(mm(vy_, M, Dv, projector_, x_, DType::kF32, D));
    // The prefix layers update x in place: keep the image tokens for vision_embeddings.
    EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(vis_, x_, bytes_of(DType::kF32, M * D), cudaMemcpyDeviceToDevice, s));
  }
  // Text rows after the image rows, up to the bucket (ids past the prompt are padding: 0).
  if (rows > M) {
    EDGEVLA_RETURN_IF_ERROR(embed_tokens(s, ids_, rows - M, embed_, act_, cfg_.vlm.vocab_size, D,
                                         static_cast<float>(std::sqrt(static_cast<double>(D))), x_ + M * D));
  }
  const std::size_t es = dtype_size(act_);
  const float scale = 1.0f / std::sqrt(static_cast<float>(h));
  ResidualParts pending{0, rows * D, nullptr};  // the last down projection's parts
  // Profiling builds: the prefix layers' kernel classes left out (llm_norm, llm_qkv, llm_rope,
  // llm_attention, llm_o, llm_gate_up, llm_geglu, llm_down; the tower's in vision_tower.hpp).
  const Ablation& ab = ablation_;
  const auto add_rms = [&](const float* w) {
    if (ab.skip("llm_norm")) {
      pending.count = 0;
      return Status::ok();
    }
    const Status st = rms_norm(s, x_, pending.count > 0 ? parts_ : nullptr, DType::kF32, rows, D, w, kNormEps, y_,
                               act_, pending.count > 0 ? pending : ResidualParts{});
    pending.count = 0;
    return st;
  };
  const auto residual_gemm = [&](std::string_view what, const void* a, std::int64_t k, const DevLinear& w) {
    if (ab.skip(what)) return Status::ok();
    return mm.residual(a, rows, k, w, x_, rows <= kBackbonePartsMaxRows ? parts_ : nullptr, max_parts_, pending);
  };
  // With chain_own_, the layers' own kernels launch chained behind the kernel before them; one
  // that follows a layer's event record or a copy into a bound cache waits for it as usual.
  const DependentLaunchScope chained(chain_own_);
  for (std::int64_t li = 0; li < L; ++li) {
    const GemmaLayerDev& w = gl_[static_cast<std::size_t>(li)];
    auto* k_cache = static_cast<std::byte*>(kv_) + static_cast<std::size_t>((2 * li) * Pb * K * h) * es;
    auto* v_cache = static_cast<std::byte*>(kv_) + static_cast<std::size_t>((2 * li + 1) * Pb * K * h) * es;
    EDGEVLA_RETURN_IF_ERROR(add_rms(w.in_norm));
    if (!ab.skip("llm_qkv")) EDGEVLA_RETURN_IF_ERROR(mm(y_, rows, D, w.qkv, qkv_, act_, Q));
    auto* q = static_cast<std::byte*>(qkv_);
    // One launch rotates q in place and writes the rotated keys and the values into the cache,
    // [rows, K, h] each (the last layer only leaves its keys and values).
    if (!ab.skip("llm_rope")) {
      const bool last = li == L - 1;
      EDGEVLA_RETURN_IF_ERROR(rope_into_cache(s, last ? q + H * h * es : q, act_, rows, last ? 0 : H, K, h, Q,
                                              k_cache, v_cache, K * h, zero_, inv_freq_));
    }
    if (into != nullptr) {
      // Both halves of this layer into the bound cache (its P rows a half; rows past P are padding).
      const std::int64_t P = cfg_.prefix_len();
      const std::size_t row = static_cast<std::size_t>(K * h) * es;
      EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMemcpy2DAsync(into + static_cast<std::size_t>(2 * li * P) * row,
                                                     static_cast<std::size_t>(P) * row, k_cache,
                                                     static_cast<std::size_t>(Pb) * row,
                                                     static_cast<std::size_t>(std::min(rows, P)) * row, 2,
                                                     cudaMemcpyDeviceToDevice, s));
    }
    if (layer_events_) EDGEVLA_RETURN_IF_ERROR(layer_events_->record(static_cast<std::size_t>(li), s));
    if (li == L - 1) break;  // the last layer only contributes its keys and values
    AttentionArgs a{act_, 1, rows, H, K, h, scale};
    a.q = q;
    a.ldq = Q;
    a.out = o_;
    a.ldo = H * h;
    a.a = KvBlock{k_cache, v_cache, K * h, 0};
    a.a_len = n_dev_;
    a.a_max = rows;
    a.scratch = scratch_;
    a.scratch_bytes = scratch_bytes_;
    if (!ab.skip("llm_attention")) EDGEVLA_RETURN_IF_ERROR(attention(s, a));
    EDGEVLA_RETURN_IF_ERROR(residual_gemm("llm_o", o_, H * h, w.o));
    EDGEVLA_RETURN_IF_ERROR(add_rms(w.post_norm));
    if (!ab.skip("llm_gate_up")) EDGEVLA_RETURN_IF_ERROR(mm(y_, rows, D, w.gate_up, gu_, act_, 2 * F));
    if (!ab.skip("llm_geglu")) EDGEVLA_RETURN_IF_ERROR(geglu(s, gu_, rows, F, g_, act_));
    EDGEVLA_RETURN_IF_ERROR(residual_gemm("llm_down", g_, F, w.down));
  }
  return Status::ok();
}

Status BackboneEngine::run(const RunOptions&) {
  const NvtxRange nvtx(family(), stage());
  const auto t0 = std::chrono::steady_clock::now();
  timings_ = {};
  const std::int64_t N = cfg_.vision.tokens(), S = cfg_.vision.image_size, D = cfg_.vlm.width, L = cfg_.vlm.depth;
  const std::int64_t K = cfg_.vlm.num_kv_heads, h = cfg_.vlm.head_dim;
  const std::int64_t Pb = padded_rows(cfg_.prefix_len());
  cudaStream_t s = stream_.get();
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaSetDevice(info_.index));
  // Inputs still being written by queued device work: this stream waits for it, on the device.
  EDGEVLA_ASSIGN_OR_RETURN(const InputWait input_wait, wait_for_inputs(bound_inputs(), s, info_.index));

  // Inputs: images of the valid cameras (slot order), then the valid prompt tokens.
  std::vector<int> slots;
  for (std::size_t c = 0; c < in_images_.size(); ++c) {
    const Tensor* t = bound_input(in_images_[c]);
    if (t == nullptr) continue;
    const TensorSpec& spec = inputs_[static_cast<std::size_t>(in_images_[c])];
    if (!(t->shape() == spec.max_shape)) {
      return invalid_argument("backbone input '" + spec.name + "' is " + t->shape().to_string() +
                              ", the model needs " + spec.max_shape.to_string() + " (resize with padding in preprocess)");
    }
    const auto kind = t->device().is_cpu() ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToDevice;
    EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(images_ + static_cast<std::int64_t>(slots.size()) * 3 * S * S,
                                                 t->raw_data(), t->nbytes(), kind, s));
    slots.push_back(static_cast<int>(c));
  }
  const std::int64_t cams = static_cast<std::int64_t>(slots.size());
  EDGEVLA_RETURN_IF_ERROR(model::pi0::valid_prompt_ids(bound_input(in_tokens_), bound_input(in_token_mask_),
                                                       cfg_.vlm.vocab_size, prompt_ids_));
  const auto n_text = static_cast<std::int64_t>(prompt_ids_.size());
  std::fill(ids_host_.begin(), ids_host_.end(), 0);
  std::copy(prompt_ids_.begin(), prompt_ids_.end(), ids_host_.begin());
  const std::int64_t n = cams * N + n_text;
  if (n == 0) return invalid_argument("backbone has nothing to attend: no camera and no prompt token");
  const std::int64_t rows = std::min(Pb, padded_rows(n));
  const std::int32_t n32 = static_cast<std::int32_t>(n);
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(ids_, ids_host_.data(), ids_host_.size() * sizeof(std::int32_t),
                                               cudaMemcpyHostToDevice, s));
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(n_dev_, &n32, sizeof n32, cudaMemcpyHostToDevice, s));

  // Outputs. kv: bound on this device as [L, 2, P, K, h] in the compute dtype, each layer half's
  // n valid rows copied there and the rest zeroed (mask: n leading trues of P); bound elsewhere,
  // the n valid rows into [L, 2, n, K, h] in the bound dtype; unbound, the engine's cache itself.
  const Tensor* bkv = bound_output(out_kv_);
  const std::int64_t P = cfg_.prefix_len();
  const bool kv_whole = bkv != nullptr && bkv->device() == Device::cuda(info_.index) && bkv->dtype() == act_ &&
                        bkv->shape() == Shape{L, 2, P, K, h} && bkv->is_contiguous();
  const bool vision_on_host = bound_output(out_vision_) != nullptr;
  // A bound cache written layer by layer inside the pass, and handed out with the layer events.
  const bool layered_bound = layer_fences_bound_ && kv_whole && !vision_on_host && may_fence(*bkv, info_.index) &&
                             admit_layered_block(bkv->raw_data());
  std::byte* into = layered_bound ? bkv->raw_data() : nullptr;

  // The pass: captured once per (cameras, bucket, bound cache) after a first eager run (which
  // plans GEMMs).
  auto key = std::make_tuple(cams, rows, into);
  auto it = graphs_.find(key);
  if (it == graphs_.end()) {
    EDGEVLA_RETURN_IF_ERROR(forward(cams, rows, into));
    EDGEVLA_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(s));
    EDGEVLA_ASSIGN_OR_RETURN(Graph g, Graph::capture(s, [&] { return forward(cams, rows, into); }));
    log_plans();
    graphs_.emplace(key, std::move(g));
  } else {
    EDGEVLA_RETURN_IF_ERROR(it->second.launch(s));
  }

  Tensor own_cache;  // kv unbound: the engine's cache, handed out as it is
  if (kv_whole) {
    const std::size_t row = bytes_of(act_, K * h);
    const auto halves = static_cast<std::size_t>(L * 2), pitch = static_cast<std::size_t>(P) * row;
    if (into == nullptr) {
      EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMemcpy2DAsync(bkv->raw_data(), pitch, kv_, static_cast<std::size_t>(Pb) * row,
                                                     static_cast<std::size_t>(n) * row, halves,
                                                     cudaMemcpyDeviceToDevice, s));
    }
    // Written inside the pass, the rows past n hold the bucket's padding rows: zeroed here too (a
    // layered reader never reads past n).
    if (n < P) {
      EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMemset2DAsync(bkv->raw_data() + static_cast<std::size_t>(n) * row, pitch, 0,
                                                     static_cast<std::size_t>(P - n) * row, halves, s));
    }
    set_produced(out_kv_, *bkv);
  } else if (bkv != nullptr) {
    if (bkv->shape()[2] < n) {
      return invalid_argument("backbone output 'kv' " + bkv->shape().to_string() + " holds fewer than the " +
                              std::to_string(n) + " prefix rows of this run");
    }
    const void* src = kv_;
    if (bkv->dtype() != act_) {
      EDGEVLA_RETURN_IF_ERROR(convert(s, kv_, act_, kv_conv_, bkv->dtype(), L * 2 * Pb * K * h));
      src = kv_conv_;
    }
    // Each layer half's n valid rows, out of the cache's Pb rows, into [L, 2, n, K, h].
    const std::size_t ob = dtype_size(bkv->dtype());
    const auto kind = bkv->device().is_cpu() ? cudaMemcpyDeviceToHost : cudaMemcpyDeviceToDevice;
    EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMemcpy2DAsync(bkv->raw_data(), static_cast<std::size_t>(n * K * h) * ob, src,
                                                   static_cast<std::size_t>(Pb * K * h) * ob,
                                                   static_cast<std::size_t>(n * K * h) * ob, static_cast<std::size_t>(L * 2),
                                                   kind, s));
    EDGEVLA_ASSIGN_OR_RETURN(Tensor flat, bkv->reshape(Shape{bkv->numel()}));
    EDGEVLA_ASSIGN_OR_RETURN(Tensor used, flat.slice(0, 0, L * 2 * n * K * h));
    EDGEVLA_ASSIGN_OR_RETURN(Tensor view, used.reshape(Shape{L, 2, n, K, h}));
    set_produced(out_kv_, std::move(view));
  } else {
    Buffer::Options bo;
    bo.kind = BufferKind::kExternal;
    bo.device = Device::cuda(info_.index);
    bo.writable = false;
    auto buffer = std::make_shared<Buffer>(static_cast<std::byte*>(kv_), bytes_of(act_, L * 2 * Pb * K * h), bo);
    EDGEVLA_ASSIGN_OR_RETURN(Tensor dev, Tensor::from_buffer(std::move(buffer), act_, Shape{L, 2, Pb, K, h}));
    own_cache = dev;
    set_produced(out_kv_, std::move(dev));
  }
  if (const Tensor* ve = bound_output(out_vision_)) {
    const std::int64_t C = cfg_.num_cameras();
    if (!(ve->shape() == Shape{C, N, D}) || !ve->device().is_cpu()) {
      return invalid_argument("backbone output 'vision_embeddings' must be a host f32 [" + std::to_string(C) + "," +
                              std::to_string(N) + "," + std::to_string(D) + "]");
    }
    std::fill(ve->data<float>(), ve->data<float>() + ve->numel(), 0.0f);
    for (std::int64_t c = 0; c < cams; ++c) {
      EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(ve->data<float>() + slots[static_cast<std::size_t>(c)] * N * D,
                                                   vis_ + c * N * D, static_cast<std::size_t>(N * D) * 4,
                                                   cudaMemcpyDeviceToHost, s));
    }
    set_produced(out_vision_, *ve);
  } else {
    set_produced(out_vision_, Tensor());
  }
  // The cache bound on this device is all the device work feeds (the mask is made on the host):
  // it goes out with a fence while the stream still computes, and the consumer's stream waits for
  // it on the device, or in another process for its producer's signal (may_fence, fence_output).
  // When an output is read on the host
  // (vision embeddings), or fences may not be used, this stream finishes here.
  // The engine's own cache goes out fenced with its per-layer events when they are on; a bound one
  // with them when it was written inside the pass.
  const bool own_layered = own_cache.defined() && layer_events_ != nullptr;
  const Tensor* handed = own_layered ? &own_cache : kv_whole ? bkv : nullptr;
  const bool fenced = handed != nullptr && !vision_on_host && may_fence(*handed, info_.index);
  if (fenced) {
    EDGEVLA_RETURN_IF_ERROR(
        fence_output(*handed, s, info_.index, own_layered || layered_bound ? layer_events_ : nullptr));
  } else {
    EDGEVLA_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(s));
    EDGEVLA_ASSIGN_OR_RETURN(timings_.input_wait_ms, input_wait.waited_ms());
  }
  const Tensor* bm = bound_output(out_mask_);
  const std::int64_t mask_len = bkv == nullptr ? Pb : kv_whole ? P : n;
  const Tensor& mt = bm ? *bm : mask_own_;
  if (mt.shape()[0] < mask_len) return invalid_argument("backbone output 'mask' is shorter than the prefix");
  std::fill(mt.data<bool>(), mt.data<bool>() + mask_len, false);
  std::fill(mt.data<bool>(), mt.data<bool>() + n, true);
  EDGEVLA_ASSIGN_OR_RETURN(Tensor mview, mt.slice(0, 0, mask_len));
  set_produced(out_mask_, std::move(mview));
  timings_.total_ms = ms_since(t0);
  // Fenced: the host's part (the device's runs on; the consumer's stream waits for it and
  // counts that wait as this stage's, RunTimings::input_wait_ms).
  timings_.parts = {{fenced ? "backbone_enqueue" : "backbone_gpu", timings_.total_ms}};
  return Status::ok();
}

}  // namespace

const bool kBackboneRegistered = register_engine("cuda", std::string(model::pi0::kFamily),
                                                 std::string(model::kBackbone), BackboneEngine::create);

}  // namespace edgevla::backends::cuda::pi0
