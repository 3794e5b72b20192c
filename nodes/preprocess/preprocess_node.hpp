// preprocess: turns camera frames, the robot's state and an instruction into the Observation a
// policy consumes. A family with a preprocessor behind the family seam (GR00T) does the model
// part: the node collects the inputs and publishes the seam's named tensors. For pi0 / pi0.5
// the node does it itself (docs/model.md §9): each camera resized with padding to the model's
// image size and scaled to [-1, 1], the state normalized with the checkpoint's norm stats and
// zero-padded to action_dim, the prompt tokenized (pi0.5: with the discretized state in it).
// Behaviour, params and topics: nodes/preprocess/README.md.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/model/family.hpp"
#include "runtime/model/pi0/config.hpp"
#include "runtime/model/image_ops.hpp"
#include "runtime/model/pi0/norm_stats.hpp"
#include "runtime/model/pi0/tokenizer.hpp"
#include "runtime/node/node.hpp"

namespace edgevla::nodes {

class PreprocessNode final : public Node {
 public:
  explicit PreprocessNode(const NodeOptions& options);
  ~PreprocessNode() override;
  Status configure(NodeSpec& spec) override;
  Status activate() override;
  Status deactivate() override;

 private:
  // One subscribed camera slot and its newest accepted frame, already resized (frames are
  // resized when they arrive, so the Image's buffer is let go at once).
  struct Camera {
    std::string slot;
    std::string topic_name;          // "image/<slot>", as declared
    model::ImageResizer resizer;
    Tensor canvas;                   // u8 [S, S, 3], the newest frame resized with padding
    std::optional<Header> header;    // that frame's header; empty until a frame arrives
    std::optional<std::int64_t> frame;  // its "frame" field, when it has one
    std::vector<std::uint8_t> rgb;   // family preprocessor: the newest frame as RGB [height][width][3]
    int height = 0, width = 0;
  };
  // The newest accepted robot state, normalized.
  struct State {
    std::vector<float> raw;          // as received (f64 rounded to f32)
    std::vector<double> normalized;  // openpi's float64 arithmetic (pi0 only)
    std::int64_t stamp_ns = 0;
    bool from_param = false;         // default_state: never stale
  };

  void on_image(std::size_t index, const msgs::Image& image);
  void on_state(const msgs::RobotState& state);
  void on_prompt(const msgs::Prompt& prompt);
  void on_tick();
  void on_chunk(const msgs::ActionChunk& chunk);
  // Publishes an Observation from the newest inputs, or says (once, or as a counted drop) why
  // it cannot.
  void publish_observation();
  Expected<State> make_state(std::span<const double> raw, std::int64_t stamp_ns) const;
  // The family preprocessor's part (GR00T): configure-time checks and the observation.
  Status configure_family(const model::Family& family, std::vector<std::string>& slots);
  Expected<State> make_family_state(std::span<const double> raw, std::int64_t stamp_ns) const;
  // The observation's tensors and model fields, or nothing (the reason reported, counted).
  std::optional<Message> family_observation(const std::string& prompt);
  std::optional<Message> pi0_observation(const std::string& prompt);
  Expected<model::TokenizedPrompt> tokenize(const std::string& prompt, const State& state);
  const std::string& active_prompt();
  void waiting_for(const std::string& what);
  std::string where() const { return "node '" + name() + "'"; }

  // clang-format off
  Param<std::string> checkpoint_{"checkpoint", "",
      {"checkpoint folder (config.json, assets/, tokenizer.model)", {}, {}, {}, true}};
  Param<std::string> tokenizer_{"tokenizer", "",
      {"SentencePiece model (empty: <checkpoint>/tokenizer.model)", {}, {}, {}, true}};
  Param<std::string> norm_stats_{"norm_stats", "",
      {"norm_stats.json (empty: <checkpoint>/assets/<asset_id>/norm_stats.json)", {}, {}, {}, true}};
  Param<std::string> model_type_{"model_type", "auto",
      {"pi0 or pi05 (auto: config.json's model_type, else the weight set)", {}, {},
       {"auto", "pi0", "pi05"}, true}};
  Param<std::vector<std::string>> cameras_{"cameras", {},
      {"camera slots to subscribe, each on image/<slot> (empty: all the model's slots); "
       "slots not listed are absent (masked)", {}, {}, {}, true}};
  Param<std::string> prompt_{"prompt", "",
      {"instruction used until a Prompt arrives on 'prompt' (empty: wait for one)"}};
  Param<std::string> on_long_prompt_{"on_long_prompt", "error",
      {"a prompt over the model's token budget: drop the observation (error) or cut it "
       "(truncate)", {}, {}, {"error", "truncate"}}};
  Param<double> max_age_s_{"max_age_s", 0.5,
      {"inputs older than this relative to the newest input are stale (0: no check)", 0.0, 3600.0}};
  Param<double> rate_hz_{"rate_hz", 0.0,
      {"0: publish on every frame of the first camera; > 0: publish at this rate", 0.0, 1000.0,
       {}, true}};
  Param<bool> wait_for_chunk_{"wait_for_chunk", false,
      {"one observation in flight: after publishing one, wait until its ActionChunk comes back "
       "on 'actions' (or chunk_timeout_s passes), then publish on the next frame", {}, {}, {}, true}};
  Param<double> chunk_timeout_s_{"chunk_timeout_s", 2.0,
      {"wait_for_chunk: publish again after this long without a chunk (a dropped observation)",
       0.01, 3600.0}};
  Param<int> state_dim_{"state_dim", 0,
      {"length the robot state must have (0: any, up to action_dim and the stats' length)", 0,
       4096, {}, true}};
  Param<std::vector<double>> default_state_{"default_state", {},
      {"state used until a RobotState arrives (empty: wait for one)", {}, {}, {}, true}};
  Param<std::string> embodiment_{"embodiment", "",
      {"GR00T: the robot, a tag of the checkpoint's embodiment_id.json (empty: its only one)", {}, {}, {}, true}};
  Param<int> pad_to_{"pad_to", 0,
      {"GR00T: left-pad the prompt to this many tokens, so every observation has one shape (0: no padding)",
       0, 4096, {}, true}};
  // clang-format on

  Publisher<msgs::Observation> observation_;
  model::ModelConfig config_;
  std::vector<Camera> cameras_in_;
  // The family's preprocessor (GR00T), made in configure(); null for pi0 / pi0.5.
  std::unique_ptr<model::Preprocessor> family_pre_;
  std::int64_t state_total_ = 0;  // family: the state groups' widths summed (one open group takes the rest)
  int open_group_ = -1;           // family: the group without a fixed width, if any

  // Set by activate().
  model::ModelType type_ = model::ModelType::kPi05;
  model::NormKind norm_kind_ = model::NormKind::kQuantile;
  model::NormStats stats_;
  std::optional<model::Tokenizer> tok_;
  std::optional<State> state_;
  std::optional<std::string> prompt_message_;  // newest Prompt message, until `prompt` changes
  std::string seen_prompt_param_;
  // pi0's tokens depend on the prompt only: the last result is kept.
  std::string cached_prompt_;
  std::optional<model::TokenizedPrompt> cached_tokens_;
  bool inputs_changed_ = false;
  std::int64_t trigger_ns_ = 0;        // steady clock when the publishing callback began
  bool in_flight_ = false;             // wait_for_chunk: an observation awaits its chunk
  std::int64_t in_flight_since_ns_ = 0;  // node clock
  std::string waiting_logged_;
  std::string truncation_logged_;
};

}  // namespace edgevla::nodes
