// libFuzzer target for pi0's prompt tokenizer (runtime/model/pi0/tokenizer.cpp): prompt
// cleaning, pi0.5's state discretization and prompt format, SentencePiece encoding, padding
// and truncation to the token budget.
//
// The tokenizer is the one `edgevla model init` puts into a generated checkpoint
// (train_tokenizer over generated_corpus(), 1000 pieces), trained once into a scratch folder
// when the fuzzer starts. An input is: byte 0 the token budget (1 + byte % 64), byte 1 the
// number of state values n (byte % 9; 0: pi0's format without state), then n little-endian
// doubles (any bit pattern: NaN, Inf, subnormals), then the prompt (arbitrary bytes, not
// necessarily UTF-8). Properties: no crash, hang, leak or UB; a finite state always encodes
// and a non-finite one is refused with a message; the result has exactly max_len tokens and
// mask entries, `length` real tokens led by BOS, every id inside the vocabulary, and
// truncated == (full_length > max_len); a cleaned prompt holds no '_' or newline.
//
// Seeds (tests/fuzz/corpus/pi0_tokenizer/): robot instructions with and without state,
// blank and non-ASCII prompts, long prompts that truncate.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "runtime/model/pi0/tokenizer.hpp"
#include "tests/fuzz/fuzz_util.hpp"

namespace {

using namespace edgevla;
constexpr const char* kTarget = "pi0_tokenizer_fuzzer";

model::Tokenizer* g_tokenizer = nullptr;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  static fuzz::ScratchDir dir(kTarget);
  const std::string path = (dir.path() / "tokenizer.model").string();
  const Status st = model::train_tokenizer(model::generated_corpus(), 1000, path);
  if (!st.is_ok()) {
    std::fprintf(stderr, "%s: cannot train the tokenizer: %s\n", kTarget, st.to_string().c_str());
    std::abort();
  }
  auto tok = model::Tokenizer::load(path);
  if (!tok) {
    std::fprintf(stderr, "%s: cannot load the tokenizer: %s\n", kTarget, tok.status().to_string().c_str());
    std::abort();
  }
  g_tokenizer = new model::Tokenizer(std::move(*tok));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const int max_len = 1 + data[0] % 64;
  std::size_t n = data[1] % 9;
  std::size_t pos = 2;
  n = std::min(n, (size - pos) / sizeof(double));
  std::vector<double> state(n);
  if (n > 0) std::memcpy(state.data(), data + pos, n * sizeof(double));
  pos += n * sizeof(double);
  const std::string_view prompt = fuzz::as_text(data + pos, size - pos);

  // openpi's order (strip, then '_' and '\n' become spaces) is kept, so cleaning twice may
  // strip more; once cleaned, no '_' or '\n' is left.
  const std::string cleaned = model::Tokenizer::clean_prompt(prompt);
  FUZZ_CHECK(cleaned.find_first_of("_\n") == std::string::npos, cleaned);
  FUZZ_CHECK(cleaned.size() <= prompt.size(), "");

  bool finite = true;
  for (double x : state) finite = finite && std::isfinite(x);
  std::optional<std::span<const double>> with_state;
  if (data[1] % 9 != 0) with_state = std::span<const double>(state);
  auto r = g_tokenizer->encode(prompt, with_state, max_len);
  if (!r) {
    FUZZ_CHECK(!finite && !r.status().message().empty(), r.status().to_string());
    return 0;
  }
  FUZZ_CHECK(finite, "a non-finite state was written into the prompt");
  FUZZ_CHECK(r->tokens.size() == static_cast<std::size_t>(max_len), "");
  FUZZ_CHECK(r->mask.size() == static_cast<std::size_t>(max_len), "");
  FUZZ_CHECK(r->length >= 1 && r->length <= max_len, "");
  FUZZ_CHECK(r->length == std::min(r->full_length, max_len), "");
  FUZZ_CHECK(r->truncated == (r->full_length > max_len), "");
  FUZZ_CHECK(r->tokens[0] == g_tokenizer->bos_id(), "");
  const int vocab = g_tokenizer->vocab_size();
  for (int i = 0; i < max_len; ++i) {
    const auto u = static_cast<std::size_t>(i);
    FUZZ_CHECK(r->tokens[u] >= 0 && r->tokens[u] < vocab, std::to_string(r->tokens[u]));
    FUZZ_CHECK(r->mask[u] == (i < r->length ? 1 : 0), "");
  }
  auto ids = g_tokenizer->encode_text(prompt);
  FUZZ_CHECK(ids.has_value(), ids.status().to_string());
  for (int id : *ids) FUZZ_CHECK(id >= 0 && id < vocab, std::to_string(id));
  return 0;
}
