#include "msgs/types.hpp"

#include <array>

namespace edgevla::msgs {
namespace {

constexpr std::uint32_t kFloats = dtype_mask({DType::kF32, DType::kF16, DType::kBF16});

// Image ---------------------------------------------------------------------------------------

int channels_of(std::string_view encoding) {
  if (encoding == "rgb8" || encoding == "bgr8" || encoding == "rgbf32") return 3;
  if (encoding == "rgba8") return 4;
  if (encoding == "mono8" || encoding == "mono16") return 1;
  return -1;
}

Status check_image(const Message& m) {
  const Tensor& px = *m.tensor("pixels");
  const std::string enc = m.string_field("encoding").value();
  const int c = channels_of(enc);
  if (c < 0) {
    return invalid_argument("Image encoding '" + enc +
                            "' is unknown (use rgb8, bgr8, rgba8, mono8, mono16 or rgbf32)");
  }
  if (px.shape()[2] != c) {
    return invalid_argument("Image pixels " + px.shape().to_string() + " have " +
                            std::to_string(px.shape()[2]) + " channels but encoding '" + enc +
                            "' needs " + std::to_string(c));
  }
  const DType want = enc == "mono16" ? DType::kU16 : enc == "rgbf32" ? DType::kF32 : DType::kU8;
  if (px.dtype() != want) {
    return invalid_argument("Image encoding '" + enc + "' needs " +
                            std::string(dtype_name(want)) + " pixels, got " +
                            std::string(dtype_name(px.dtype())));
  }
  return Status::ok();
}

constexpr std::array kImageTensors = {
    TensorRule{"pixels", false, dtype_mask({DType::kU8, DType::kU16, DType::kF32}), 3, 3, true,
               "pixels [H, W, C]"},
};
constexpr std::array kImageFields = {
    FieldRule{"encoding", FieldKind::kString, true},
    FieldRule{"camera", FieldKind::kString, true},
    FieldRule{"frame", FieldKind::kInt, false},
};

// Observation ---------------------------------------------------------------------------------

Status check_observation(const Message& m) {
  const Tensor* tokens = m.tensor("tokens");
  const Tensor* mask = m.tensor("token_mask");
  if ((tokens == nullptr) != (mask == nullptr)) {
    return invalid_argument("Observation carries one of 'tokens'/'token_mask' without the other");
  }
  if (tokens != nullptr && !(tokens->shape() == mask->shape())) {
    return invalid_argument("Observation 'tokens' " + tokens->shape().to_string() +
                            " and 'token_mask' " + mask->shape().to_string() + " differ");
  }
  return Status::ok();
}

constexpr std::array kObservationTensors = {
    TensorRule{"state", false, dtype_mask({DType::kF32}), 1, 1, true, "robot state [D]"},
    TensorRule{"image.", true, dtype_mask({DType::kU8, DType::kF32}), 3, 3, false,
               "one image per camera, image.<camera> [3, H, W] f32 or [H, W, 3] u8"},
    TensorRule{"state_raw", false, dtype_mask({DType::kF32}), 1, 1, false,
               "the robot's state before normalization [d]"},
    TensorRule{"tokens", false, dtype_mask({DType::kI32}), 1, 1, false, "prompt token ids [L]"},
    TensorRule{"token_mask", false, dtype_mask({DType::kBool}), 1, 1, false,
               "true where tokens are real [L]"},
};
constexpr std::array kObservationFields = {
    FieldRule{"prompt", FieldKind::kString, false},
};

// BackboneOutput ------------------------------------------------------------------------------

constexpr std::array<TensorRule, 0> kBackboneOutputTensors = {};
constexpr std::array kBackboneOutputFields = {
    FieldRule{"family", FieldKind::kString, true},
};

// ActionChunk, JointCommand, NodeStatus --------------------------------------------------------

constexpr std::array kActionTensors = {
    TensorRule{"actions", false, dtype_mask({DType::kF32}), 2, 2, true, "actions [horizon, dim]"},
};
constexpr std::array kActionFields = {
    FieldRule{"dt_s", FieldKind::kNumber, false},
    FieldRule{"observation_seq", FieldKind::kInt, false},
};

constexpr std::array kJointTensors = {
    TensorRule{"position", false, dtype_mask({DType::kF32, DType::kF64}), 1, 1, true,
               "joint positions [D]"},
    TensorRule{"velocity", false, dtype_mask({DType::kF32, DType::kF64}), 1, 1, false,
               "joint velocities [D]"},
};
constexpr std::array<FieldRule, 0> kJointFields = {};

constexpr std::array kRobotStateTensors = {
    TensorRule{"position", false, dtype_mask({DType::kF32, DType::kF64}), 1, 1, true,
               "state vector [D]"},
};
constexpr std::array<FieldRule, 0> kRobotStateFields = {};

constexpr std::array<TensorRule, 0> kPromptTensors = {};
constexpr std::array kPromptFields = {
    FieldRule{"text", FieldKind::kString, true},
};

constexpr std::array<TensorRule, 0> kStatusTensors = {};
constexpr std::array kStatusFields = {
    FieldRule{"node", FieldKind::kString, true},
    FieldRule{"state", FieldKind::kString, true},
};

}  // namespace

const MessageSchema& Image::schema() {
  static const MessageSchema s{"Image", 1, kImageTensors, kImageFields, &check_image};
  return s;
}

const MessageSchema& Observation::schema() {
  static const MessageSchema s{"Observation", 1, kObservationTensors, kObservationFields,
                               &check_observation};
  return s;
}

const MessageSchema& BackboneOutput::schema() {
  static const MessageSchema s{"BackboneOutput", 1, kBackboneOutputTensors, kBackboneOutputFields, nullptr};
  return s;
}

const MessageSchema& ActionChunk::schema() {
  static const MessageSchema s{"ActionChunk", 1, kActionTensors, kActionFields, nullptr};
  return s;
}

const MessageSchema& JointCommand::schema() {
  static const MessageSchema s{"JointCommand", 1, kJointTensors, kJointFields, nullptr};
  return s;
}

const MessageSchema& RobotState::schema() {
  static const MessageSchema s{"RobotState", 1, kRobotStateTensors, kRobotStateFields, nullptr};
  return s;
}

const MessageSchema& Prompt::schema() {
  static const MessageSchema s{"Prompt", 1, kPromptTensors, kPromptFields, nullptr};
  return s;
}

const MessageSchema& NodeStatus::schema() {
  static const MessageSchema s{"NodeStatus", 1, kStatusTensors, kStatusFields, nullptr};
  return s;
}

const Tensor* Observation::image(std::string_view name) const {
  return message_->tensor("image." + std::string(name));
}

namespace {

Expected<Message> finish(Message m, const MessageSchema& schema) {
  EDGEVLA_RETURN_IF_ERROR(validate(m, schema));
  return m;
}

}  // namespace

Expected<Message> Image::make(Tensor pixels, std::string encoding, std::string camera) {
  Message m(std::string(schema().type), schema().version);
  m.set_tensor("pixels", std::move(pixels));
  m.set_field("encoding", std::move(encoding));
  m.set_field("camera", std::move(camera));
  return finish(std::move(m), schema());
}

Expected<Message> Observation::make(Tensor state) {
  Message m(std::string(schema().type), schema().version);
  m.set_tensor("state", std::move(state));
  return finish(std::move(m), schema());
}

Expected<Message> ActionChunk::make(Tensor actions, double dt_s) {
  Message m(std::string(schema().type), schema().version);
  m.set_tensor("actions", std::move(actions));
  m.set_field("dt_s", dt_s);
  return finish(std::move(m), schema());
}

Expected<Message> RobotState::make(Tensor position) {
  Message m(std::string(schema().type), schema().version);
  m.set_tensor("position", std::move(position));
  return finish(std::move(m), schema());
}

Expected<Message> Prompt::make(std::string text) {
  Message m(std::string(schema().type), schema().version);
  m.set_field("text", std::move(text));
  return finish(std::move(m), schema());
}

Expected<Message> JointCommand::make(Tensor position) {
  Message m(std::string(schema().type), schema().version);
  m.set_tensor("position", std::move(position));
  return finish(std::move(m), schema());
}

}  // namespace edgevla::msgs
