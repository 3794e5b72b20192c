// tensor_source: publishes an Image-sized tensor at a fixed rate, for proving the runtime
// before the VLA nodes exist. Pixels follow a pattern tied to the frame number, so a sink can
// check every byte arrived intact; they are written straight into a loaned (shared-memory)
// buffer, so no transport needs to copy them.
#pragma once

#include "runtime/node/node.hpp"

namespace edgevla::nodes {

class TensorSourceNode final : public Node {
 public:
  explicit TensorSourceNode(const NodeOptions& options) : Node(options) {}
  Status configure(NodeSpec& spec) override;
  Status activate() override;
  Status deactivate() override;

  // The byte at flat index `i` of frame `frame`.
  static std::uint8_t pattern(std::int64_t frame, std::int64_t i) {
    return static_cast<std::uint8_t>((frame * 7 + i) & 0xff);
  }

 private:
  void on_tick();

  Param<double> rate_hz_{"rate_hz", 30.0, {"frames per second (sets the timer)", 0.01, 100000.0, {}, true}};
  Param<int> width_{"width", 640, {"image width in pixels", 1, 16384}};
  Param<int> height_{"height", 480, {"image height in pixels", 1, 16384}};
  Param<std::string> encoding_{"encoding", "rgb8", {"pixel encoding", {}, {}, {"rgb8", "rgba8", "mono8"}}};
  Param<std::string> camera_{"camera", "base", {"camera name written into each Image"}};
  Param<std::int64_t> max_frames_{"max_frames", 0, {"stop publishing after this many frames (0: never)", 0.0, {}}};
  Param<std::string> summary_file_{"summary_file", "", {"write frames published as YAML here on deactivation"}};
  Publisher<msgs::Image> image_;
  std::int64_t frame_ = 0;
};

}  // namespace edgevla::nodes
