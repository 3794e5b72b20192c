// Message schemas: which tensors (name, dtypes, rank) and fields a message type must carry.
// The bus checks every message against its type's schema on publish and on receive, so a
// malformed message is rejected at the boundary with a message that names the culprit.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <span>
#include <string_view>
#include <vector>

#include "msgs/message.hpp"

namespace edgevla {

enum class FieldKind { kBool, kInt, kFloat, kNumber, kString };

constexpr std::uint32_t dtype_mask(std::initializer_list<DType> dtypes) {
  std::uint32_t m = 0;
  for (DType d : dtypes) m |= 1u << static_cast<unsigned>(d);
  return m;
}

struct TensorRule {
  std::string_view name;
  bool is_prefix = false;                 // name is a prefix: "k." matches "k.0", "k.1", ...
  std::uint32_t dtypes = 0;               // accepted dtypes, a mask from dtype_mask()
  int min_rank = 0;
  int max_rank = Shape::kMaxRank;
  bool required = true;                   // for a prefix: at least one match
  std::string_view meaning;               // one line, shown in errors and docs
};

struct FieldRule {
  std::string_view name;
  FieldKind kind = FieldKind::kString;
  bool required = true;
};

struct MessageSchema {
  std::string_view type;
  std::uint32_t version = 1;
  std::span<const TensorRule> tensors;
  std::span<const FieldRule> fields;
  // Type-specific consistency checks (e.g. K and V of a layer agree); may be null.
  Status (*check)(const Message&) = nullptr;
};

// Checks type name, version, tensors and fields. Extra tensors and fields are allowed.
Status validate(const Message& message, const MessageSchema& schema);
// Every built-in schema, for lookup by type name (nullptr when unknown).
const MessageSchema* find_schema(std::string_view type);
std::span<const MessageSchema* const> all_schemas();
// "f32|bf16" for error messages.
std::string dtype_mask_names(std::uint32_t mask);

}  // namespace edgevla
