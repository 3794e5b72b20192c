// Environment variables a component reads, checked against what is set: a variable under one of
// the component's prefixes that it does not read is a typo or a stale name, and would otherwise
// be ignored without a word. Each such variable gets one line naming it and the nearest name
// the component reads.
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

// The variables in `env` (NAME=VALUE entries, null-terminated like `environ`) that start with one
// of `prefixes` but name no entry of `known`: a line each, with the nearest known name when one
// is close (a few edits away). In the order `env` lists them.
std::vector<std::string> unknown_env_variables(std::span<const std::string_view> prefixes,
                                               std::span<const EnvKnob> known, const char* const* env);

// The same over this process's environment.
std::vector<std::string> unknown_env_variables(std::span<const std::string_view> prefixes,
                                               std::span<const EnvKnob> known);

}  // namespace edgevla
