// libFuzzer target for GR00T's byte-level BPE tokenizer (runtime/model/groot/tokenizer.cpp,
// tokenizer_files.cpp): added-token splitting, NFC normalization, the split regex (PCRE2),
// byte-level BPE and decoding; plus formalize_language and render_prompt.
//
// The tokenizer is the one a generated tiny groot checkpoint carries (tokenizer_layout with
// 300 merges in a 1024-id vocabulary, Qwen's added tokens), written as a tokenizer.json into a
// scratch folder when the fuzzer starts. An input is arbitrary text (not necessarily UTF-8).
// Properties: no crash, hang, leak or UB; invalid UTF-8 is refused with a message, valid UTF-8
// always encodes; every id lies inside the vocabulary and decodes; decoding then encoding
// again reaches a fixed point (decode(encode(decode(encode(x)))) == decode(encode(x)));
// formalize_language and the rendered prompt encode whenever the text is valid UTF-8.
//
// Seeds (tests/fuzz/corpus/groot_tokenizer/): instructions, chat prompts with added tokens,
// non-Latin scripts, combining marks, contractions, whitespace runs, invalid UTF-8.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/model/groot/generator_tokenizer.hpp"
#include "runtime/model/groot/tokenizer.hpp"
#include "runtime/model/groot/tokenizer_files.hpp"
#include "tests/fuzz/fuzz_util.hpp"

namespace {

using namespace edgevla;
using namespace edgevla::model::groot;
using ojson = nlohmann::ordered_json;
constexpr const char* kTarget = "groot_tokenizer_fuzzer";

Tokenizer* g_tokenizer = nullptr;

// tokenizer.json in the layout Hugging Face tokenizers write for Qwen2 (the fields the
// reader looks at).
std::string tokenizer_json(const TokenizerLayout& tok) {
  ojson vocab = ojson::object();
  for (const auto& [s, id] : tok.vocab) vocab[s] = id;
  ojson merges = ojson::array();
  for (const auto& [a, b] : tok.merges) merges.push_back(a + " " + b);
  ojson added = ojson::array();
  for (const auto& [content, id, special] : tok.added) {
    added.push_back({{"id", id}, {"content", content}, {"single_word", false}, {"lstrip", false},
                     {"rstrip", false}, {"normalized", false}, {"special", special}});
  }
  ojson byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false},
                      {"use_regex", false}};
  ojson split = {{"type", "Split"},
                 {"pattern", {{"Regex", std::string(tokenizer_files::kQwen2SplitRegex)}}},
                 {"behavior", "Isolated"},
                 {"invert", false}};
  ojson j = {{"version", "1.0"},
             {"added_tokens", added},
             {"normalizer", {{"type", "NFC"}}},
             {"pre_tokenizer", {{"type", "Sequence"}, {"pretokenizers", ojson::array({split, byte_level})}}},
             {"decoder", byte_level},
             {"model",
              {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", ""},
               {"end_of_word_suffix", ""}, {"fuse_unk", false}, {"byte_fallback", false},
               {"ignore_merges", false}, {"vocab", vocab}, {"merges", merges}}}};
  return j.dump(1);
}

Expected<std::string> round_trip(std::string_view text) {
  EDGEVLA_ASSIGN_OR_RETURN(std::vector<std::int32_t> ids, g_tokenizer->encode(text));
  for (std::int32_t id : ids) FUZZ_CHECK(id >= 0 && id < g_tokenizer->vocab_size(), std::to_string(id));
  return g_tokenizer->decode(ids);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  static fuzz::ScratchDir dir(kTarget);
  auto layout = tokenizer_layout(300, 1024);
  if (!layout) {
    std::fprintf(stderr, "%s: %s\n", kTarget, layout.status().to_string().c_str());
    std::abort();
  }
  const std::string path = dir.write("tokenizer.json", tokenizer_json(*layout));
  auto tok = Tokenizer::load(path);
  if (!tok) {
    std::fprintf(stderr, "%s: cannot load the tokenizer: %s\n", kTarget, tok.status().to_string().c_str());
    std::abort();
  }
  g_tokenizer = new Tokenizer(std::move(*tok));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = fuzz::as_text(data, size);
  auto once = round_trip(text);
  auto formal = formalize_language(text);
  if (!once) {
    FUZZ_CHECK(!once.status().message().empty(), "");
    if (!formal) FUZZ_CHECK(!formal.status().message().empty(), "");
    return 0;
  }
  auto twice = round_trip(*once);
  FUZZ_CHECK(twice.has_value(), twice.status().to_string());
  FUZZ_CHECK(*twice == *once, "decode(encode(x)) is not a fixed point");
  FUZZ_CHECK(formal.has_value(), formal.status().to_string());
  const int views[] = {1, 3};
  auto prompt = g_tokenizer->encode(render_prompt(*formal, views));
  FUZZ_CHECK(prompt.has_value(), prompt.status().to_string());
  return 0;
}
