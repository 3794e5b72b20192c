// tensor_sink: subscribes to Images from tensor_source, checks every byte against the
// pattern, counts missing frames, and measures source -> sink latency from the header's
// capture stamp and hop trace. Prints (and optionally writes) a summary on deactivation.
#pragma once

#include <mutex>

#include "runtime/node/node.hpp"
#include "runtime/util/stats.hpp"

namespace edgevla::nodes {

struct SinkSummary {
  std::uint64_t frames = 0;
  std::uint64_t corrupt = 0;     // frames whose bytes did not match the pattern
  std::uint64_t missing = 0;     // gaps in the frame counter
  std::int64_t p50_ns = 0;       // capture -> sink callback
  std::int64_t p99_ns = 0;
  std::int64_t max_ns = 0;
  std::string transport;         // buffer kind the pixels arrived in (shm when the source loans)
};

class TensorSinkNode final : public Node {
 public:
  explicit TensorSinkNode(const NodeOptions& options) : Node(options) {}
  Status configure(NodeSpec& spec) override;
  Status activate() override;
  Status deactivate() override;
  SinkSummary summary() const;

 private:
  void on_image(const msgs::Image& image);

  Param<bool> verify_{"verify", true, {"check every byte against the source's pattern"}};
  Param<std::string> summary_file_{"summary_file", "", {"write the summary as YAML here on deactivation"}};
  Param<std::string> qos_{"qos", "keep_last:10", {"subscription QoS (keep_latest, keep_last:N, reliable:N)", {}, {}, {}, true}};
  mutable std::mutex mu_;
  SinkSummary summary_;
  LatencyHistogram latency_;
  std::int64_t last_frame_ = -1;
};

}  // namespace edgevla::nodes
