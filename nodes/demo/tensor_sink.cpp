#include "nodes/demo/tensor_sink.hpp"

#include <cstdio>
#include <fstream>

#include "nodes/demo/tensor_source.hpp"
#include "runtime/node/node_registry.hpp"

namespace edgevla::nodes {

Status TensorSinkNode::configure(NodeSpec& spec) {
  EDGEVLA_RETURN_IF_ERROR(spec.declare(verify_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(summary_file_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(qos_));
  auto qos = parse_qos(*qos_);
  if (!qos) return qos.status().with_context("node '" + name() + "': param 'qos'");
  return spec.subscribe<msgs::Image>("image", *qos, [this](const msgs::Image& m) { on_image(m); });
}

Status TensorSinkNode::activate() {
  std::lock_guard lock(mu_);
  summary_ = {};
  latency_.reset();
  last_frame_ = -1;
  return Status::ok();
}

void TensorSinkNode::on_image(const msgs::Image& image) {
  const std::int64_t latency = now_ns() - image.header().source_stamp_ns;
  const Tensor& px = image.pixels();
  bool ok = true;
  const std::int64_t frame = image.message().int_field("frame").has_value()
                                 ? *image.message().int_field("frame")
                                 : -1;
  if (*verify_ && frame >= 0) {
    const std::uint8_t* p = px.data<std::uint8_t>();
    const std::int64_t n = px.numel();
    for (std::int64_t i = 0; i < n && ok; ++i) ok = p[i] == TensorSourceNode::pattern(frame, i);
  }
  std::lock_guard lock(mu_);
  ++summary_.frames;
  if (!ok) {
    ++summary_.corrupt;
    report_bad_input("corrupt frame", data_loss("frame " + std::to_string(frame) +
                                                " does not match the source pattern"));
  }
  if (last_frame_ >= 0 && frame > last_frame_ + 1) summary_.missing += frame - last_frame_ - 1;
  last_frame_ = frame;
  summary_.transport = std::string(buffer_kind_name(px.buffer()->kind()));
  latency_.record(latency);
}

SinkSummary TensorSinkNode::summary() const {
  std::lock_guard lock(mu_);
  SinkSummary s = summary_;
  s.p50_ns = latency_.quantile_ns(0.5);
  s.p99_ns = latency_.quantile_ns(0.99);
  s.max_ns = latency_.max_ns();
  return s;
}

Status TensorSinkNode::deactivate() {
  const SinkSummary s = summary();
  std::printf("%-12s frames %6llu  corrupt %llu  missing %llu  via %-5s  latency p50 %8.1f us  p99 %8.1f us  max %8.1f us\n",
              name().c_str(), static_cast<unsigned long long>(s.frames),
              static_cast<unsigned long long>(s.corrupt), static_cast<unsigned long long>(s.missing),
              s.transport.c_str(), s.p50_ns / 1e3, s.p99_ns / 1e3, s.max_ns / 1e3);
  std::fflush(stdout);
  if (!summary_file_->empty()) {
    std::ofstream f(*summary_file_);
    f << "frames: " << s.frames << "\ncorrupt: " << s.corrupt << "\nmissing: " << s.missing
      << "\ntransport: " << s.transport << "\np50_ns: " << s.p50_ns << "\np99_ns: " << s.p99_ns
      << "\nmax_ns: " << s.max_ns << "\ndeactivated_ns: " << wall_now_ns() << "\n";
    if (!f) return unavailable("node '" + name() + "': cannot write summary to '" + *summary_file_ + "'");
  }
  return Status::ok();
}

EDGEVLA_REGISTER_NODE(TensorSinkNode, "tensor_sink",
                      "checks patterned Images and reports source->sink latency (runtime demo)");

}  // namespace edgevla::nodes
