// my_gripper: a node built outside edgevla, against the installed package. It turns the
// policy's action chunks into open/close commands for a parallel gripper: the first action's
// `column` entry at or above `open_at` opens it (1), below closes it (0). One JointCommand [1]
// per chunk on `command`.
#include <runtime/node/node_registry.hpp>

namespace my_robot {

class GripperNode final : public edgevla::Node {
 public:
  explicit GripperNode(const edgevla::NodeOptions& options) : Node(options) {}

  edgevla::Status configure(edgevla::NodeSpec& spec) override {
    EDGEVLA_RETURN_IF_ERROR(spec.declare(column_));
    EDGEVLA_RETURN_IF_ERROR(spec.declare(open_at_));
    EDGEVLA_ASSIGN_OR_RETURN(command_, spec.publisher<edgevla::msgs::JointCommand>("command"));
    return spec.subscribe<edgevla::msgs::ActionChunk>(
        "chunks", edgevla::QoS::keep_last(2),
        [this](const edgevla::msgs::ActionChunk& chunk) { on_chunk(chunk); });
  }
  edgevla::Status activate() override { return edgevla::Status::ok(); }
  edgevla::Status deactivate() override { return edgevla::Status::ok(); }

 private:
  void on_chunk(const edgevla::msgs::ActionChunk& chunk) {
    const edgevla::Tensor& actions = chunk.actions();
    if (actions.dtype() != edgevla::DType::kF32 || actions.shape().rank() != 2 ||
        actions.shape()[0] < 1 || actions.shape()[1] <= *column_) {
      report_bad_input("chunks",
                       edgevla::invalid_argument("expects f32 actions [H, D] with D > column (" +
                                                 std::to_string(*column_) + "), got " +
                                                 actions.describe() + "; set the column param"));
      return;
    }
    auto contiguous = actions.contiguous();
    if (!contiguous) {
      report_bad_input("chunks", contiguous.status());
      return;
    }
    const float value = contiguous->data<float>()[*column_];  // first action of the chunk
    auto position = edgevla::Tensor::empty(edgevla::DType::kF32, edgevla::Shape{1});
    if (!position) {
      report_bad_input("command", position.status());
      return;
    }
    position->data<float>()[0] = value >= *open_at_ ? 1.0F : 0.0F;
    auto msg = edgevla::msgs::JointCommand::make(std::move(*position));
    if (!msg) {
      report_bad_input("command", msg.status());
      return;
    }
    msg->derive_from(chunk.header());  // keeps the camera-to-command trace
    if (edgevla::Status s = command_.publish(std::move(*msg)); !s.is_ok())
      report_bad_input("command", s);
  }

  edgevla::Param<int> column_{"column", 2, {"action entry that drives the gripper", 0, 4095}};
  edgevla::Param<double> open_at_{"open_at", 0.5, {"open at or above this value, close below it"}};
  edgevla::Publisher<edgevla::msgs::JointCommand> command_;
};

EDGEVLA_REGISTER_NODE(GripperNode, "my_gripper",
                      "opens or closes a gripper from each action chunk (example plugin)");

}  // namespace my_robot
