// Typed views of the built-in message types. A view wraps a MessagePtr the bus has already
// validated against the type's schema, so its accessors cannot fail. Builders (make) return
// a Message ready to publish or the Status that says what is wrong with the inputs.
#pragma once

#include <string>

#include "msgs/message.hpp"
#include "msgs/schema.hpp"

namespace edgevla::msgs {

// Base of the typed views: holds the shared message.
class View {
 public:
  explicit View(MessagePtr message) : message_(std::move(message)) {}
  const Message& message() const { return *message_; }
  const MessagePtr& ptr() const { return message_; }
  const Header& header() const { return message_->header(); }

 protected:
  const Tensor& tensor(std::string_view name) const { return *message_->tensor(name); }
  MessagePtr message_;
};

// A camera frame: pixels u8/u16/f32 [H, W, C]; encoding says the channel order.
class Image final : public View {
 public:
  using View::View;
  static const MessageSchema& schema();
  const Tensor& pixels() const { return tensor("pixels"); }
  std::string encoding() const { return message_->string_field("encoding").value(); }
  std::string camera() const { return message_->string_field("camera").value(); }
  // Encodings: rgb8, bgr8, rgba8, mono8, mono16, rgbf32. Channel count must match.
  static Expected<Message> make(Tensor pixels, std::string encoding, std::string camera);
};

// What the policy sees at one instant: images per camera, robot state, prompt tokens.
class Observation final : public View {
 public:
  using View::View;
  static const MessageSchema& schema();
  const Tensor& state() const { return tensor("state"); }
  // Image of camera `name` ("image.<name>"); nullptr when that camera is absent.
  const Tensor* image(std::string_view name) const;
  static Expected<Message> make(Tensor state);
};

// What a backbone stage hands its action head: the tensors the model family declares for that
// hand-over (pi0: the prefix keys/values `kv` and their `mask`; runtime/model/family.hpp), the
// observation's other tensors (state...), and the family that made it. The action head's
// engine checks the tensors against its family's declaration.
class BackboneOutput final : public View {
 public:
  using View::View;
  static const MessageSchema& schema();
  std::string family() const { return message_->string_field("family").value(); }
};

// A chunk of future actions [H, D] from the action head.
class ActionChunk final : public View {
 public:
  using View::View;
  static const MessageSchema& schema();
  const Tensor& actions() const { return tensor("actions"); }
  static Expected<Message> make(Tensor actions, double dt_s);
};

// The robot's measured state (joint positions, gripper...), the policy's proprioceptive input.
class RobotState final : public View {
 public:
  using View::View;
  static const MessageSchema& schema();
  const Tensor& position() const { return tensor("position"); }
  static Expected<Message> make(Tensor position);
};

// A natural-language instruction for the policy.
class Prompt final : public View {
 public:
  using View::View;
  static const MessageSchema& schema();
  std::string text() const { return message_->string_field("text").value(); }
  static Expected<Message> make(std::string text);
};

// One command to the robot's joints.
class JointCommand final : public View {
 public:
  using View::View;
  static const MessageSchema& schema();
  const Tensor& position() const { return tensor("position"); }
  static Expected<Message> make(Tensor position);
};

// A node's health and statistics, published periodically by every process.
class NodeStatus final : public View {
 public:
  using View::View;
  static const MessageSchema& schema();
  std::string node() const { return message_->string_field("node").value(); }
  std::string state() const { return message_->string_field("state").value(); }
};

}  // namespace edgevla::msgs
