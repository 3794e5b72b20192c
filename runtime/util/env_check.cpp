#include "runtime/util/env_check.hpp"

#include <algorithm>

#include "runtime/util/edit_distance.hpp"

extern char** environ;

namespace edgevla {

EnvCheck check_env(std::span<const std::string_view> prefixes, std::span<const EnvKnob> known, const char* const* env) {
  EnvCheck out;
  for (; env != nullptr && *env != nullptr; ++env) {
    const std::string_view entry(*env);
    const std::size_t eq = entry.find('=');
    const std::string_view name = entry.substr(0, eq);
    const bool ours = std::any_of(prefixes.begin(), prefixes.end(), [&](std::string_view p) { return name.starts_with(p); });
    if (!ours) continue;
    if (std::any_of(known.begin(), known.end(), [&](const EnvKnob& k) { return k.name == name; })) {
      if (eq != std::string_view::npos && eq + 1 < entry.size()) out.set.emplace_back(entry);
      continue;
    }
    std::string_view nearest;
    std::size_t best = 4;  // more edits than this is another name, not a typo of one
    for (const EnvKnob& k : known) {
      const std::size_t d = edit_distance(name, k.name);
      if (d < best) best = d, nearest = k.name;
    }
    std::string line = std::string(name) + " is set but edgevla reads no such variable, so it has no effect";
    line += nearest.empty() ? "; unset it" : "; did you mean " + std::string(nearest) + "?";
    out.unknown.push_back(std::move(line));
  }
  return out;
}

EnvCheck check_env(std::span<const std::string_view> prefixes, std::span<const EnvKnob> known) {
  return check_env(prefixes, known, environ);
}

}  // namespace edgevla
