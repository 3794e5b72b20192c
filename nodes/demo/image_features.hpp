// image_features: a small stage for replay tests and demos. For each Image it publishes an
// ActionChunk of features [H, C]: the mean of each row per channel, scaled to [0, 1], times
// `gain`, plus noise_std * N(0, 1) drawn from the node's generator — so it has a parameter
// that changes its output and randomness that replay must reproduce exactly.
#pragma once

#include "runtime/node/node.hpp"

namespace edgevla::nodes {

class ImageFeaturesNode final : public Node {
 public:
  explicit ImageFeaturesNode(const NodeOptions& options) : Node(options) {}
  Status configure(NodeSpec& spec) override;
  Status activate() override { return Status::ok(); }
  Status deactivate() override { return Status::ok(); }

 private:
  void on_image(const msgs::Image& image);

  Param<double> gain_{"gain", 1.0, {"scale applied to the features", 0.0, 100.0}};
  Param<double> noise_std_{"noise_std", 0.01, {"standard deviation of the added noise", 0.0, 10.0}};
  Param<std::int64_t> seed_{"seed", 7, {"generator seed", 0.0, {}, {}, true}};
  Publisher<msgs::ActionChunk> features_;
};

}  // namespace edgevla::nodes
