#include "msgs/schema.hpp"

#include <array>

#include "msgs/types.hpp"

namespace edgevla {
namespace {

bool field_matches(const FieldValue& v, FieldKind kind) {
  switch (kind) {
    case FieldKind::kBool: return std::holds_alternative<bool>(v);
    case FieldKind::kInt: return std::holds_alternative<std::int64_t>(v);
    case FieldKind::kFloat: return std::holds_alternative<double>(v);
    case FieldKind::kNumber:
      return std::holds_alternative<double>(v) || std::holds_alternative<std::int64_t>(v);
    case FieldKind::kString: return std::holds_alternative<std::string>(v);
  }
  return false;
}

std::string_view kind_name(FieldKind kind) {
  switch (kind) {
    case FieldKind::kBool: return "bool";
    case FieldKind::kInt: return "int";
    case FieldKind::kFloat: return "float";
    case FieldKind::kNumber: return "number";
    case FieldKind::kString: return "string";
  }
  return "?";
}

Status check_tensor(const MessageSchema& schema, const TensorRule& rule, const NamedTensor& t) {
  const std::string where = std::string(schema.type) + " tensor '" + t.name + "'";
  if (!t.tensor.defined()) return invalid_argument(where + " is undefined");
  if ((rule.dtypes & (1u << static_cast<unsigned>(t.tensor.dtype()))) == 0) {
    return invalid_argument(where + " has dtype " + std::string(dtype_name(t.tensor.dtype())) +
                            ", expected " + dtype_mask_names(rule.dtypes));
  }
  if (t.tensor.rank() < rule.min_rank || t.tensor.rank() > rule.max_rank) {
    const std::string want = rule.min_rank == rule.max_rank
                                 ? std::to_string(rule.min_rank)
                                 : std::to_string(rule.min_rank) + ".." + std::to_string(rule.max_rank);
    return invalid_argument(where + " has shape " + t.tensor.shape().to_string() + " (rank " +
                            std::to_string(t.tensor.rank()) + "), expected rank " + want + " (" +
                            std::string(rule.meaning) + ")");
  }
  return Status::ok();
}

}  // namespace

std::string dtype_mask_names(std::uint32_t mask) {
  std::string s;
  for (int i = 0; i < kNumDTypes; ++i) {
    if (mask & (1u << i)) {
      if (!s.empty()) s += "|";
      s += dtype_name(static_cast<DType>(i));
    }
  }
  return s;
}

Status validate(const Message& m, const MessageSchema& schema) {
  if (m.type() != schema.type) {
    return invalid_argument("message type is '" + m.type() + "', expected '" +
                            std::string(schema.type) + "'");
  }
  if (m.version() != schema.version) {
    return invalid_argument(std::string(schema.type) + " version " + std::to_string(m.version()) +
                            " is not supported (this build speaks version " +
                            std::to_string(schema.version) + "); rebuild both ends from one release");
  }
  for (const TensorRule& rule : schema.tensors) {
    bool found = false;
    for (const NamedTensor& t : m.tensors()) {
      const bool match = rule.is_prefix ? std::string_view(t.name).starts_with(rule.name)
                                        : t.name == rule.name;
      if (!match) continue;
      found = true;
      EDGEVLA_RETURN_IF_ERROR(check_tensor(schema, rule, t));
    }
    if (rule.required && !found) {
      return invalid_argument(std::string(schema.type) + " message lacks tensor '" +
                              std::string(rule.name) + (rule.is_prefix ? "*'" : "'") + " (" +
                              std::string(rule.meaning) + ")");
    }
  }
  for (const FieldRule& rule : schema.fields) {
    const FieldValue* v = m.field(rule.name);
    if (v == nullptr) {
      if (rule.required) {
        return invalid_argument(std::string(schema.type) + " message lacks field '" +
                                std::string(rule.name) + "'");
      }
      continue;
    }
    if (!field_matches(*v, rule.kind)) {
      return invalid_argument(std::string(schema.type) + " field '" + std::string(rule.name) +
                              "' must be " + std::string(kind_name(rule.kind)));
    }
  }
  if (schema.check != nullptr) return schema.check(m);
  return Status::ok();
}

const MessageSchema* find_schema(std::string_view type) {
  for (const MessageSchema* s : all_schemas()) {
    if (s->type == type) return s;
  }
  return nullptr;
}

std::span<const MessageSchema* const> all_schemas() {
  static const std::array<const MessageSchema*, 8> kAll = {
      &msgs::Image::schema(),       &msgs::Observation::schema(), &msgs::BackboneOutput::schema(),
      &msgs::ActionChunk::schema(), &msgs::JointCommand::schema(), &msgs::RobotState::schema(),
      &msgs::Prompt::schema(),      &msgs::NodeStatus::schema()};
  return kAll;
}

}  // namespace edgevla
