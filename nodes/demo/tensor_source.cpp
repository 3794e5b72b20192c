#include "nodes/demo/tensor_source.hpp"

#include <fstream>

#include "runtime/node/node_registry.hpp"

namespace edgevla::nodes {

Status TensorSourceNode::configure(NodeSpec& spec) {
  EDGEVLA_RETURN_IF_ERROR(spec.declare(rate_hz_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(width_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(height_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(encoding_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(camera_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(max_frames_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(summary_file_));
  EDGEVLA_ASSIGN_OR_RETURN(image_, spec.publisher<msgs::Image>("image"));
  const auto period = std::chrono::nanoseconds(static_cast<std::int64_t>(1e9 / *rate_hz_));
  return spec.timer("tick", period, [this] { on_tick(); });
}

Status TensorSourceNode::activate() {
  frame_ = 0;
  return Status::ok();
}

Status TensorSourceNode::deactivate() {
  if (summary_file_->empty()) return Status::ok();
  std::ofstream f(*summary_file_);
  f << "frames: " << frame_ << "\ndeactivated_ns: " << wall_now_ns() << "\n";
  if (!f) return unavailable("node '" + name() + "': cannot write summary to '" + *summary_file_ + "'");
  return Status::ok();
}

void TensorSourceNode::on_tick() {
  if (*max_frames_ > 0 && frame_ >= *max_frames_) return;
  const int channels = *encoding_ == "rgba8" ? 4 : *encoding_ == "mono8" ? 1 : 3;
  auto pixels = image_.loan(DType::kU8, Shape{*height_, *width_, channels});
  if (!pixels) {
    report_bad_input("loan", pixels.status());
    return;
  }
  const std::int64_t n = pixels->numel();
  std::uint8_t* p = pixels->data<std::uint8_t>();
  for (std::int64_t i = 0; i < n; ++i) p[i] = pattern(frame_, i);
  auto msg = msgs::Image::make(std::move(*pixels), *encoding_, *camera_);
  if (!msg) {
    report_bad_input("image", msg.status());
    return;
  }
  msg->set_field("frame", frame_);
  msg->header().source_stamp_ns = now_ns();  // capture time
  if (Status s = image_.publish(std::move(*msg)); !s.is_ok()) {
    report_bad_input("publish", s);
    return;
  }
  ++frame_;
}

EDGEVLA_REGISTER_NODE(TensorSourceNode, "tensor_source",
                      "publishes a patterned Image at a fixed rate (runtime demo)");

}  // namespace edgevla::nodes
