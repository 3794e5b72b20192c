// libFuzzer target for GR00T's per-robot files (runtime/model/groot/processor.cpp) and the
// embodiment resolved from them (runtime/model/groot/embodiment.cpp).
//
// An input is three texts separated by NUL bytes: processor_config.json, statistics.json,
// embodiment_id.json. Each is parsed on its own (a rejection must carry a message); when all
// three parse, every embodiment tag of the processor config is resolved against the model
// limits of the small config, and the resolved embodiment normalizes a raw state (each group
// at its width, and one group a value short) and decodes a chunk of actions, as the
// preprocessor and the action head do. Properties: no crash, hang, leak or UB; every failure
// a Status with a message; normalized state is finite.
//
// Seeds (tests/fuzz/corpus/groot_processor/): the files a generated groot checkpoint
// carries and variants (relative actions, EEF formats, sin/cos and mean/std keys, per-step
// statistics).
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/model/groot/embodiment.hpp"
#include "runtime/model/groot/processor.hpp"
#include "tests/fuzz/fuzz_util.hpp"

namespace {

using namespace edgevla;
using namespace edgevla::model::groot;
constexpr const char* kTarget = "groot_processor_fuzzer";

template <class T>
bool accepted(const Expected<T>& e) {
  if (!e) FUZZ_CHECK(!e.status().message().empty(), "");
  return e.has_value();
}

void exercise(const Embodiment& e) {
  RawState raw;
  for (const StateGroup& g : e.state_groups()) {
    const std::int64_t dim = g.dim > 0 ? g.dim : 2;
    std::vector<float> v(static_cast<std::size_t>(std::min<std::int64_t>(dim, 1024)));
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = 0.1f * static_cast<float>(i) - 0.3f;
    raw[g.key] = std::move(v);
  }
  for (const ActionGroup& g : e.action_groups()) {
    if (!raw.contains(g.state_key())) raw[g.state_key()] = std::vector<float>(16, 0.25f);
  }
  std::vector<float> state(static_cast<std::size_t>(e.max_state_dim()));
  const Status st = e.normalize_state(raw, state);
  FUZZ_CHECK(st.is_ok() || !st.message().empty(), "");
  if (st.is_ok()) {
    for (float x : state) FUZZ_CHECK(std::isfinite(x), e.tag());
  }
  const std::int64_t rows = e.horizon();
  const std::int64_t width = e.max_action_dim();
  if (rows > 0 && rows <= 1024 && width > 0 && width <= 1024) {
    std::vector<float> normalized(static_cast<std::size_t>(rows * width), 0.5f);
    std::vector<double> out(static_cast<std::size_t>(rows * std::max<std::int64_t>(e.action_dim(), 0)));
    const Status dt = e.decode_actions(normalized, rows, raw, out);
    FUZZ_CHECK(dt.is_ok() || !dt.message().empty(), "");
  }
  // A group one value short must be refused, not read past.
  if (!e.state_groups().empty() && !raw.begin()->second.empty()) {
    raw.begin()->second.pop_back();
    const Status shorter = e.normalize_state(raw, state);
    FUZZ_CHECK(shorter.is_ok() || !shorter.message().empty(), "");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto parts = fuzz::split_parts<3>(fuzz::as_text(data, size), std::string_view("\0", 1));
  auto processor = parse_processor_config(std::string(parts[0]), "fuzz/processor_config.json");
  auto statistics = parse_statistics(std::string(parts[1]), "fuzz/statistics.json");
  auto ids = parts[2].empty() ? Expected<EmbodimentIds>(builtin_embodiment_ids())
                              : parse_embodiment_ids(std::string(parts[2]), "fuzz/embodiment_id.json");
  const bool ok = accepted(processor) & accepted(statistics) & accepted(ids);
  if (!ok) return 0;
  const EmbodimentLimits limits{64, 32, 16, 32};
  for (const std::string& tag : processor->tags()) {
    auto e = Embodiment::resolve(*processor, *statistics, *ids, tag, limits);
    if (!accepted(e)) continue;
    FUZZ_CHECK(e->tag() == tag, tag);
    exercise(*e);
  }
  return 0;
}
