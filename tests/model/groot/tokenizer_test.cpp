// The groot tokenizer against the NumPy reference's (tests/reference/groot/bpe_reference.py and
// groot_numpy.py, run by tokenizer_oracle.py): token ids, pre-tokenizer pieces and decoding of
// varied text through a tiny generated checkpoint's tokenizer.json, the same folder's
// vocab.json + merges.txt, and the full-size synthetic tokenizer (added tokens at Qwen's real
// ids); the GR00T prompt and its fixed ids (notes/groot-n16.md §8); the errors for broken files
// and bad input.
#include "runtime/model/groot/tokenizer.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/model/preprocess_test_util.hpp"

namespace edgevla::model::groot {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using model::test::ScratchDir;

std::string reference_dir() { return edgevla::testing::source_dir() + "/tests/reference/groot"; }

// Text the tokenizer has to get right: each line is one case. Every one of them is already NFC
// except those in kDecomposed.
std::vector<std::string> texts() {
  using namespace std::string_literals;
  std::vector<std::string> t;
  t.push_back("");
  t.push_back("pick the pear from the counter and place it in the plate");
  t.push_back(
      "It's done; they're ready; we've checked; I'm sure; you'll see. IT'S DONE. 'S 'T 'Ll");
  // U+017F (long s) folds to s in the contractions.
  t.push_back(
      "it\xC5\xBF long s: it'\xC5\xBF and it'\xC5\xBF"
      "elf, don't'll ''s '");
  // Arabic-Indic digits, 1/5, Roman XII.
  t.push_back(
      "1234567890 3.14159 -42 1e-5 x2y abc123def \xD9\xA3\xD9\xA4 \xE2\x85\x95 \xE2\x85\xAB");
  t.push_back("tabs\tand  double   spaces    \t \n\n\n  trailing   ");
  t.push_back("line1\nline2\r\nline3\r\r\n\n  indented\n\t\n");
  t.push_back("   ");
  t.push_back("\n");
  // NBSP, em space, NEL, U+001C, ideographic space, narrow NBSP.
  t.push_back(
      "a\xC2\xA0"
      "b\xE2\x80\x83"
      "c\xC2\x85"
      "d\x1C"
      "e\xE3\x80\x80"
      "f \xE2\x80\xAF g");
  // NEL runs, U+180E (not White_Space since Unicode 6.3), zero-width space, BOM.
  t.push_back("x\xC2\x85\xC2\x85y \xE1\xA0\x8E\xE1\xA0\x8Ez \xE2\x80\x8B\xE2\x80\x8B\xEF\xBB\xBFw");
  // 机器人拿起桌子，然后。 ロボットは赤い 로봇이 Робот
  t.push_back(
      "\xE6\x9C\xBA\xE5\x99\xA8\xE4\xBA\xBA\xE6\x8B\xBF\xE8\xB5\xB7\xE6\xA1\x8C\xE5\xAD\x90"
      "\xEF\xBC\x8C\xE7\x84\xB6\xE5\x90\x8E\xE3\x80\x82");
  t.push_back(
      "\xE3\x83\xAD\xE3\x83\x9C\xE3\x83\x83\xE3\x83\x88\xE3\x81\xAF\xE8\xB5\xA4\xE3\x81\x84");
  t.push_back("\xEB\xA1\x9C\xEB\xB4\x87\xEC\x9D\xB4 \xD0\xA0\xD0\xBE\xD0\xB1\xD0\xBE\xD1\x82");
  // Emoji: single, with a skin tone, a ZWJ family, a flag.
  t.push_back(
      "\xF0\x9F\xA4\x96 robot \xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD family "
      "\xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x91\xA7 flag "
      "\xF0\x9F\x87\xA9\xF0\x9F\x87\xAA");
  t.push_back(
      "Il robot prend la pomme \xC3\xA0 c\xC3\xB4t\xC3\xA9 de l'\xC3\xA9vier. "
      "Caf\xC3\xA9 na\xC3\xAFve r\xC3\xA9sum\xC3\xA9");
  t.push_back(
      "Der Roboter \xC3\xB6"
      "ffnet die Schublade. STRA\xC3\x9F"
      "E \xE1\xBA\x9E");
  // Added tokens inside text, partial ones, repeats.
  t.push_back("<|im_start|>user\nhello<|im_end|>\n<IMG_CONTEXT><IMG_CONTEXT></img>");
  t.push_back("text<|im_start|>inside<img>word</img>and <tool_call> non-special <think>x</think>");
  t.push_back("<|im_start <|im_end|<|im_end|> <img<img> <|endoftext|><|endoftext|>");
  t.push_back(
      "(a, b), [x, y, z], {key: value}, a/b, 50%, #3, @home, $5, &, *... !!!??? --> <image 1>");
  t.push_back("\x01\x02\x7F control and a\0b nul"s);
  // Combining marks with nothing to compose with.
  t.push_back("\xCC\x81start \xC3\xA9\xCC\x81");
  t.push_back("I'M \xF0\x9F\xA4\x96'S A ROBOT'LL");
  t.push_back(std::string(3000, ' ') + "x" + std::string(40, 'a') + std::string(2000, '\n') + "y");
  // A long text of many words: the cache and long inputs.
  std::string long_text;
  for (int i = 0; i < 200; ++i) {
    long_text +=
        "Put the cup number " + std::to_string(i) + " on the plate, then it's the bowl's turn.\n";
  }
  t.push_back(long_text);
  return t;
}

// Decomposed text and its NFC form, written out by hand.
const std::vector<std::pair<std::string, std::string>> kDecomposed = {
    {"Cafe\xCC\x81 nai\xCC\x88ve", "Caf\xC3\xA9 na\xC3\xAFve"},
    {"\xE2\x84\xA6 ohm, \xE2\x84\xAB angstrom", "\xCE\xA9 ohm, \xC3\x85 angstrom"},
    {"A\xCC\x8A"
     "ngstro\xCC\x88m",
     "\xC3\x85ngstr\xC3\xB6m"},
    // x + dot below (ccc 220) + dot above (230): x composes with the dot above past the other.
    {"e\xCC\x81\xCC\x81 x\xCC\xA3\xCC\x87", "\xC3\xA9\xCC\x81 \xE1\xBA\x8B\xCC\xA3"},
};

std::vector<std::string> instructions() {
  return {
      "pick the pear from the counter and place it in the plate",
      "Pick up the RED cube, then put it into the blue bowl!",
      "  Open the drawer...\tslowly\n(please) ",
      // Straße İstanbul ΣΟΦΟΣ (final sigma) café_bar
      "Stra\xC3\x9F"
      "e \xC4\xB0stanbul \xCE\xA3\xCE\x9F\xCE\xA6\xCE\x9F\xCE\xA3 caf\xC3\xA9_bar",
      // 拿起杯子！🤖 and U+001C (Python's \s, not White_Space)
      "\xE6\x8B\xBF\xE8\xB5\xB7\xE6\x9D\xAF\xE5\xAD\x90\xEF\xBC\x81 \xF0\x9F\xA4\x96 x\x1Cy",
      "",
  };
}

std::vector<std::vector<int>> views() { return {{81}, {4, 2}, {1, 3, 2}}; }

class GrootTokenizerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<ScratchDir>("groot_tokenizer");
    const std::string log = *dir_ / "setup.log";
    const std::string py = model::test::kPython;
    // A tiny checkpoint as the reference writes it; its Eagle folder holds the tokenizer files.
    ASSERT_EQ(model::test::run_command(py + " " + reference_dir() +
                                           "/make_checkpoint.py --config tiny --dtype f32 --out " +
                                           model::test::shell_quote(*dir_ / "tiny"),
                                       log),
              0)
        << model::test::read_file(log);
    paths_["tiny"] = *dir_ / "tiny/Eagle-Block2A-2B-v2";
    // The same tokenizer as Qwen2Tokenizer's slow files only.
    paths_["tiny_slow"] = *dir_ / "tiny_slow";
    fs::create_directories(paths_["tiny_slow"]);
    for (const char* f : {"vocab.json", "merges.txt", "added_tokens.json"}) {
      fs::copy_file(fs::path(paths_["tiny"]) / f, fs::path(paths_["tiny_slow"]) / f);
    }
    // The full-size synthetic tokenizer (added tokens at 151643.., reserved entries between).
    paths_["full"] = *dir_ / "full";
    const std::string write_full =
        "import sys; sys.path.insert(0, sys.argv[1]); import tokenizer_files, groot_configs; "
        "tokenizer_files.write(sys.argv[2], groot_configs.get('full'))";
    ASSERT_EQ(model::test::run_command(py + " -c " + model::test::shell_quote(write_full) + " " +
                                           reference_dir() + " " +
                                           model::test::shell_quote(paths_["full"]),
                                       log),
              0)
        << model::test::read_file(log);

    json in;
    in["tokenizers"] = paths_;
    in["texts"] = texts();
    for (const auto& [decomposed, composed] : kDecomposed) in["texts"].push_back(decomposed);
    in["instructions"] = instructions();
    in["views"] = views();
    model::test::write_file(*dir_ / "in.json", in.dump());
    ASSERT_EQ(model::test::run_command(py + " " + edgevla::testing::source_dir() +
                                           "/tests/model/groot/tokenizer_oracle.py " +
                                           model::test::shell_quote(*dir_ / "in.json") + " " +
                                           model::test::shell_quote(*dir_ / "out.json"),
                                       log),
              0)
        << model::test::read_file(log);
    oracle_ = json::parse(model::test::read_file(*dir_ / "out.json"));
  }
  static void TearDownTestSuite() { dir_.reset(); }

  static Tokenizer load(const std::string& name) {
    auto tok = Tokenizer::load(paths_.at(name));
    EXPECT_TRUE(tok.has_value()) << tok.status().to_string();
    return std::move(tok).value();
  }

  static std::unique_ptr<ScratchDir> dir_;
  static std::map<std::string, std::string> paths_;
  static json oracle_;
};
std::unique_ptr<ScratchDir> GrootTokenizerTest::dir_;
std::map<std::string, std::string> GrootTokenizerTest::paths_;
json GrootTokenizerTest::oracle_;

std::vector<std::string> all_texts() {
  std::vector<std::string> t = texts();
  for (const auto& [decomposed, composed] : kDecomposed) t.push_back(decomposed);
  return t;
}

std::string show(const std::string& s) { return json(s).dump(); }

TEST_F(GrootTokenizerTest, IdsEqualTheReference) {
  const std::vector<std::string> t = all_texts();
  for (const char* name : {"tiny", "tiny_slow", "full"}) {
    SCOPED_TRACE(name);
    const Tokenizer tok = load(name);
    const json& want = oracle_["tokenizers"][name]["ids"];
    ASSERT_EQ(want.size(), t.size());
    for (std::size_t i = 0; i < t.size(); ++i) {
      auto ids = tok.encode(t[i]);
      ASSERT_TRUE(ids.has_value()) << ids.status().to_string();
      EXPECT_EQ(*ids, want[i].get<std::vector<std::int32_t>>())
          << "text " << i << ": " << show(t[i]);
    }
    // The merges did something: the instruction the synthetic BPE was trained on takes far
    // fewer ids than bytes.
    auto ids = tok.encode(t[1]);
    ASSERT_TRUE(ids.has_value());
    EXPECT_LT(ids->size() * 3, t[1].size());
  }
}

TEST_F(GrootTokenizerTest, PiecesEqualTheReference) {
  const std::vector<std::string> t = all_texts();
  const Tokenizer tok = load("tiny");
  const json& want = oracle_["tokenizers"]["tiny"]["pieces"];
  for (std::size_t i = 0; i < t.size(); ++i) {
    auto pieces = tok.pre_tokenize(t[i]);
    ASSERT_TRUE(pieces.has_value()) << pieces.status().to_string();
    EXPECT_EQ(*pieces, want[i].get<std::vector<std::string>>())
        << "text " << i << ": " << show(t[i]);
  }
}

TEST_F(GrootTokenizerTest, SplitsByHand) {
  // A few splits worked out from the regex by hand, independent of the reference.
  const Tokenizer tok = load("tiny");
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"It's", {"It", "'s"}},
      {"IT'S we'Ve", {"IT", "'S", " we", "'Ve"}},
      {"x  y", {"x", " ", " y"}},
      {"a\n\nb", {"a", "\n\n", "b"}},
      {"2026!", {"2", "0", "2", "6", "!"}},
      {" ?!\n", {" ?!\n"}},
      {"a<|im_end|>b", {"a", "<|im_end|>", "b"}},
      {"end  ", {"end", "  "}},
      // NEL is \s: a space run, then a letter's prefix.
      {"a\xC2\x85\xC2\x85"
       "b",
       {"a", "\xC2\x85",
        "\xC2\x85"
        "b"}},
      // U+180E is not White_Space since Unicode 6.3 (PCRE2's own \s still takes it): a symbol run.
      {"a\xE1\xA0\x8E\xE1\xA0\x8E"
       "b",
       {"a", "\xE1\xA0\x8E\xE1\xA0\x8E", "b"}},
  };
  for (const auto& [text, want] : cases) {
    auto got = tok.pre_tokenize(text);
    ASSERT_TRUE(got.has_value()) << got.status().to_string();
    EXPECT_EQ(*got, want) << show(text);
  }
}

TEST_F(GrootTokenizerTest, DecodeRoundTrips) {
  for (const char* name : {"tiny", "tiny_slow", "full"}) {
    SCOPED_TRACE(name);
    const Tokenizer tok = load(name);
    for (const std::string& text : texts()) {
      auto ids = tok.encode(text);
      ASSERT_TRUE(ids.has_value());
      auto back = tok.decode(*ids);
      ASSERT_TRUE(back.has_value()) << back.status().to_string();
      EXPECT_EQ(*back, text);
    }
    for (const auto& [decomposed, composed] : kDecomposed) {
      auto ids = tok.encode(decomposed);
      ASSERT_TRUE(ids.has_value());
      auto back = tok.decode(*ids);
      ASSERT_TRUE(back.has_value());
      EXPECT_EQ(*back, composed) << "NFC of " << show(decomposed);
    }
  }
}

TEST_F(GrootTokenizerTest, DecodeReplacesInvalidBytesLikePython) {
  for (const char* name : {"tiny", "full"}) {
    SCOPED_TRACE(name);
    const Tokenizer tok = load(name);
    for (const json& c : oracle_["tokenizers"][name]["decode_cases"]) {
      const auto ids = c["ids"].get<std::vector<std::int32_t>>();
      auto text = tok.decode(ids);
      ASSERT_TRUE(text.has_value()) << text.status().to_string();
      EXPECT_EQ(*text, c["text"].get<std::string>()) << c["ids"].dump();
    }
  }
}

TEST_F(GrootTokenizerTest, AddedTokensKeepTheirIds) {
  const Tokenizer full = load("full");
  // Qwen's ids (notes/groot-n16.md §2): the synthetic full tokenizer keeps them.
  const std::vector<std::pair<std::string, std::int32_t>> ids = {
      {"<|endoftext|>", 151643}, {"<|im_start|>", 151644}, {"<|im_end|>", 151645},
      {"<IMG_CONTEXT>", 151669}, {"<img>", 151670},        {"</img>", 151671}};
  for (const auto& [content, id] : ids) {
    auto got = full.token_id(content);
    ASSERT_TRUE(got.has_value()) << content;
    EXPECT_EQ(*got, id) << content;
    auto enc = full.encode(content);
    ASSERT_TRUE(enc.has_value());
    EXPECT_EQ(*enc, std::vector<std::int32_t>{id}) << content;
  }
  EXPECT_EQ(full.vocab_size(), 151680);
  // Single bytes keep Qwen's ids: '<' 27, '>' 29, ' ' 220, '\n' 198, '1' 16.
  auto enc = full.encode("<");
  ASSERT_TRUE(enc.has_value());
  EXPECT_EQ(*enc, std::vector<std::int32_t>{27});
  EXPECT_FALSE(full.token_id("<|not_a_token|>").has_value());
}

TEST_F(GrootTokenizerTest, PromptEqualsTheReference) {
  const std::vector<std::string> instr = instructions();
  const json& formalized = oracle_["formalized"];
  for (std::size_t i = 0; i < instr.size(); ++i) {
    auto f = formalize_language(instr[i]);
    ASSERT_TRUE(f.has_value()) << f.status().to_string();
    EXPECT_EQ(*f, formalized[i].get<std::string>()) << show(instr[i]);
  }
  for (const char* name : {"tiny", "full"}) {
    SCOPED_TRACE(name);
    const Tokenizer tok = load(name);
    for (const json& p : oracle_["prompts"][name]) {
      auto f = formalize_language(p["instruction"].get<std::string>());
      ASSERT_TRUE(f.has_value());
      const auto v = p["views"].get<std::vector<int>>();
      const std::string text = render_prompt(*f, v);
      EXPECT_EQ(text, p["text"].get<std::string>());
      auto ids = tok.encode(text);
      ASSERT_TRUE(ids.has_value());
      EXPECT_EQ(*ids, p["ids"].get<std::vector<std::int32_t>>()) << show(text);
    }
  }
}

TEST_F(GrootTokenizerTest, PromptHasTheFixedIds) {
  // notes/groot-n16.md §8: prefix [151644, system, 198, You are a helpful assistant ., 151645,
  // 198, 151644, user, 198]; `<image k>` = [27, image, 220, digit, 29]; suffix [151645, 198].
  const Tokenizer tok = load("full");
  const std::vector<int> per_view = {5, 3};
  auto ids = tok.encode(render_prompt("pick the pear", per_view));
  ASSERT_TRUE(ids.has_value());
  const std::vector<std::int32_t>& t = *ids;
  ASSERT_GE(t.size(), 14u);
  EXPECT_EQ(t[0], 151644);
  EXPECT_EQ(t[2], 198);
  EXPECT_EQ(t[9], 151645);
  EXPECT_EQ(t[10], 198);
  EXPECT_EQ(t[11], 151644);
  EXPECT_EQ(t[13], 198);
  EXPECT_EQ(std::vector<std::int32_t>(t.end() - 2, t.end()),
            (std::vector<std::int32_t>{151645, 198}));
  auto image = tok.token_id("image");
  ASSERT_TRUE(image.has_value()) << "the synthetic vocabulary learns 'image' as one symbol";
  std::size_t view = 0;
  for (std::size_t i = 0; i + 4 < t.size(); ++i) {
    if (t[i] != 27 || t[i + 1] != *image) continue;
    ASSERT_LT(view, per_view.size());
    EXPECT_EQ(t[i + 2], 220);
    EXPECT_EQ(t[i + 3], 16 + static_cast<std::int32_t>(view));
    EXPECT_EQ(t[i + 4], 29);
    EXPECT_EQ(t[i + 5], 151670);
    for (int k = 0; k < per_view[view]; ++k)
      EXPECT_EQ(t[i + 6 + static_cast<std::size_t>(k)], 151669);
    EXPECT_EQ(t[i + 6 + static_cast<std::size_t>(per_view[view])], 151671);
    ++view;
  }
  EXPECT_EQ(view, per_view.size());
}

TEST_F(GrootTokenizerTest, FormalizeLanguageByHand) {
  auto f = formalize_language("Pick up the RED cube, please! \xC3\x89t\xC3\xA9_2");
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(*f, "pick up the red cube please \xC3\xA9t\xC3\xA9_2");
  auto bad = formalize_language("abc\xFF");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(GrootTokenizerTest, InvalidUtf8IsAnError) {
  const Tokenizer tok = load("tiny");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"\xFF", "offset 0"},
      {"abc\xE2\x82", "offset 3"},          // truncated sequence
      {"ab\xC0\xAF", "offset 2"},           // overlong '/'
      {"a\xED\xA0\x80", "offset 1"},        // UTF-16 surrogate
      {"ok \xF4\x90\x80\x80", "offset 3"},  // above U+10FFFF
      {"\xE2\x82\xAC\x80", "offset 3"},     // stray continuation byte
  };
  for (const auto& [text, where] : cases) {
    auto ids = tok.encode(text);
    ASSERT_FALSE(ids.has_value()) << show(text);
    EXPECT_EQ(ids.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(ids.status().message().find(where), std::string::npos) << ids.status().message();
    EXPECT_NE(ids.status().message().find("UTF-8"), std::string::npos) << ids.status().message();
  }
}

TEST_F(GrootTokenizerTest, DecodeRejectsUnknownIds) {
  const Tokenizer tok = load("full");
  for (std::int32_t id : {-1, 151680, 1 << 30}) {
    const std::vector<std::int32_t> ids = {27, id};
    auto text = tok.decode(ids);
    ASSERT_FALSE(text.has_value()) << id;
    EXPECT_EQ(text.status().code(), StatusCode::kOutOfRange);
    EXPECT_NE(text.status().message().find(std::to_string(id)), std::string::npos);
  }
}

TEST_F(GrootTokenizerTest, ThreadsShareTheCache) {
  const Tokenizer tok = load("tiny");
  const std::vector<std::string> t = texts();
  std::vector<std::vector<std::int32_t>> serial;
  for (const auto& s : t) serial.push_back(*tok.encode(s));
  std::vector<int> mismatches(2, 0);
  std::vector<std::thread> threads;
  for (int k = 0; k < 2; ++k) {
    threads.emplace_back([&, k] {
      for (int round = 0; round < 20; ++round) {
        for (std::size_t i = 0; i < t.size(); ++i) {
          auto ids = tok.encode(t[(i + static_cast<std::size_t>(k) * 7) % t.size()]);
          if (!ids.has_value() || *ids != serial[(i + static_cast<std::size_t>(k) * 7) % t.size()])
            ++mismatches[static_cast<std::size_t>(k)];
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches, (std::vector<int>{0, 0}));
}

// --- broken files
// ------------------------------------------------------------------------------------

class GrootTokenizerFilesTest : public GrootTokenizerTest {
 protected:
  // A folder holding `files` (name -> content).
  std::string folder(const std::string& tag, const std::map<std::string, std::string>& files) {
    const std::string d = *dir_ / ("broken_" + tag);
    fs::remove_all(d);
    fs::create_directories(d);
    for (const auto& [name, content] : files) model::test::write_file(d + "/" + name, content);
    return d;
  }
  std::string tiny_file(const std::string& name) {
    return model::test::read_file(paths_.at("tiny") + "/" + name);
  }

  // Loading `path` fails with `code` and a message naming `names` (each must appear).
  void expect_error(const std::string& path, StatusCode code,
                    const std::vector<std::string>& names) {
    auto tok = Tokenizer::load(path);
    ASSERT_FALSE(tok.has_value()) << path;
    EXPECT_EQ(tok.status().code(), code) << tok.status().to_string();
    for (const auto& n : names)
      EXPECT_NE(tok.status().message().find(n), std::string::npos) << tok.status().message();
    // Every message says what to do.
    EXPECT_NE(tok.status().message().find("Eagle-Block2A-2B-v2"), std::string::npos)
        << tok.status().message();
  }
};

TEST_F(GrootTokenizerFilesTest, MalformedJson) {
  const std::string d =
      folder("malformed", {{"tokenizer.json", "{\"model\": {\"vocab\": {\"a\": 1,,}}"}});
  expect_error(d, StatusCode::kDataLoss, {d + "/tokenizer.json", "not valid JSON"});
}

TEST_F(GrootTokenizerFilesTest, TruncatedFile) {
  const std::string full = tiny_file("tokenizer.json");
  const std::string d = folder("truncated", {{"tokenizer.json", full.substr(0, full.size() / 2)}});
  expect_error(d, StatusCode::kDataLoss, {d + "/tokenizer.json", "truncated"});
  const std::string v = tiny_file("vocab.json");
  const std::string s = folder("truncated_slow", {{"vocab.json", v.substr(0, v.size() - 10)},
                                                  {"merges.txt", tiny_file("merges.txt")}});
  expect_error(s, StatusCode::kDataLoss, {s + "/vocab.json", "truncated"});
}

TEST_F(GrootTokenizerFilesTest, MissingMerges) {
  json j = json::parse(tiny_file("tokenizer.json"));
  j["model"].erase("merges");
  const std::string d = folder("no_merges", {{"tokenizer.json", j.dump()}});
  expect_error(d, StatusCode::kDataLoss, {d + "/tokenizer.json", "model.merges"});
  const std::string s = folder("no_merges_txt", {{"vocab.json", tiny_file("vocab.json")}});
  expect_error(s, StatusCode::kNotFound, {s + "/merges.txt"});
}

TEST_F(GrootTokenizerFilesTest, NothingThere) {
  const std::string d = folder("empty", {});
  expect_error(d, StatusCode::kNotFound, {d, "tokenizer.json", "vocab.json"});
  expect_error(d + "/absent", StatusCode::kNotFound, {d + "/absent"});
}

TEST_F(GrootTokenizerFilesTest, BadMergeEntries) {
  std::string merges = tiny_file("merges.txt");
  merges += "onlyone\n";
  const std::string s =
      folder("bad_line", {{"vocab.json", tiny_file("vocab.json")}, {"merges.txt", merges}});
  const auto lines = std::count(merges.begin(), merges.end(), '\n');
  expect_error(s, StatusCode::kDataLoss,
               {s + "/merges.txt", "line " + std::to_string(lines), "onlyone"});

  json j = json::parse(tiny_file("tokenizer.json"));
  j["model"]["merges"].push_back("zzq qqz");
  const std::string d = folder("unknown_symbol", {{"tokenizer.json", j.dump()}});
  expect_error(d, StatusCode::kDataLoss, {"zzq qqz", "vocabulary lacks"});
}

TEST_F(GrootTokenizerFilesTest, IncompleteVocabulary) {
  json j = json::parse(tiny_file("tokenizer.json"));
  j["model"]["vocab"].erase("\xC4\x80");  // the symbol of byte 0x00
  j["model"]["merges"] = json::array();
  const std::string d = folder("no_byte", {{"tokenizer.json", j.dump()}});
  expect_error(d, StatusCode::kDataLoss, {"byte 0x00"});
}

TEST_F(GrootTokenizerFilesTest, UnsupportedSettings) {
  json j = json::parse(tiny_file("tokenizer.json"));
  j["added_tokens"][0]["lstrip"] = true;
  std::string d = folder("lstrip", {{"tokenizer.json", j.dump()}});
  expect_error(d, StatusCode::kInvalidArgument, {"lstrip", "<|endoftext|>"});

  j = json::parse(tiny_file("tokenizer.json"));
  j["model"]["type"] = "WordPiece";
  d = folder("wordpiece", {{"tokenizer.json", j.dump()}});
  expect_error(d, StatusCode::kInvalidArgument, {"WordPiece"});

  j = json::parse(tiny_file("tokenizer.json"));
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(unclosed";
  d = folder("regex", {{"tokenizer.json", j.dump()}});
  expect_error(d, StatusCode::kInvalidArgument, {"PCRE2", "(unclosed"});
}

}  // namespace
}  // namespace edgevla::model::groot
