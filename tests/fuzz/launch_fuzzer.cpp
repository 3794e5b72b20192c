// libFuzzer target for launch files and params files (runtime/launch/launch_file.cpp's
// parse_launch; runtime/node/params.cpp and runtime/bus/qos.cpp for the values they carry).
//
// An input is up to four texts separated by NUL bytes, written into a scratch folder:
// launch.yaml (parsed), params.yaml and include.yaml (which the launch file may name in
// params_files / include), then --set arguments one per line. Properties: no crash, hang,
// leak, UB or exception out of parse_launch; a rejection has a message; an accepted launch
// has at least one group, every node a valid name unique in the launch, and every param value
// converts (or is refused with a message) as a node's declaration would convert it, with the
// range check applied.
//
// Seeds (tests/fuzz/corpus/launch/): the launch and params files in launch/ and params/, and
// small launches using groups, record, includes, params files, remaps, QoS, ${ENV:-default}.
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "runtime/launch/launch_file.hpp"
#include "runtime/node/params.hpp"
#include "tests/fuzz/fuzz_util.hpp"

namespace {

using namespace edgevla;
constexpr const char* kTarget = "launch_fuzzer";

std::vector<std::string> lines(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    out.emplace_back(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Warnings about params for nodes a launch does not run would flood the fuzzer's output.
  ::setenv("EDGEVLA_LOG_LEVEL", "off", 1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static fuzz::ScratchDir dir(kTarget);
  const auto parts = fuzz::split_parts<4>(fuzz::as_text(data, size), std::string_view("\0", 1));
  const std::string launch = dir.write("launch.yaml", parts[0]);
  dir.write("params.yaml", parts[1]);
  dir.write("include.yaml", parts[2]);
  auto d = parse_launch(launch, lines(parts[3]));
  if (!d) {
    FUZZ_CHECK(!d.status().message().empty(), "");
    return 0;
  }
  FUZZ_CHECK(!d->groups.empty(), "");
  std::set<std::string> names;
  for (const GroupDescription& g : d->groups) {
    for (const NodeOptions& n : g.nodes) {
      FUZZ_CHECK(!n.name.empty() && n.name.find_first_of("/. \t") == std::string::npos, n.name);
      FUZZ_CHECK(names.insert(n.name).second, "node name used twice: " + n.name);
      for (const auto& [key, o] : n.params) {
        for (ParamType t : {ParamType::kBool, ParamType::kInt, ParamType::kDouble, ParamType::kString,
                            ParamType::kIntList, ParamType::kDoubleList, ParamType::kStringList}) {
          try {
            auto v = param_from_yaml(o.value, t);
            if (!v) {
              FUZZ_CHECK(!v.status().message().empty(), key);
              continue;
            }
            const Status st = check_param_value(*v, ParamInfo{"", -1e6, 1e6, {}, false}, true);
            FUZZ_CHECK(st.is_ok() || !st.message().empty(), key);
            (void)param_value_to_string(*v);
          } catch (const std::exception& e) {
            fuzz::property_violated(kTarget, "param_from_yaml threw", key + ": " + e.what());
          }
        }
      }
    }
  }
  return 0;
}
