// action_head: a model family's action head (pi0/pi0.5: the action expert and the flow-matching
// loop). For each BackboneOutput it binds the tensors its engine declares, draws the engine's
// noise from the node's generator (so replay reproduces it), runs num_steps steps, decodes the
// actions with the family's decoder (un-normalizing with the checkpoint's stats) and publishes an
// ActionChunk [H, robot dims] stamped with the source observation's capture time.
// See nodes/action_head/README.md.
#pragma once

#include "nodes/model_stage.hpp"

namespace edgevla::nodes {

class ActionHeadNode final : public Node {
 public:
  explicit ActionHeadNode(const NodeOptions& options) : Node(options) {}
  Status configure(NodeSpec& spec) override;
  Status activate() override;
  Status deactivate() override;

 private:
  void on_backbone(const msgs::BackboneOutput& in);
  Status infer(const msgs::BackboneOutput& in);
  void draw_noise();
  void draw_next_noise();

  ModelStageParams params_;
  // clang-format off
  Param<int> num_steps_{"num_steps", 0,
      {"Euler steps per chunk (0: the checkpoint's default: pi0 10, GR00T 4)", 0, 1000}};
  Param<std::string> norm_stats_{"norm_stats", "",
      {"norm_stats.json (default: the checkpoint's assets)", {}, {}, {}, true}};
  Param<int> output_dim_{"output_dim", 0,
      {"action dims published (0: the length of the norm stats' actions)", 0, 4096, {}, true}};
  Param<std::string> embodiment_{"embodiment", "",
      {"GR00T: the robot whose statistics decode the actions, a tag of embodiment_id.json (empty: the "
       "checkpoint's only one); must match the preprocess node's", {}, {}, {}, true}};
  Param<int> seed_{"seed", -1,
      {"seed of the noise generator (-1: derived from the node's name); `edgevla infer --seed N` "
       "draws the same first noise", -1, 2147483647, {}, true}};
  Param<double> action_dt_s_{"action_dt_s", 0.02,
      {"time between two actions of a chunk (the policy's control period)", 1e-4, 10.0}};
  // clang-format on

  Publisher<msgs::ActionChunk> actions_;
  ModelStage stage_;
  std::unique_ptr<model::ActionDecoder> decoder_;
  Tensor noise_;
  // The next chunk's noise, drawn after a chunk is published (off the path from prefix to
  // actions): valid while the generator still stands at `ahead_from_`; replay, which sets the
  // generator's state, or a first chunk draw afresh. Either way the same numbers.
  Tensor ahead_;
  bool ahead_valid_ = false;
  RngState ahead_from_{}, ahead_to_{};
};

}  // namespace edgevla::nodes
