// The groot tokenizer's files read into their parts: tokenizer.json, or vocab.json + merges.txt
// (+ added_tokens.json); tokenizer.cpp builds the encoder from them. Internal to the tokenizer.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/core/status.hpp"

namespace edgevla::model::groot::tokenizer_files {

// Qwen2's split regex (Qwen2Tokenizer's PRETOKENIZE_REGEX; tokenizer.json files carry their own).
inline constexpr std::string_view kQwen2SplitRegex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

inline constexpr std::string_view kFix =
    "copy the tokenizer files of Eagle-Block2A-2B-v2 (gr00t/model/modules/nvidia/"
    "Eagle-Block2A-2B-v2 in the GR00T source) into the checkpoint's Eagle folder again, or "
    "regenerate the checkpoint";

struct Parts {
  std::string source;
  std::vector<std::pair<std::string, std::int64_t>> vocab;
  std::vector<std::pair<std::string, std::string>> merges;
  std::vector<std::pair<std::string, std::int64_t>> added;
  bool nfc = true;
  std::string split_regex;
};

// `path`: a tokenizer.json file, or a folder holding tokenizer.json or else vocab.json +
// merges.txt (+ added_tokens.json). Errors name the file and what to do.
Expected<Parts> read_parts(const std::string& path);

}  // namespace edgevla::model::groot::tokenizer_files
