// The cuda GR00T action head's engine class and its device-side weight structs, shared by
// action_head_engine.cpp (loading, the forward pass, run) and action_head_inputs.cpp (the checks
// of a run's bound inputs). Private to those two files.
#pragma once

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>

#include "runtime/backends/cpu/weight_views.hpp"
#include "runtime/backends/cuda/groot/groot_cuda.hpp"
#include "runtime/backends/cuda/kernels/attention.hpp"
#include "runtime/backends/cuda/kernels/groot_kernels.hpp"
#include "runtime/backends/cuda/kernels/kernels.hpp"
#include "runtime/backends/cuda/kernels/wgmma_mlp.hpp"
#include "runtime/backends/cuda/wgmma_plan.hpp"
#include "runtime/model/groot/processor.hpp"

namespace edgevla::backends::cuda::groot::action_head {

namespace mg = model::groot;

inline constexpr std::int64_t kTimestepChannels =
    256;  // diffusers Timesteps(256, flip_sin_to_cos=True, shift=1)
inline constexpr float kBlockEps = 1e-5f;
inline constexpr float kOutputEps = 1e-6f;
inline constexpr float kVllnEps = 1e-5f;

// A category-specific linear: W [slots, in, out] and b [slots, out] for every slot on the
// device, and the selected slot transposed to [out, in] (a DevLinear the GEMMs take).
struct CategoryDev {
  std::int64_t slots = 0, in = 0, out = 0;
  void* all_w = nullptr;      // act [slots, in, out]
  float* all_b = nullptr;     // f32 [slots, out]
  std::vector<float> host_b;  // kept until the upload
  DevLinear sel;              // act [out, in] + f32 bias [out]
};

struct BlockDev {
  bool cross = false, text = false;
  DevLinear qkv;  // self blocks: q|k|v; cross blocks: q only
  DevLinear out, ff1, ff2;
  // Which of them run on the warpgroup GEMM (plan_wgmma; their weights then tiled in place).
  bool wg_qkv = false, wg_out = false, wg_ff1 = false, wg_ff2 = false;
  // q|k|v (or cross q) and the attention as one kernel (wgmma_heads.hpp; its weight laid out for it).
  bool wg_heads = false;
  std::int64_t kv_column = 0;  // cross blocks: where their k|v start in the text or image k|v rows
};

// The k|v projections of every cross block that reads the same tokens (text or image), as one
// GEMM: row t holds [k_0 | v_0 | k_1 | v_1 ...] for those blocks in order.
struct CrossKv {
  DevLinear w;
  void* kv = nullptr;  // act [max_tokens, w.out]
};

class ActionHeadEngine final : public GrootCudaEngine {
 public:
  static Expected<std::unique_ptr<Engine>> create(const model::Model& m, const EngineOptions& o) {
    EDGEVLA_ASSIGN_OR_RETURN(const mg::GrootModel* gm, mg::as_groot(m));
    EDGEVLA_ASSIGN_OR_RETURN(const model::StageSpec* spec, m.stage(model::kActionHead));
    EDGEVLA_ASSIGN_OR_RETURN(DeviceInfo info, select_device(o, "groot action_head (cuda)"));
    auto e = std::unique_ptr<ActionHeadEngine>(
        new ActionHeadEngine(gm->config(), *spec, info, compute_dtype(o), o));
    EDGEVLA_RETURN_IF_ERROR(e->init_device());
    EDGEVLA_RETURN_IF_ERROR(e->load(gm->checkpoint(), o));
    return std::unique_ptr<Engine>(std::move(e));
  }
  Status run(const RunOptions& options) override;

 private:
  ActionHeadEngine(const mg::GrootConfig& c, const model::StageSpec& spec, DeviceInfo info,
                   DType act, const EngineOptions& o)
      : GrootCudaEngine(spec, std::move(info), act),
        cfg_(c),
        max_steps_(std::max(1, o.max_steps)) {}
  Status load(const mg::Checkpoint& ck, const EngineOptions& o);
  Status load_category(const mg::Checkpoint& ck, const std::string& name, CategoryDev& c,
                       WeightPlan& wp);
  Status check_inputs(const RunOptions& options, std::int64_t& n, std::int64_t& embodiment);
  Status prepare_steps(int steps);
  Status select_embodiment(std::int64_t e);
  // Per chunk (vlln, cross keys|values, state token, the sinusoid's projection), then the loop.
  Status forward(int steps, std::int64_t text_rows, std::int64_t image_rows, DType feature_type);
  Status chunk_work(int steps, std::int64_t text_rows, std::int64_t image_rows, DType feature_type);
  Status step(int k, float dt, std::int64_t text_rows, std::int64_t image_rows);
  // The DiT's projections on the warpgroup GEMM (wgmma_plan.hpp; names qkv (self-attention),
  // q (cross-attention), out, ff1, ff2, edges), their weights tiled in place; at load, after upload.
  // `edges`: each step's action encoder and its output projection and decoder on it too, in the
  // chain, with their activations, the positions and the Euler update in their epilogues.
  Status plan_wgmma();
  // The selected embodiment's encoder and decoder weights laid out for the warpgroup GEMM (when
  // the edges run on it), after select_embodiment transposed them.
  Status tile_edges();
  // One step's edges on the warpgroup GEMM: before the DiT (action encoder into rows 1.. of the
  // residual stream) or after it (output projection, decoder, Euler update).
  Status encode_on_wgmma(int k);
  Status decode_on_wgmma(int k, float dt);
  WgmmaChoice wgmma_;  // what the environment asked (at load)
  bool wg_edges_ = false;
  DevLinear act1_wg_, act2_wg_, act3_wg_, dec1_wg_, dec2_wg_;  // tiled copies of the selected slot
  bool wgmma_chain_ = false;
  WgmmaLaunch wgmma_launch_;  // its launches' caps on k parts and slices
  // Each DiT block's ff1 → GELU → ff2 as one kernel in clusters of mlp_cluster_ blocks
  // (EDGEVLA_CUDA_WGMMA_MLP=1, where every block's ff1 and ff2 are tiled for the warpgroup GEMM);
  // 0: off.
  int mlp_cluster_ = 0;
  // int8 copies of the DiT's projections (EDGEVLA_CUDA_WGMMA_W8=1, action_head_plans.cpp).
  void* w8_buffer_ = nullptr;
  WgmmaW8Weights w8_weights_;
  std::vector<WgmmaW8Weights::Entry> w8_entries() const;
  std::array<CategoryDev*, 7> categories() {
    return {&state1_, &state2_, &act1_, &act2_, &act3_, &dec1_, &dec2_};
  }

  mg::GrootConfig cfg_;
  int max_steps_;
  std::int64_t max_tokens_ = 0, E_ = 0, S_ = 0, B_ = 0;
  std::set<std::int64_t> known_ids_;
  std::int64_t selected_ = -1;
  int prepared_steps_ = 0;
  int in_features_ = -1, in_mask_ = -1, in_image_ = -1, in_state_ = -1, in_embodiment_ = -1,
      in_noise_ = -1;
  int out_actions_ = -1, out_velocities_ = -1;

  // Weights.
  DevLinear t1_, t2_, mods_lin_, proj_out_2_;
  std::vector<BlockDev> blocks_;
  CrossKv text_kv_, image_kv_;
  CategoryDev state1_, state2_, act1_, act2_, act3_, dec1_, dec2_;
  DevLinear act2_a_, act2_t_;  // W2's halves: on the action embedding, on the sinusoid τ
  std::vector<float> vlln_w_host_, vlln_b_host_, pos_host_, ones_host_, zeros_host_;
  float *vlln_w_ = nullptr, *vlln_b_ = nullptr, *pos_ = nullptr, *ones_ = nullptr,
        *zeros_ = nullptr;

  // Buffers.
  std::byte* feat_stage_ = nullptr;  // the bound features as they came
  float* vl_f32_ = nullptr;
  float* vl_text_f32_ = nullptr;  // the text rows' f32 copy (the side stream's)
  void *vl_text_ = nullptr, *vl_image_ = nullptr;
  float* parts_ = nullptr;  // [kMaxKParts, S, E]: the out and ff2 projections' k parts
  float *x_ = nullptr, *a_ = nullptr, *vel_all_ = nullptr, *state_ = nullptr,
        *state_feat_ = nullptr;
  float *tau_bias_ = nullptr, *mods_ = nullptr, *sinus_f32_ = nullptr, *tau_f32_ = nullptr;
  void *h_ = nullptr, *qkv_ = nullptr, *o_ = nullptr, *ff_ = nullptr, *a_act_ = nullptr,
       *a_emb_ = nullptr, *enc_ = nullptr, *dit_out_ = nullptr, *dec_hid_ = nullptr,
       *state_act_ = nullptr, *st_hid_ = nullptr, *sinus_ = nullptr, *temb1_ = nullptr,
       *temb_ = nullptr, *tau_ = nullptr;
  std::int32_t* ints_ =
      nullptr;                   // n_text, n_image, text rows [max_tokens], image rows [max_tokens]
  std::int32_t* bad_ = nullptr;  // non-finite values in the attended backbone features
  void* scratch_ = nullptr;
  std::size_t scratch_bytes_ = 0;

  // The text blocks' keys|values are made on a side stream beside the image blocks' (chunk_work()):
  // its own Blas (a Blas's workspace serves one stream), and the events that fork and join it;
  // made at load only where overlap_ is on.
  // 0: no side stream, the host inputs copied after the wait; 2: the state token and τ product on
  // the side stream too (overlap_level()).
  int overlap_ = overlap_level();
  Stream side_;
  std::unique_ptr<Blas> side_blas_;
  Event side_fork_, side_join_;

  // Host side.
  std::unique_ptr<PinnedBuffer> pinned_ints_;
  Tensor actions_own_;
  std::map<std::tuple<int, std::int64_t, std::int64_t, DType>, Graph> graphs_;
};

}  // namespace edgevla::backends::cuda::groot::action_head
