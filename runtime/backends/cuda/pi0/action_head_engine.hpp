// pi0 / pi0.5 action head on the GPU, the engine's class (its run in action_head_engine.cpp,
// its optional execution plans, the fused expert and the chained GEMMs, in
// action_head_plans.cpp): the expert over the suffix, attending the prefix cache (read in place
// when the backbone left it on this device) plus its own keys, and num_steps Euler steps.
// Everything that depends only on the timestep (pi0.5's time MLP and every adaRMS modulation;
// pi0's time half of action_time_mlp_in) is computed once per num_steps, outside the loop; the
// whole loop is one CUDA graph, re-captured when num_steps or the cache it reads changes. The
// prefix length is read on the device, so one graph serves every prompt.
#pragma once

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <numbers>
#include <string_view>
#include <tuple>

#include "runtime/backends/cuda/fence.hpp"
#include "runtime/backends/cuda/kernels/attention.hpp"
#include "runtime/backends/cuda/kernels/expert_fused.hpp"
#include "runtime/backends/cuda/kernels/kernels.hpp"
#include "runtime/backends/cuda/wgmma_plan.hpp"
#include "runtime/backends/cuda/pi0/pi0_cuda.hpp"

namespace edgevla::backends::cuda::pi0 {

inline constexpr float kNormEps = 1e-6f;

struct ExpertLayerDev {
  float *in_norm = nullptr, *post_norm = nullptr;
  DevLinear in_mod, post_mod, qkv, o, gate_up, down;
};

class ActionHeadEngine final : public CudaEngine {
 public:
  static Expected<std::unique_ptr<Engine>> create(const model::Model& m, const EngineOptions& o) {
    EDGEVLA_ASSIGN_OR_RETURN(const model::pi0::Pi0Model* pm, model::pi0::as_pi0(m));
    EDGEVLA_ASSIGN_OR_RETURN(const model::StageSpec* spec, m.stage(model::kActionHead));
    EDGEVLA_ASSIGN_OR_RETURN(DeviceInfo info, select_device(o, "action_head (cuda)"));
    auto e = std::unique_ptr<ActionHeadEngine>(new ActionHeadEngine(pm->config(), *spec, info, compute_dtype(o), o));
    EDGEVLA_RETURN_IF_ERROR(e->init_device());
    EDGEVLA_RETURN_IF_ERROR(e->load(*pm, o));
    return std::unique_ptr<Engine>(std::move(e));
  }
  Status run(const RunOptions& options) override;
  ~ActionHeadEngine() override {
    if (fused_trace_ != nullptr) cudaFree(fused_trace_);
  }

 private:
  ActionHeadEngine(const model::ModelConfig& c, const model::StageSpec& spec, DeviceInfo info, DType act,
                   const EngineOptions& o)
      : CudaEngine(spec, std::move(info), act), cfg_(c), max_steps_(std::max(1, o.max_steps)) {}
  Status load(const model::pi0::Pi0Model& m, const EngineOptions& o);
  // Time-only quantities for `steps` Euler steps (once per num_steps).
  Status prepare_steps(int steps);
  // The whole Euler loop, reading the cache at `cache` with row stride `cache_rows`; the
  // attention covers its first `attend_rows` rows: this chunk's valid count rounded up to
  // kAttendBucket (at most cache_rows). The keys past the valid count are masked on the device;
  // the bucket only bounds the key shares the attention launches and merges (a graph per bucket).
  static constexpr std::int64_t kAttendBucket = 64;
  Status loop(int steps, const void* cache, std::int64_t cache_rows, std::int64_t attend_rows,
              float* velocities);
  // Step i of `steps`. With flow_step_ (the default), each step but the last ends by writing the
  // next step's action input projection, which the next step then does not compute again.
  Status step(int i, int steps, float dt, const void* cache, std::int64_t cache_rows, std::int64_t attend_rows,
              float* velocity_out);
  // pi0.5 in bf16 with EDGEVLA_CUDA_FUSED_EXPERT=1 (off by default: slower on the H200): every
  // expert layer of a step in one persistent kernel (expert_fused.hpp) where the shape allows.
  Status plan_fused(std::int64_t max_cache_rows, BufferPlan& buf);
  // Opt-in (off by default: on the H200 it is slower end to end, bench/results/issue9_h200
  // run 26): bf16 on compute capability 9.0+, the GEMMs named in EDGEVLA_CUDA_CHAIN_GEMM (a
  // comma list of qkv, o, gate_up, down, or "all") run on chain_gemm, launched as programmatic
  // dependents so that each reads its weights while the kernels ahead of it run.
  void plan_chain();
  static bool chain_asked() {
    const char* env = std::getenv("EDGEVLA_CUDA_CHAIN_GEMM");
    return env != nullptr && env[0] != '\0' && std::string_view(env) != "0";
  }
  enum ChainRole : unsigned { kChainQkv = 1, kChainO = 2, kChainGateUp = 4, kChainDown = 8 };
  // The k parts the chained gate|up GEMM may split into (its bias needs one bf16 result).
  static int gate_up_parts(const ExpertLayerDev& w) { return w.gate_up.bias == nullptr ? kGateUpParts : 1; }
  // One expert GEMM: on the warpgroup GEMM (when planned for its role; gate|up then writes its
  // GeGLU), chained, or through Blas. max_parts 1: bf16 D [m, ldd]; else f32 k parts (S · ldd
  // floats apart). Returns the parts.
  Expected<int> layer_gemm(ChainRole role, const Gemm& mm, const void* a, std::int64_t lda, const DevLinear& w,
                           void* d, std::int64_t ldd, int max_parts) const;
  // o or down with the norm after it (gemm_norm_): xs_ += A · Wᵀ (+ bias) (· gate, pi0.5), ys_
  // the rows normalised with `weight` (pi0: RMSNorm's w; pi0.5: the adaptive norm's scale, with
  // shift at weight + E).
  Status layer_gemm_norm(const void* a, std::int64_t lda, const DevLinear& w, const float* gate,
                         const float* weight) const;
  // The warpgroup GEMM's part (EDGEVLA_CUDA_WGMMA, action_head_plans.cpp): which GEMMs, and the
  // tiling of their weights in place at load.
  struct WgmmaShape {
    std::int64_t n = 0, k = 0;  // n 0: this GEMM stays on Blas
    WgmmaEpilogue epilogue = WgmmaEpilogue::kNone;
  };
  void plan_wgmma(const cpu::TowerWeights& tw);
  // q|k|v's RoPE layout: q's and k's heads rotated from position *first_pos.
  WgmmaRope qkv_rope(const std::int32_t* first_pos) const {
    return WgmmaRope{(cfg_.expert.num_heads + cfg_.expert.num_kv_heads) * cfg_.expert.head_dim, cfg_.expert.head_dim,
                     first_pos, inv_freq_, rope_table_};
  }
  const WgmmaShape& wgmma_shape(ChainRole role) const {
    return role == kChainQkv ? wgmma_shapes_.qkv
           : role == kChainO ? wgmma_shapes_.o
           : role == kChainGateUp ? wgmma_shapes_.gate_up
                                  : wgmma_shapes_.down;
  }
  bool on_wgmma(ChainRole role) const { return wgmma_shape(role).n != 0; }
  bool rope_in_qkv() const { return on_wgmma(kChainQkv) && wgmma_shapes_.qkv.epilogue == WgmmaEpilogue::kRope; }
  // RoPE inside the attention (AttentionArgs::rope) instead of the rope kernel between q|k|v and
  // the attention: bf16 only, unless the q|k|v epilogue rotates, and only with
  // EDGEVLA_CUDA_ATTN_ROPE=1 (on the H200 it made pi0.5's head 1.85 ms slower, run 40 call 6: the
  // angles' loads wait on L2 inside the attention's critical path).
  // Decided once, at activate (the variable is read there).
  bool rope_in_attention() const { return rope_in_attention_; }
  static bool rope_in_attention_asked() {
    const char* env = std::getenv("EDGEVLA_CUDA_ATTN_ROPE");
    return env != nullptr && std::string_view(env) == "1";
  }
  bool rope_table_used() const { return rope_in_qkv() || rope_in_attention(); }
  Status tile_wgmma_weights();

  model::ModelConfig cfg_;
  int max_steps_;
  bool pi05_ = false;
  int in_kv_ = -1, in_mask_ = -1, in_state_ = -1, in_noise_ = -1, out_actions_ = -1, out_velocities_ = -1;

  std::vector<ExpertLayerDev> layers_;
  float* final_norm_ = nullptr;
  DevLinear final_mod_, action_in_, action_out_, state_proj_, action_time_in_, action_time_out_, time_in_, time_out_;
  DevLinear action_time_a_, action_time_t_;  // pi0: the action and time halves of action_time_mlp_in
  std::vector<float> inv_freq_host_;
  float* inv_freq_ = nullptr;
  // RoPE in q|k|v's epilogue or in the attention: the action rows' (cos, sin), computed once a run
  // (rope_table).
  float* rope_table_ = nullptr;
  bool rope_in_attention_ = false;

  // Buffers.
  void* cache_own_ = nullptr;        // [L, 2, P, K, h] act: a host cache converted here
  void* staging_ = nullptr;          // a host cache as it came, before conversion
  float *x_ = nullptr, *vel_ = nullptr, *xs_ = nullptr, *state_ = nullptr, *vel_all_ = nullptr;
  float* parts_ = nullptr;  // [kMaxKParts, S, E]: the o and down projections' k parts
  float* state_emb_ = nullptr;       // pi0: the state token's embedding, row 0 of every step
  void *xa_ = nullptr, *ys_ = nullptr, *qkv_ = nullptr, *o_ = nullptr, *gu_ = nullptr, *g_ = nullptr, *at_ = nullptr,
       *hid_ = nullptr, *sa_ = nullptr;
  float* mods_ = nullptr;            // pi0.5: [max_steps, 2L+1, 3E]; pi0: time bias [max_steps, E]
  void *temb_ = nullptr, *cond_ = nullptr;
  float *cond_f32_ = nullptr, *temb_f32_ = nullptr;
  std::int32_t *n_dev_ = nullptr, *b_limit_ = nullptr;
  void* scratch_ = nullptr;
  std::size_t scratch_bytes_ = 0;
  int prepared_steps_ = 0;
  // (steps, cache, attended rows, the cache producer's per-layer events or null): a graph that
  // waits for those events keeps them alive (its wait nodes name them).
  std::map<std::tuple<int, const void*, std::int64_t, std::shared_ptr<const LayerEvents>>, Graph> graphs_;
  // This run's cache comes with its producer's per-layer events (fence.hpp): the first step waits
  // for layer l's event before its attention reads layer l, instead of the whole cache first.
  std::shared_ptr<const LayerEvents> layer_waits_;
  Tensor actions_own_;
  std::int32_t* pinned_n_ = nullptr;
  std::unique_ptr<PinnedBuffer> pinned_;
  bool fused_ = false;
  // The output head, Euler update and next input projection as one kernel (flow_step in
  // kernels.hpp) instead of four; EDGEVLA_CUDA_FLOW_STEP=0 runs the four, to compare.
  bool flow_step_ = true;
  bool chain_ = false;          // the layer loop runs as one chain of launches
  unsigned chain_gemms_ = 0;     // ChainRole bits: the GEMMs on chain_gemm
  float* gu_parts_ = nullptr;
  static constexpr int kGateUpParts = 2;
  // Expert GEMMs on the warpgroup GEMM (wgmma_gemm.hpp; Hopper, bf16): their shapes (their
  // layers' DevLinear bytes are then tiled in place).
  struct {
    WgmmaShape qkv, o, gate_up, down;
  } wgmma_shapes_;
  bool wgmma_chain_ = false;  // the layers' kernels as one chain of launches
  // The residual add and the norm after o and down in their GEMMs (the kNorm epilogue,
  // EDGEVLA_CUDA_GEMM_NORM=1) instead of k parts and a norm kernel; norm_scratch_ its scratch.
  bool gemm_norm_ = false;
  bool norm_clusters_ = false;  // EDGEVLA_CUDA_GEMM_NORM=cluster: k slices in clusters, not k parts
  void* norm_scratch_ = nullptr;
  // The four projections on int8 weights (wgmma_w8.hpp; EDGEVLA_CUDA_WGMMA_W8=1, not yet measured
  // on a GPU): each weight quantised once at load into w8_buffer_, beside its bf16 copy (the norm
  // epilogue and the other paths still read that).
  bool w8_ = false;
  void* w8_buffer_ = nullptr;
  WgmmaW8Weights w8_weights_;
  std::vector<WgmmaW8Weights::Entry> w8_entries();
  WgmmaLaunch wgmma_launch_;  // its launches' caps on k parts and slices
  // Which launches are chained (EDGEVLA_CUDA_CHAIN_LAUNCH): around each chained GEMM only, the
  // kernels just ahead of it and itself (default: "gemms"); every kernel of the layers ("all");
  // none, the same kernels launched plainly ("0", to compare).
  enum class ChainLaunch { kNone, kGemms, kAll };
  ChainLaunch chain_launch_ = ChainLaunch::kGemms;
  bool narrow_chain(ChainRole role) const {
    return chain_launch_ == ChainLaunch::kGemms && (chain_gemms_ & role) != 0;
  }
  FusedExpertArgs fused_args_;
  FusedExpertLayer* fused_layers_ = nullptr;  // device [L]
  std::int64_t fused_max_rows_ = 0;
  unsigned long long* fused_trace_ = nullptr;  // EDGEVLA_CUDA_FUSED_TRACE=1: the last step's timings
  int runs_ = 0;
};

}  // namespace edgevla::backends::cuda::pi0
