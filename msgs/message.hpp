// Message: the unit every topic carries. A header (topic, sequence, stamps, hop trace),
// named tensors and a small map of scalar/string fields. Typed views (Image, ActionChunk...)
// in msgs/types.hpp check a message against its schema.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "runtime/core/tensor.hpp"

namespace edgevla {

// One input the publishing node had consumed when it published (replay feeds inputs in this
// interleaving): the newest message taken from that subscription, by publish stamp.
struct InputMark {
  std::string topic;
  std::int64_t publish_stamp_ns = 0;
  bool trigger = false;  // the message whose callback published this one
  bool operator==(const InputMark&) const = default;
};

// One input callback the publishing node ran since its previous publish, in the order it ran
// them: replay runs the same callbacks in the same order, on the same clock.
struct TakenInput {
  std::string topic;
  std::int64_t publish_stamp_ns = 0;   // the input message
  std::int64_t callback_stamp_ns = 0;  // node clock when its callback began
  bool operator==(const TakenInput&) const = default;
};

struct TraceHop {
  std::string node;
  std::int64_t stamp_ns = 0;  // when `node` published the message (wall clock)
  bool operator==(const TraceHop&) const = default;
};

// State of the publishing node's random generator when the callback that produced a message
// began: replaying the callback from this state reproduces its draws bit for bit.
struct RngState {
  std::uint64_t seed = 0;
  std::uint64_t counter = 0;
  bool operator==(const RngState&) const = default;
};

struct Header {
  std::string topic;
  std::uint64_t seq = 0;               // per publisher and topic, starts at 1, no gaps
  std::int64_t source_stamp_ns = 0;    // capture time of the data this message derives from
  std::int64_t publish_stamp_ns = 0;   // when this message was published
  std::vector<TraceHop> trace;         // one hop per node that published along the path
  std::string publisher;               // id of the publisher ("host/pid/n#k"); gap detection
  std::optional<RngState> rng;         // set when the publishing node has a generator
  std::int64_t callback_stamp_ns = 0;  // node clock when the producing callback began (0: none)
  std::vector<InputMark> inputs;       // what the publishing node had consumed (node publishers)
  std::vector<TakenInput> taken;       // input callbacks run since the node's previous publish
  std::uint32_t taken_lost = 0;        // older entries of `taken` dropped (over kMaxTaken)
  // Wall clock when this process took the message from another process's send (its ring or
  // socket), before decoding it; 0 for a message published in this process. Local bookkeeping
  // for the delivery statistics: never on the wire, never in a bag.
  std::int64_t arrival_ns = 0;
};

using FieldValue = std::variant<bool, std::int64_t, double, std::string>;

struct NamedTensor {
  std::string name;
  Tensor tensor;
};

class Message {
 public:
  Message() = default;
  Message(std::string type, std::uint32_t version) : type_(std::move(type)), version_(version) {}

  const std::string& type() const { return type_; }
  std::uint32_t version() const { return version_; }
  void set_type(std::string type, std::uint32_t version) {
    type_ = std::move(type);
    version_ = version;
  }

  Header& header() { return header_; }
  const Header& header() const { return header_; }

  const std::vector<NamedTensor>& tensors() const { return tensors_; }
  // nullptr when absent.
  const Tensor* tensor(std::string_view name) const;
  // Adds or replaces.
  void set_tensor(std::string name, Tensor tensor);
  void clear_tensors() { tensors_.clear(); }

  const std::map<std::string, FieldValue, std::less<>>& fields() const { return fields_; }
  const FieldValue* field(std::string_view name) const;
  void set_field(std::string name, FieldValue value);
  // Typed reads; the error names the field and the type found.
  Expected<std::int64_t> int_field(std::string_view name) const;
  Expected<double> number_field(std::string_view name) const;  // int or float
  Expected<std::string> string_field(std::string_view name) const;
  Expected<bool> bool_field(std::string_view name) const;

  // Carries the source stamp and hop trace of `input` into this message, so latency from
  // capture to the end of the graph can be measured downstream.
  void derive_from(const Header& input);

 private:
  std::string type_;
  std::uint32_t version_ = 0;
  Header header_;
  std::vector<NamedTensor> tensors_;
  std::map<std::string, FieldValue, std::less<>> fields_;
};

using MessagePtr = std::shared_ptr<const Message>;

std::string field_to_string(const FieldValue& value);

}  // namespace edgevla
