// A node type that lives in a plugin library, loaded by a launch file's `plugins:` list.
#include "runtime/node/node_registry.hpp"

namespace {

// Republishes every Image it receives on "out", adding its own hop to the trace.
class RelayNode final : public edgevla::Node {
 public:
  explicit RelayNode(const edgevla::NodeOptions& o) : Node(o) {}
  edgevla::Status configure(edgevla::NodeSpec& spec) override {
    EDGEVLA_ASSIGN_OR_RETURN(out_, spec.publisher<edgevla::msgs::Image>("out"));
    return spec.subscribe<edgevla::msgs::Image>("in", edgevla::QoS::keep_last(5), [this](const edgevla::msgs::Image& m) {
      edgevla::Message copy = m.message();  // tensors are shared, not copied
      if (edgevla::Status s = out_.publish(std::move(copy)); !s.is_ok()) report_bad_input("relay", s);
    });
  }
  edgevla::Status activate() override { return edgevla::Status::ok(); }
  edgevla::Status deactivate() override { return edgevla::Status::ok(); }

 private:
  edgevla::Publisher<edgevla::msgs::Image> out_;
};

EDGEVLA_REGISTER_NODE(RelayNode, "test_relay", "republishes Images (test plugin)");

}  // namespace
