// The prompt tokenizer of pi0 / pi0.5 (docs/model.md §9.5): a SentencePiece model (PaliGemma's
// for real checkpoints, a small trained one for generated checkpoints, docs/checkpoint.md §4),
// prompt cleaning, the pi0.5 state discretization and the two prompt formats, padded or
// truncated to the model's token budget.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/core/status.hpp"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace edgevla::model {

struct TokenizedPrompt {
  std::vector<std::int32_t> tokens;  // max_len ids; padding is 0
  std::vector<std::uint8_t> mask;    // 1 for the `length` real tokens, then 0
  int length = 0;                    // real tokens kept (<= max_len)
  int full_length = 0;               // tokens the prompt needs before truncation
  bool truncated = false;            // full_length > max_len: the end of the prompt was cut
};

class Tokenizer final {
 public:
  // Loads a SentencePiece model file. A missing or corrupt file is an error naming the path.
  static Expected<Tokenizer> load(const std::string& model_path);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // openpi's cleaning: strip leading/trailing whitespace, '_' and '\n' become spaces. No
  // lowercasing.
  static std::string clean_prompt(std::string_view prompt);
  // pi0.5's state bins (numpy digitize over 256 bins of [-1, 1)): -1 below -1, else
  // min(floor(x * 128) + 128, 255). (That is model.md's floor((x + 1) * 128), computed
  // without rounding x + 1, which would put tiny negative values into bin 128 instead of
  // 127.) NaN and Inf are an error: the state must be checked before it gets here.
  static Expected<std::vector<int>> discretize_state(std::span<const double> normalized);
  // "Task: {cleaned}, State: {bins joined by ' '};\nAction: "
  static std::string pi05_prompt(std::string_view cleaned, std::span<const int> bins);

  // Plain SentencePiece ids of `text` (no BOS, no cleaning).
  Expected<std::vector<int>> encode_text(std::string_view text) const;

  // The model input for `prompt`, `max_len` tokens long:
  //   no state (pi0, or pi0.5 without discrete_state_input): [BOS] + ids(cleaned) + ids("\n");
  //   state given (pi0.5): [BOS] + ids(pi05_prompt(cleaned, discretize_state(state))).
  // `state` is the normalized, unpadded state, in float64 as openpi computes it. Longer
  // results keep their first max_len tokens and say `truncated`; the caller decides whether
  // that is acceptable.
  Expected<TokenizedPrompt> encode(std::string_view prompt,
                                   std::optional<std::span<const double>> state,
                                   int max_len) const;

  int vocab_size() const;
  int bos_id() const;
  const std::string& path() const { return path_; }

 private:
  Tokenizer(std::unique_ptr<sentencepiece::SentencePieceProcessor> sp, std::string path);
  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
  std::string path_;
};

// Trains a small SentencePiece model in process and writes it to `model_path` (for generated
// checkpoints): BPE, pad 0 / EOS 1 / BOS 2 / unknown 3, "\n" a user-defined piece, byte
// fallback, identity normalization, whitespace kept as given, no dummy prefix, vocab_size a
// soft limit. Deterministic: one thread and a fixed seed, so one corpus gives one file.
Status train_tokenizer(const std::vector<std::string>& corpus_lines, int vocab_size,
                       const std::string& model_path);

// A corpus covering what the demo and the tests tokenize: robot instructions, the numbers
// -1..255, and both prompt templates filled with instructions and state bins. Fixed content.
std::vector<std::string> generated_corpus();

}  // namespace edgevla::model
