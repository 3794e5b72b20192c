// libFuzzer target for the control protocol as a node host answers it (runtime/node/params.cpp:
// parse_param_set, param_value_from_text; the node host's control() dispatches to them).
//
// An input is the request's two frames, command and argument, separated by the first NUL.
// The harness answers it the way NodeHost::control does for a node "n" declaring one param of
// every type (with ranges, choices, a 32-bit int and a read-only param): "nodes" and "params"
// are answered, "set" is decoded into node, key and value, the value converted and checked
// against the declaration; an accepted value is shown as `edgevla param get` shows it
// (emit_param_value) and that text, sent back as a set, gives the same value again.
// Properties: no crash, hang, leak or UB, no exception out of the decoder, every refusal a
// Status with a message, accepted values inside their declaration.
//
// Seeds (tests/fuzz/corpus/control/): sets of every param type (scalars, flow and block
// lists, quoted strings, out-of-range and mistyped values, bad YAML), unknown commands.
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/node/params.hpp"
#include "tests/fuzz/fuzz_util.hpp"

namespace {

using namespace edgevla;
constexpr const char* kTarget = "control_fuzzer";

std::vector<ParamDescriptor> declared() {
  std::vector<ParamDescriptor> out;
  auto add = [&](std::string name, ParamType type, ParamValue v, ParamInfo info = {}, bool int32 = false) {
    ParamDescriptor d;
    d.name = std::move(name);
    d.type = type;
    d.default_value = v;
    d.value = v;
    d.info = std::move(info);
    d.int32 = int32;
    out.push_back(std::move(d));
  };
  add("enabled", ParamType::kBool, true);
  add("rate_hz", ParamType::kDouble, 50.0, {"", 0.1, 1000.0, {}, false});
  add("gain", ParamType::kDouble, 1.0);
  add("steps", ParamType::kInt, std::int64_t{10}, {"", 1.0, 100.0, {}, false}, true);
  add("seed", ParamType::kInt, std::int64_t{0});
  add("count32", ParamType::kInt, std::int64_t{0}, {}, true);
  add("mode", ParamType::kString, std::string("hold"), {"", {}, {}, {"hold", "blend", "stride"}, false});
  add("label", ParamType::kString, std::string(""));
  add("joints", ParamType::kIntList, std::vector<std::int64_t>{0, 1}, {"", -1.0, 63.0, {}, false});
  add("limits", ParamType::kDoubleList, std::vector<double>{-1.0, 1.0});
  add("topics", ParamType::kStringList, std::vector<std::string>{"a"});
  add("checkpoint", ParamType::kString, std::string("x"), {"", {}, {}, {}, true});
  return out;
}

bool matches_type(const ParamValue& v, ParamType t) {
  switch (t) {
    case ParamType::kBool: return std::holds_alternative<bool>(v);
    case ParamType::kInt: return std::holds_alternative<std::int64_t>(v);
    case ParamType::kDouble: return std::holds_alternative<double>(v);
    case ParamType::kString: return std::holds_alternative<std::string>(v);
    case ParamType::kIntList: return std::holds_alternative<std::vector<std::int64_t>>(v);
    case ParamType::kDoubleList: return std::holds_alternative<std::vector<double>>(v);
    case ParamType::kStringList: return std::holds_alternative<std::vector<std::string>>(v);
  }
  return false;
}

// Equal, with NaN equal to NaN (a double param may hold .nan when its range is open).
bool same(const ParamValue& a, const ParamValue& b) {
  const auto* da = std::get_if<double>(&a);
  const auto* db = std::get_if<double>(&b);
  if (da != nullptr && db != nullptr) return (std::isnan(*da) && std::isnan(*db)) || *da == *db;
  const auto* la = std::get_if<std::vector<double>>(&a);
  const auto* lb = std::get_if<std::vector<double>>(&b);
  if (la != nullptr && lb != nullptr) {
    if (la->size() != lb->size()) return false;
    for (std::size_t i = 0; i < la->size(); ++i) {
      if (!((std::isnan((*la)[i]) && std::isnan((*lb)[i])) || (*la)[i] == (*lb)[i])) return false;
    }
    return true;
  }
  return a == b;
}

void answer_set(std::string_view argument, std::vector<ParamDescriptor>& params) {
  auto set = parse_param_set(argument);
  if (!set) {
    FUZZ_CHECK(!set.status().message().empty(), "");
    return;
  }
  FUZZ_CHECK(set->node.find('\n') == std::string::npos && set->key.find('\n') == std::string::npos, "");
  if (set->node != "n") return;  // "no node named ..."
  for (ParamDescriptor& d : params) {
    if (d.name != set->key) continue;
    const std::string where = "node 'n': param '" + d.name + "'";
    auto v = param_value_from_text(set->value, d, where);
    if (!v) {
      FUZZ_CHECK(!v.status().message().empty(), "");
      return;
    }
    FUZZ_CHECK(!d.info.read_only, d.name);
    FUZZ_CHECK(matches_type(*v, d.type), d.name);
    FUZZ_CHECK(check_param_value(*v, d.info, d.int32).is_ok(), d.name);
    d.value = *v;
    // What `params` shows for the value is a set that gives the same value.
    YAML::Emitter out;
    out.SetDoublePrecision(17);
    emit_param_value(out, *v);
    FUZZ_CHECK(out.good(), out.GetLastError());
    auto again = param_value_from_text(out.c_str(), d, where);
    FUZZ_CHECK(again.has_value(), again.status().to_string() + " for " + out.c_str());
    FUZZ_CHECK(same(*again, *v), std::string("value changed through its YAML form ") + out.c_str());
    (void)param_value_to_string(*v);
    return;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static std::vector<ParamDescriptor> params = declared();
  const auto frames = fuzz::split_parts<2>(fuzz::as_text(data, size), std::string_view("\0", 1));
  const std::string_view command = frames[0];
  if (command == "set") {
    answer_set(frames[1], params);
  } else if (command == "params" || command == "nodes") {
    YAML::Emitter out;
    out << YAML::BeginMap;
    for (const ParamDescriptor& d : params) {
      out << YAML::Key << d.name << YAML::Value;
      emit_param_value(out, d.value);
    }
    out << YAML::EndMap;
    FUZZ_CHECK(out.good(), out.GetLastError());
  }
  return 0;
}
