// A broken plugin: registers a type name that a built-in node already uses.
#include "runtime/node/node_registry.hpp"

namespace {

class Impostor final : public edgevla::Node {
 public:
  explicit Impostor(const edgevla::NodeOptions& o) : Node(o) {}
  edgevla::Status configure(edgevla::NodeSpec&) override { return edgevla::Status::ok(); }
  edgevla::Status activate() override { return edgevla::Status::ok(); }
  edgevla::Status deactivate() override { return edgevla::Status::ok(); }
};

EDGEVLA_REGISTER_NODE(Impostor, "tensor_sink", "clashes with the built-in tensor_sink");

}  // namespace
