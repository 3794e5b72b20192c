// The prompt tokenizer: the C++ wrapper against Python sentencepiece + NumPy
// (tests/reference/preprocess_ref.py) for both prompt formats, on a model trained in process
// (train_tokenizer, what generated checkpoints carry) and one trained with the spm_train CLI;
// the state bins at their edges; prompt cleaning; training determinism.
#include "runtime/model/pi0/tokenizer.hpp"

#include <gtest/gtest.h>
#include <sentencepiece_processor.h>

#include <cmath>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>

#include "tests/model/preprocess_test_util.hpp"

namespace edgevla::model {
namespace {

using test::ScratchDir;

class TokenizerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<ScratchDir>("tokenizer");
    generated_ = *dir_ / "generated.model";
    ASSERT_OK(train_tokenizer(generated_corpus(), 1024, generated_));

    // A second model from the command-line trainer, with SentencePiece's defaults otherwise
    // (unigram, NFKC normalization, dummy prefix, BOS id 1): the wrapper must follow the
    // model's own settings.
    std::string corpus;
    for (const std::string& line : generated_corpus()) corpus += line + "\n";
    test::write_file(*dir_ / "corpus.txt", corpus);
    cli_ = *dir_ / "cli.model";
    const std::string cmd = "spm_train --input=" + test::shell_quote(*dir_ / "corpus.txt") +
                            " --model_prefix=" + test::shell_quote(*dir_ / "cli") +
                            " --vocab_size=500 --hard_vocab_limit=false --byte_fallback=true"
                            " --num_threads=1 --minloglevel=2 --user_defined_symbols=" +
                            test::shell_quote("\n");
    const std::string log = *dir_ / "spm_train.log";
    ASSERT_EQ(test::run_command(cmd, log), 0) << test::read_file(log);
  }
  static void TearDownTestSuite() { dir_.reset(); }

  static std::unique_ptr<ScratchDir> dir_;
  static std::string generated_, cli_;
};
std::unique_ptr<ScratchDir> TokenizerTest::dir_;
std::string TokenizerTest::generated_;
std::string TokenizerTest::cli_;

struct PromptCase {
  std::string prompt;
  std::optional<std::vector<double>> state;
  int max_len;
};

std::vector<PromptCase> prompt_cases() {
  const double below = std::nextafter(-1.0, -2.0);
  const std::vector<std::vector<double>> states = {
      {0.1, -0.3},
      {-1.0, below, 0.9921875, std::nextafter(0.9921875, 0.0), 1.0, 2.0, -1.5, 1.5},
      {-1e-20, 0.0, -0.5, 0.4999999999, -0.0078125, 7.25, -100.0, 0.75},
  };
  const std::vector<std::string> prompts = {
      "pick up the red cup",
      "  Pick_up the\nblue bowl \n",
      "",
      "\xc2\xa0open the drawer\xc2\xa0\t",  // non-breaking spaces: Python's strip() removes them
      "h\xc3\xa9llo w\xc3\xb6rld \xe2\x9c\x93 \xf0\x9f\xa4\x96",  // not in the corpus: byte fallback
      "tab\tinside and  double  spaces",
      "do_something_else",
  };
  std::vector<PromptCase> cases;
  for (const auto& p : prompts) {
    cases.push_back({p, std::nullopt, 48});
    for (const auto& s : states) cases.push_back({p, s, 200});
  }
  // Truncation in both formats, and padding to a budget just above the length.
  std::string long_prompt;
  for (int i = 0; i < 12; ++i) long_prompt += "put the cup on the table and ";
  cases.push_back({long_prompt, std::nullopt, 48});
  cases.push_back({long_prompt, states[1], 48});
  cases.push_back({"pick up the red cup", std::nullopt, 3});
  cases.push_back({"pick up the red cup", states[0], 4});
  cases.push_back({"open the drawer", states[2], 1});
  return cases;
}

// Encodes every case with the C++ wrapper and with the Python reference; they must agree.
void compare_with_python(const std::string& model, const ScratchDir& dir, const std::string& tag) {
  const std::vector<PromptCase> cases = prompt_cases();
  nlohmann::json j = nlohmann::json::array();
  for (const auto& c : cases) {
    j.push_back({{"prompt", c.prompt},
                 {"state", c.state ? nlohmann::json(*c.state) : nlohmann::json(nullptr)},
                 {"max_len", c.max_len}});
  }
  const std::string in = dir / (tag + "_cases.json"), out = dir / (tag + "_out.json");
  test::write_file(in, j.dump());
  const std::string log = dir / (tag + "_python.log");
  ASSERT_EQ(test::run_command(std::string(test::kPython) + " " +
                                  test::shell_quote(test::reference_script()) + " tokenize " +
                                  test::shell_quote(model) + " " + test::shell_quote(in) + " " +
                                  test::shell_quote(out),
                              log),
            0)
      << test::read_file(log);
  const nlohmann::json want = nlohmann::json::parse(test::read_file(out));
  ASSERT_EQ(want.size(), cases.size());

  auto tok = Tokenizer::load(model);
  ASSERT_TRUE(tok.has_value()) << tok.status().to_string();
  int truncated = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const PromptCase& c = cases[i];
    SCOPED_TRACE(tag + " case " + std::to_string(i) + ": '" + c.prompt + "'" +
                 (c.state ? " with state" : "") + " max_len " + std::to_string(c.max_len));
    std::optional<std::span<const double>> state;
    if (c.state) state = std::span<const double>(*c.state);
    auto got = tok->encode(c.prompt, state, c.max_len);
    ASSERT_TRUE(got.has_value()) << got.status().to_string();
    const auto& w = want[i];
    EXPECT_EQ(got->tokens, w["tokens"].get<std::vector<std::int32_t>>()) << w["pieces"].dump();
    EXPECT_EQ(got->mask, w["mask"].get<std::vector<std::uint8_t>>());
    EXPECT_EQ(got->full_length, w["full_length"].get<int>());
    EXPECT_EQ(got->truncated, got->full_length > c.max_len);
    EXPECT_EQ(got->length, std::min(got->full_length, c.max_len));
    EXPECT_EQ(got->tokens[0], tok->bos_id());
    truncated += got->truncated;
  }
  EXPECT_GE(truncated, 4);  // the truncation cases did truncate
}

TEST_F(TokenizerTest, MatchesPythonSentencepieceOnTheGeneratedModel) {
  compare_with_python(generated_, *dir_, "generated");
}

TEST_F(TokenizerTest, MatchesPythonSentencepieceOnAnSpmTrainModel) {
  compare_with_python(cli_, *dir_, "cli");
}

TEST_F(TokenizerTest, GeneratedModelHasTheDocumentedSpecialPieces) {
  sentencepiece::SentencePieceProcessor sp;
  ASSERT_TRUE(sp.Load(generated_).ok());
  EXPECT_EQ(sp.pad_id(), 0);
  EXPECT_EQ(sp.eos_id(), 1);
  EXPECT_EQ(sp.bos_id(), 2);
  EXPECT_EQ(sp.unk_id(), 3);
  EXPECT_LE(sp.GetPieceSize(), 1024);

  auto tok = Tokenizer::load(generated_);
  ASSERT_TRUE(tok.has_value());
  auto nl = tok->encode_text("\n");
  ASSERT_TRUE(nl.has_value());
  ASSERT_EQ(nl->size(), 1u);  // "\n" is one piece on its own ...
  EXPECT_EQ(sp.IdToPiece((*nl)[0]), "\n");  // the user-defined piece, not a byte
  EXPECT_FALSE(sp.IsByte((*nl)[0]));
  // ... and inside the pi0.5 prompt, where it is tokenized in context.
  const std::vector<double> state = {0.1, -0.3};
  auto p = tok->encode("pick up the cup", std::span<const double>(state), 200);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(std::count(p->tokens.begin(), p->tokens.end(), (*nl)[0]), 1);
  // pi0: [BOS] + text + "\n", padded with 0.
  auto q = tok->encode("pick up the cup", std::nullopt, 48);
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->tokens[0], 2);
  EXPECT_EQ(q->tokens[static_cast<std::size_t>(q->length - 1)], (*nl)[0]);
  EXPECT_EQ(q->tokens[static_cast<std::size_t>(q->length)], 0);
  EXPECT_EQ(q->mask[static_cast<std::size_t>(q->length - 1)], 1);
  EXPECT_EQ(q->mask[static_cast<std::size_t>(q->length)], 0);
  // Byte fallback: no unknown pieces for text outside the corpus.
  auto emoji = tok->encode_text("\xf0\x9f\xa4\x96 Zebra");
  ASSERT_TRUE(emoji.has_value());
  EXPECT_EQ(std::count(emoji->begin(), emoji->end(), sp.unk_id()), 0);
}

TEST_F(TokenizerTest, TrainingIsDeterministic) {
  const std::string again = *dir_ / "again.model";
  ASSERT_OK(train_tokenizer(generated_corpus(), 1024, again));
  EXPECT_EQ(test::read_file(again), test::read_file(generated_));
  // A different corpus gives a different model (the comparison above can fail).
  std::vector<std::string> other = generated_corpus();
  other.resize(other.size() / 2);
  const std::string different = *dir_ / "other.model";
  ASSERT_OK(train_tokenizer(other, 1024, different));
  EXPECT_NE(test::read_file(different), test::read_file(generated_));
  // Too small a vocabulary for byte fallback is an error, not a crash.
  EXPECT_FALSE(train_tokenizer(generated_corpus(), 100, *dir_ / "tiny.model").is_ok());
}

TEST(Tokenizer, DiscretizationEdges) {
  const double eps_below = std::nextafter(-1.0, -2.0);
  const std::vector<double> x = {-1.0, eps_below, 0.9921875, std::nextafter(0.9921875, 0.0),
                                 1.0, 2.0, -1e-20, 0.0, -0.0078125, 0.1, -0.3, -1e300, 1e300};
  auto bins = Tokenizer::discretize_state(x);
  ASSERT_TRUE(bins.has_value());
  // 0.1 -> floor(12.8) + 128 = 140, -0.3 -> floor(-38.4) + 128 = 89 (model.md's example).
  EXPECT_EQ(*bins, (std::vector<int>{0, -1, 255, 254, 255, 255, 127, 128, 127, 140, 89, -1, 255}));
  for (double bad : {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                     -std::numeric_limits<double>::infinity()}) {
    const std::vector<double> v = {0.0, bad};
    auto r = Tokenizer::discretize_state(v);
    ASSERT_FALSE(r.has_value());
    EXPECT_NE(r.status().message().find("state[1]"), std::string::npos) << r.status().message();
  }
  const std::vector<int> b = {140, 89};
  EXPECT_EQ(Tokenizer::pi05_prompt("pick up the cup", b),
            "Task: pick up the cup, State: 140 89;\nAction: ");
}

TEST(Tokenizer, CleanPromptFollowsOpenpi) {
  EXPECT_EQ(Tokenizer::clean_prompt("  Pick_Up the\nCup \t\n"), "Pick Up the Cup");
  EXPECT_EQ(Tokenizer::clean_prompt("a\r\nb"), "a\r b");  // only '\n' is replaced
  EXPECT_EQ(Tokenizer::clean_prompt("\xc2\xa0x\xe3\x80\x80"), "x");  // NBSP, ideographic space
  EXPECT_EQ(Tokenizer::clean_prompt("\xc3\xa9t\xc3\xa9"), "\xc3\xa9t\xc3\xa9");
  EXPECT_EQ(Tokenizer::clean_prompt(" \n "), "");
  EXPECT_EQ(Tokenizer::clean_prompt("___"), "   ");  // replaced after stripping
}

TEST(Tokenizer, LoadErrorsNameThePathAndWhereToPutIt) {
  auto missing = Tokenizer::load("/nonexistent/tokenizer.model");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("/nonexistent/tokenizer.model"), std::string::npos);
  EXPECT_NE(missing.status().message().find("paligemma_tokenizer.model"), std::string::npos);

  ScratchDir dir("tok_corrupt");
  test::write_file(dir / "tokenizer.model", "this is not a protobuf \x01\x02\x03");
  auto corrupt = Tokenizer::load(dir / "tokenizer.model");
  ASSERT_FALSE(corrupt.has_value());
  EXPECT_EQ(corrupt.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(corrupt.status().message().find(dir / "tokenizer.model"), std::string::npos);
}

}  // namespace
}  // namespace edgevla::model
