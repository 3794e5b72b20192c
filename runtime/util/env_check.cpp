#include "runtime/util/env_check.hpp"

#include <algorithm>

#include "runtime/util/edit_distance.hpp"

extern char** environ;

namespace edgevla {

std::vector<std::string> unknown_env_variables(std::span<const std::string_view> prefixes,
                                               std::span<const EnvKnob> known, const char* const* env) {
  std::vector<std::string> lines;
  for (; env != nullptr && *env != nullptr; ++env) {
    const std::string_view entry(*env);
    const std::string_view name = entry.substr(0, entry.find('='));
    const bool ours = std::any_of(prefixes.begin(), prefixes.end(), [&](std::string_view p) { return name.starts_with(p); });
    if (!ours) continue;
    if (std::any_of(known.begin(), known.end(), [&](const EnvKnob& k) { return k.name == name; })) continue;
    std::string_view nearest;
    std::size_t best = 4;  // more edits than this is another name, not a typo of one
    for (const EnvKnob& k : known) {
      const std::size_t d = edit_distance(name, k.name);
      if (d < best) best = d, nearest = k.name;
    }
    std::string line = std::string(name) + " is set but edgevla reads no such variable, so it has no effect";
    line += nearest.empty() ? "; unset it" : "; did you mean " + std::string(nearest) + "?";
    lines.push_back(std::move(line));
  }
  return lines;
}

std::vector<std::string> unknown_env_variables(std::span<const std::string_view> prefixes,
                                               std::span<const EnvKnob> known) {
  return unknown_env_variables(prefixes, known, environ);
}

}  // namespace edgevla
