// Declared parameters. A node declares each param with a type, default, description, range
// and read-only flag; values from params files, the launch file and --set are checked against
// the declaration, and anything undeclared, mistyped or out of range is a startup error that
// names the node, the key and where the value came from.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "runtime/core/status.hpp"

namespace edgevla {

enum class ParamType { kBool, kInt, kDouble, kString, kIntList, kDoubleList, kStringList };

std::string_view param_type_name(ParamType type);

using ParamValue = std::variant<bool, std::int64_t, double, std::string, std::vector<std::int64_t>,
                                std::vector<double>, std::vector<std::string>>;

struct ParamInfo {
  std::string description;
  std::optional<double> min;          // inclusive; numbers and every element of number lists
  std::optional<double> max;          // inclusive
  std::vector<std::string> choices;   // allowed strings (empty: any)
  bool read_only = false;             // fixed once the node is active
};

// A value given from outside the node, and where it was written ("params/a.yaml:12", "--set").
struct ParamOverride {
  YAML::Node value;
  std::string origin;
};
using ParamOverrides = std::map<std::string, ParamOverride>;

struct ParamDescriptor {
  std::string name;
  ParamType type = ParamType::kString;
  ParamValue default_value;
  ParamValue value;
  ParamInfo info;
  std::string origin = "default";
  bool int32 = false;  // declared as a C++ int: values must fit 32 bits
  // Writes a (checked) value into the node's Param member; runs on the node's executor thread.
  std::function<void(const ParamValue&)> apply;
};

// Converts `node` to `type`; the error says what was expected and what was found.
Expected<ParamValue> param_from_yaml(const YAML::Node& node, ParamType type);
// Checks range and choices, and (for params declared as a C++ int) that integers fit 32 bits.
Status check_param_value(const ParamValue& value, const ParamInfo& info, bool int32 = false);
std::string param_value_to_string(const ParamValue& value);
// Reads a YAML file (a launch, params or include file). Errors name the file and say why: it
// does not exist, is a folder or not a regular file, cannot be read, or is not valid YAML
// (with the line). `referenced_from` ("launch.yaml:4", may be empty) prefixes the error.
Expected<YAML::Node> load_yaml_file(const std::string& path, const std::string& referenced_from = "");
// Emits a value into a YAML emitter (used by `param dump`).
void emit_param_value(YAML::Emitter& out, const ParamValue& value);

// A `param set` as the control endpoint receives it (command "set"; the argument
// "<node>\n<key>\n<value>", the value YAML text that may itself hold newlines).
struct ParamSetRequest {
  std::string node;
  std::string key;
  std::string value;
};
Expected<ParamSetRequest> parse_param_set(std::string_view argument);
// The value `text` gives the declared param `d` at run time: read-only params refuse, the
// text is read as YAML, converted to d's type and checked against d's range and choices.
// Errors start with `where` ("node 'x': param 'y'").
Expected<ParamValue> param_value_from_text(std::string_view text, const ParamDescriptor& d,
                                           const std::string& where);

template <class T>
struct ParamTraits;
template <> struct ParamTraits<bool> { using Storage = bool; static constexpr ParamType kType = ParamType::kBool; };
template <> struct ParamTraits<int> { using Storage = std::int64_t; static constexpr ParamType kType = ParamType::kInt; };
template <> struct ParamTraits<std::int64_t> { using Storage = std::int64_t; static constexpr ParamType kType = ParamType::kInt; };
template <> struct ParamTraits<double> { using Storage = double; static constexpr ParamType kType = ParamType::kDouble; };
template <> struct ParamTraits<std::string> { using Storage = std::string; static constexpr ParamType kType = ParamType::kString; };
template <> struct ParamTraits<std::vector<std::int64_t>> { using Storage = std::vector<std::int64_t>; static constexpr ParamType kType = ParamType::kIntList; };
template <> struct ParamTraits<std::vector<double>> { using Storage = std::vector<double>; static constexpr ParamType kType = ParamType::kDoubleList; };
template <> struct ParamTraits<std::vector<std::string>> { using Storage = std::vector<std::string>; static constexpr ParamType kType = ParamType::kStringList; };

// A typed parameter member of a node: `Param<int> num_steps_{"num_steps", 10, {...}};`,
// then `spec.declare(num_steps_)` in configure(); read with `*num_steps_`.
template <class T>
class Param {
 public:
  Param(std::string name, T default_value, ParamInfo info = {})
      : name_(std::move(name)), default_(default_value), value_(std::move(default_value)),
        info_(std::move(info)) {}

  const std::string& name() const { return name_; }
  const T& value() const { return value_; }
  const T& operator*() const { return value_; }
  const T* operator->() const { return &value_; }
  const T& default_value() const { return default_; }
  const ParamInfo& info() const { return info_; }

 private:
  friend class NodeSpec;
  std::string name_;
  T default_;
  T value_;
  ParamInfo info_;
};

}  // namespace edgevla
