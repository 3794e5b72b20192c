// The byte-level BPE tokenizer a generated groot checkpoint carries in its Eagle folder: merges
// trained on a fixed English text, Qwen's added tokens (at Qwen's own ids when the vocabulary
// is Qwen's size). Internal to the generator (generator.cpp writes the files).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "runtime/core/status.hpp"

namespace edgevla::model::groot {

inline constexpr std::int64_t kQwenVocab = 151680;
inline constexpr std::int64_t kQwenFirstAdded = 151643;

struct TokenizerLayout {
  std::vector<std::pair<std::string, std::int64_t>> vocab;  // in id order
  std::vector<std::pair<std::string, std::string>> merges;
  std::vector<std::tuple<std::string, std::int64_t, bool>> added;
  std::int64_t id(std::string_view content) const {
    for (const auto& [c, i, s] : added)
      if (c == content) return i;
    return -1;
  }
};

// `n_merges` trained merges over the 256 byte symbols, then the added tokens, within `vocab_size`.
Expected<TokenizerLayout> tokenizer_layout(int n_merges, std::int64_t vocab_size);

}  // namespace edgevla::model::groot
