#include "msgs/message.hpp"

#include <algorithm>
#include <cstdio>

namespace edgevla {

const Tensor* Message::tensor(std::string_view name) const {
  for (const auto& t : tensors_) {
    if (t.name == name) return &t.tensor;
  }
  return nullptr;
}

void Message::set_tensor(std::string name, Tensor tensor) {
  for (auto& t : tensors_) {
    if (t.name == name) {
      t.tensor = std::move(tensor);
      return;
    }
  }
  tensors_.push_back({std::move(name), std::move(tensor)});
}

const FieldValue* Message::field(std::string_view name) const {
  auto it = fields_.find(name);
  return it == fields_.end() ? nullptr : &it->second;
}

void Message::set_field(std::string name, FieldValue value) {
  fields_.insert_or_assign(std::move(name), std::move(value));
}

namespace {

std::string_view kind_of(const FieldValue& v) {
  switch (v.index()) {
    case 0: return "bool";
    case 1: return "int";
    case 2: return "float";
    default: return "string";
  }
}

template <class T>
Expected<T> typed(const Message& m, std::string_view name, std::string_view want) {
  const FieldValue* v = m.field(name);
  if (v == nullptr) {
    return not_found(m.type() + " message has no field '" + std::string(name) + "'");
  }
  if (const T* p = std::get_if<T>(v)) return *p;
  return invalid_argument(m.type() + " field '" + std::string(name) + "' is " +
                          std::string(kind_of(*v)) + ", expected " + std::string(want));
}

}  // namespace

Expected<std::int64_t> Message::int_field(std::string_view name) const {
  return typed<std::int64_t>(*this, name, "int");
}

Expected<double> Message::number_field(std::string_view name) const {
  const FieldValue* v = field(name);
  if (v != nullptr) {
    if (const auto* i = std::get_if<std::int64_t>(v)) return static_cast<double>(*i);
  }
  return typed<double>(*this, name, "number");
}

Expected<std::string> Message::string_field(std::string_view name) const {
  return typed<std::string>(*this, name, "string");
}

Expected<bool> Message::bool_field(std::string_view name) const {
  return typed<bool>(*this, name, "bool");
}

void Message::derive_from(const Header& input) {
  header_.source_stamp_ns = input.source_stamp_ns;
  header_.trace = input.trace;
}

std::string field_to_string(const FieldValue& value) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool>) {
          return v ? "true" : "false";
        } else if constexpr (std::is_same_v<T, std::string>) {
          return "\"" + v + "\"";
        } else if constexpr (std::is_same_v<T, double>) {
          char buf[32];
          std::snprintf(buf, sizeof buf, "%.6g", v);
          return buf;
        } else {
          return std::to_string(v);
        }
      },
      value);
}

}  // namespace edgevla
