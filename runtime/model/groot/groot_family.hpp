// GR00T N1.6 as a model family ("groot"): its stages and their tensors, and its action decoder
// (per embodiment: un-normalised, cut to the robot's dims and horizon, relative groups made
// absolute against the raw state). notes/groot-n16.md §1-§4.
//
// Stages (V views, E the largest pixel edge, L prompt tokens at most, W the LLM width, N image
// tokens per view at most, S max_state_dim, H action_horizon, A max_action_dim):
//   backbone     in:  image.<k> f32/bf16 [3,h,w] for view k < V (h, w multiples of 28 up to E;
//                     view 0 required), input_ids i32 [L], attention_mask bool [L]
//                out: backbone_features f32 [L,W] (final-norm output of the kept LLM layers),
//                     attention_mask bool [L], image_mask bool [L] (<IMG_CONTEXT> positions);
//                     image_embeds f32 [V·N,W] (diagnostic: mlp1 outputs, view after view)
//   action_head  in:  backbone_features f32/bf16/f16 [L,W], attention_mask bool [L],
//                     image_mask bool [L], state f32 [S] (normalised, padded),
//                     embodiment_id i32 [1], noise f32 [H,A]
//                out: actions f32 [H,A] (normalized), velocities f32 [steps,H,A] (diagnostic)
// Image pre-processing, the prompt and the state normalisation happen before the backbone
// (the family seam has no pre-processing stage; see tokenizer.hpp and embodiment.hpp).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/model/family.hpp"
#include "runtime/model/groot/checkpoint.hpp"
#include "runtime/model/groot/embodiment.hpp"

namespace edgevla::model::groot {

inline constexpr std::string_view kFamily = "groot";
inline constexpr std::string_view kVariant = "n1.6";

// Sizes of the stage inputs that depend on the frames and the prompt, not on the checkpoint.
inline constexpr int kMaxViews = 3;           // GR00T's embodiments use 1-3 views
inline constexpr int kMaxImageEdge = 448;     // 16:9 frames give 252 x 448 after the eval transform
inline constexpr int kMaxTextTokens = 256;    // the system turn, the instruction and the markers
// The raw state travels to the action decoder as context tensors named kRawStatePrefix + group.
inline constexpr std::string_view kRawStatePrefix = "raw_state.";

// The stage specs of a model of this config; `shards` (when given) size weight_bytes.
std::vector<StageSpec> stage_specs(const GrootConfig& config, const std::vector<SafetensorsFile>* shards);

// The embodiment `tag` of checkpoint folder `dir`; empty: its only one (an error listing them
// when it has several).
Expected<std::string> embodiment_tag(const std::string& dir, std::string_view tag);

// The model limits an embodiment must fit.
EmbodimentLimits embodiment_limits(const GrootConfig& config);

class GrootModel final : public Model {
 public:
  explicit GrootModel(Checkpoint checkpoint);
  std::string_view family() const override { return kFamily; }
  std::string_view variant() const override { return kVariant; }
  const std::string& dir() const override { return checkpoint_.config().dir; }
  const std::vector<StageSpec>& stages() const override { return stages_; }
  int default_num_steps() const override { return checkpoint_.config().num_inference_timesteps; }
  std::int64_t weight_bytes() const override { return static_cast<std::int64_t>(checkpoint_.weight_bytes()); }
  // options.embodiment picks the robot (empty: the checkpoint's only one); options.norm_stats
  // overrides statistics.json; options.output_dim keeps the first columns (0: all).
  Expected<std::unique_ptr<ActionDecoder>> make_action_decoder(const DecoderOptions& options) const override;

  const Checkpoint& checkpoint() const { return checkpoint_; }
  const GrootConfig& config() const { return checkpoint_.config(); }
  // The robot `tag` of this checkpoint (empty: its only one).
  Expected<Embodiment> embodiment(std::string_view tag, const std::string& statistics_path = "") const;

 private:
  Checkpoint checkpoint_;
  std::vector<StageSpec> stages_;
};

// The groot model behind a family-neutral one; an internal error when it is another family's.
Expected<const GrootModel*> as_groot(const Model& model);

}  // namespace edgevla::model::groot
