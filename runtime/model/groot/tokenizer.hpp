// The prompt tokenizer of GR00T N1.6 (notes/groot-n16.md §2, §8): Qwen's byte-level BPE, read
// from the tokenizer files of the checkpoint's Eagle folder (tokenizer.json, or vocab.json +
// merges.txt + added_tokens.json), and the fixed chat prompt GR00T builds around the
// instruction and the image tokens.
//
// Encoding follows the Hugging Face tokenizer files:
//   1. added tokens (every entry, special or not) are split out of the raw text first,
//      leftmost and longest at a position;
//   2. the other segments are NFC-normalised (when the files say so; Qwen2's slow-tokenizer
//      files always do) with ICU;
//   3. pre-tokenised by the split regex (PCRE2, UTF + Unicode properties; `\s` means Unicode
//      White_Space as in the Oniguruma engine the files are written for);
//   4. each piece's UTF-8 bytes are mapped through GPT-2's bytes-to-unicode table and merged
//      by BPE: the adjacent pair of lowest merge rank, all of its occurrences, until none is
//      left. Pieces are cached.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/core/status.hpp"

namespace edgevla::model::groot {

class Tokenizer final {
 public:
  // `path` is a tokenizer.json file, or a folder holding tokenizer.json or else vocab.json +
  // merges.txt (+ added_tokens.json). Missing, truncated or malformed files, and settings
  // this tokenizer does not implement, are errors naming the file and what to do.
  static Expected<Tokenizer> load(const std::string& path);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // Token ids of `text` (no BOS/EOS: Qwen adds none). Text that is not valid UTF-8 is an
  // error giving the byte offset. Safe to call from several threads.
  Expected<std::vector<std::int32_t>> encode(std::string_view text) const;
  // The text of `ids`: added tokens as their content, the rest as bytes, UTF-8 decoded with
  // each invalid sequence replaced by U+FFFD (Qwen's errors="replace"). An id outside the
  // vocabulary is an error.
  Expected<std::string> decode(std::span<const std::int32_t> ids) const;

  // The pieces the split regex cuts `text` into (after the added-token split and
  // normalisation), for tests and diagnostics.
  Expected<std::vector<std::string>> pre_tokenize(std::string_view text) const;

  // Id of an added token or vocabulary symbol given by its content ("<|im_start|>"); not_found
  // names the file.
  Expected<std::int32_t> token_id(std::string_view content) const;
  // One past the largest id (vocabulary and added tokens).
  std::int32_t vocab_size() const;
  // The file(s) it was loaded from, for messages.
  const std::string& source() const;

 private:
  struct Impl;
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// GR00T's instruction cleaning (formalize_language): lower-cased with Unicode full case mapping
// (as Python's str.lower), then every character that is neither a word character (letter,
// number, '_') nor whitespace (Python's str.isspace) removed. Invalid UTF-8 is an error.
Expected<std::string> formalize_language(std::string_view instruction);

// The chat text GR00T feeds the tokenizer for one sample (Qwen's format as the Eagle processor
// renders it, with each image placeholder expanded): the default system turn, then the user
// turn holding the instruction followed, per view k (1-based), by
// "<image k><img>" + n_k x "<IMG_CONTEXT>" + "</img>", closed by "<|im_end|>\n"; no generation
// prompt. `tokens_per_view[k]` is view k's image token count.
std::string render_prompt(std::string_view instruction, std::span<const int> tokens_per_view);

}  // namespace edgevla::model::groot
