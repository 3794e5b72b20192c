// backbone: a model family's backbone stage (pi0/pi0.5: vision encoder + projector + Gemma
// prefix pass). For each Observation it publishes a BackboneOutput holding the tensors the
// family declares for its action head (pi0: the prefix keys/values and their mask), written by
// the engine straight into shared-memory loans (no copy to the bus), plus the observation's
// other tensors (the normalized state). The node knows no family: it binds by name.
// See nodes/backbone/README.md.
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
  // A copy of the engine's output `t` in a loan of this publisher (on t's device).
  Expected<Tensor> copy_into_loan(const Tensor& t);

  ModelStageParams params_;
  Publisher<msgs::BackboneOutput> out_;
  ModelStage stage_;
};

}  // namespace edgevla::nodes
