// Environment variables a component reads, checked against what is set: a variable under one of
// the component's prefixes that it does not read is a typo or a stale name, and would otherwise
// be ignored without a word; the ones it does read change how it runs, so a log should say so.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace edgevla {

// One run-time knob: its variable and what it does (values, default).
struct EnvKnob {
  std::string_view name;
  std::string_view meaning;
};

struct EnvCheck {
  // A line for each variable under the prefixes that names no knob, with the nearest knob when
  // one is close (a few edits away).
  std::vector<std::string> unknown;
  // NAME=VALUE of each knob set to a non-empty value.
  std::vector<std::string> set;
};

// The variables of `env` (NAME=VALUE entries, null-terminated like `environ`) under `prefixes`,
// against `known`, in the order `env` lists them.
EnvCheck check_env(std::span<const std::string_view> prefixes, std::span<const EnvKnob> known, const char* const* env);

// The same over this process's environment.
EnvCheck check_env(std::span<const std::string_view> prefixes, std::span<const EnvKnob> known);

}  // namespace edgevla
