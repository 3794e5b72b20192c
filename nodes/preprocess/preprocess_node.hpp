// preprocess: turns camera frames, the robot's state and an instruction into the Observation a
// policy consumes. The model part is the checkpoint's family's (model::Preprocessor behind the
// family seam: pi0 / pi0.5's resize-with-pad, normalization and tokenization, GR00T's frame
// pipeline and chat prompt); the node gathers the newest inputs, checks them when they arrive,
// keeps them fresh and publishes the preprocessor's named tensors.
// Behaviour, params and topics: nodes/preprocess/README.md.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/model/family.hpp"
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
  // One subscribed camera and its newest accepted frame, kept as RGB until an observation is
  // made (the Image's buffer is let go at once).
  struct Camera {
    std::string slot;
    std::string topic_name;             // "image/<slot>", as declared
    std::optional<Header> header;       // that frame's header; empty until a frame arrives
    std::optional<std::int64_t> frame;  // its "frame" field, when it has one
    std::vector<std::uint8_t> rgb;      // RGB [height][width][3]
    int height = 0, width = 0;
  };
  // The newest accepted robot state.
  struct State {
    std::vector<double> raw;   // as received (f32 or f64)
    std::int64_t stamp_ns = 0;
    bool from_param = false;   // default_state: never stale
  };

  void on_image(std::size_t index, const msgs::Image& image);
  void on_state(const msgs::RobotState& state);
  void on_prompt(const msgs::Prompt& prompt);
  void on_tick();
  void on_chunk(const msgs::ActionChunk& chunk);
  // Publishes an Observation from the newest inputs, or says (once, or as a counted drop) why
  // it cannot.
  void publish_observation();
  // A state the preprocessor takes (length, the model's limits, finite), or why not.
  Expected<State> make_state(std::span<const double> raw, std::int64_t stamp_ns) const;
  // The preprocessor's tensors and the model fields (family_inputs.cpp), or nothing (the
  // reason reported, counted).
  std::optional<Message> observation(const std::string& prompt);
  const std::string& active_prompt();
  void waiting_for(const std::string& what);
  std::string where() const { return "node '" + name() + "'"; }

  // clang-format off
  Param<std::string> checkpoint_{"checkpoint", "",
      {"checkpoint folder (its family is recognized; the weights are not read)", {}, {}, {}, true}};
  Param<std::string> tokenizer_{"tokenizer", "",
      {"the family's asset 'tokenizer' in place of the checkpoint's (empty: the checkpoint's; pi0: "
       "tokenizer.model)", {}, {}, {}, true}};
  Param<std::string> norm_stats_{"norm_stats", "",
      {"the family's asset 'norm_stats' in place of the checkpoint's (empty: the checkpoint's; pi0: "
       "assets/<asset_id>/norm_stats.json)", {}, {}, {}, true}};
  Param<std::string> model_type_{"model_type", "auto",
      {"the checkpoint's variant, refused when it is another (auto: whatever it is; pi0: pi0 or pi05)", {}, {},
       {}, true}};
  Param<std::vector<std::string>> cameras_{"cameras", {},
      {"cameras to subscribe, each on image/<camera> (empty: all the model's); cameras not listed "
       "are absent (masked), where the family allows it", {}, {}, {}, true}};
  Param<std::string> prompt_{"prompt", "",
      {"instruction used until a Prompt arrives on 'prompt' (empty: wait for one)"}};
  Param<std::string> on_long_prompt_{"on_long_prompt", "error",
      {"a prompt over the model's token budget: drop the observation (error) or cut it "
       "(truncate, where the family allows it)", {}, {}, {"error", "truncate"}, true}};
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
      {"length the robot state must have (0: any the model takes)", 0,
       4096, {}, true}};
  Param<std::vector<double>> default_state_{"default_state", {},
      {"state used until a RobotState arrives (empty: wait for one)", {}, {}, {}, true}};
  Param<std::string> embodiment_{"embodiment", "",
      {"the robot, for checkpoints of several (GR00T: a tag of embodiment_id.json; empty: the only one)", {}, {},
       {}, true}};
  Param<int> pad_to_{"pad_to", 0,
      {"left-pad the prompt to this many tokens, so every observation has one shape (0: no padding; "
       "families with a fixed budget refuse it)",
       0, 4096, {}, true}};
  Param<int> threads_{"threads", 0,
      {"threads the camera frames are resized on (the model's inputs are the same bytes at any count): "
       "0: one per four cores, 1 to 4; pi0 takes a camera a thread (at most one a camera), GR00T splits "
       "each frame's passes in slices of rows",
       0, 64, {}, true}};
  // clang-format on

  Publisher<msgs::Observation> observation_;
  // The checkpoint family's preprocessor, made in configure(), loaded in activate().
  std::unique_ptr<model::Preprocessor> pre_;
  std::int64_t state_total_ = 0;  // the state groups' fixed widths summed
  int open_group_ = -1;           // the group without a fixed width (it takes the rest), if any
  std::vector<Camera> cameras_in_;
  std::vector<std::uint8_t> scratch_;  // a frame being converted (swapped in when it is accepted)

  // Set by activate().
  std::optional<State> state_;
  std::optional<std::string> prompt_message_;  // newest Prompt message, until `prompt` changes
  std::string seen_prompt_param_;
  bool inputs_changed_ = false;
  std::int64_t trigger_ns_ = 0;        // steady clock when the publishing callback began
  bool in_flight_ = false;             // wait_for_chunk: an observation awaits its chunk
  std::int64_t in_flight_since_ns_ = 0;  // node clock
  std::string waiting_logged_;
  std::string noted_prompt_;           // the prompt whose preprocessor note was logged
};

}  // namespace edgevla::nodes
