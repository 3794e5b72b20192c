// backbone: vision encoder + projector + Gemma prefix pass. For each Observation it publishes a
// PrefixCache: per-layer keys/values of the valid prefix tokens and their mask, written by the
// engine straight into a shared-memory loan (no copy to the bus), plus the observation's
// normalized state for the action head. See nodes/backbone/README.md.
#pragma once

#include "nodes/model_stage.hpp"

namespace edgevla::nodes {

class BackboneNode final : public Node {
 public:
  explicit BackboneNode(const NodeOptions& options) : Node(options) {}
  Status configure(NodeSpec& spec) override;
  Status activate() override;
  Status deactivate() override;

 private:
  void on_observation(const msgs::Observation& obs);
  Status infer(const msgs::Observation& obs);

  ModelStageParams params_;
  Publisher<msgs::PrefixCache> cache_;
  ModelStage stage_;
};

}  // namespace edgevla::nodes
