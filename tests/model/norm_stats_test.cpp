// Norm stats: openpi's file format both ways, finding the file in a checkpoint, and the
// (un)normalization formulas of docs/model.md §9.3 against hand-computed values.
#include "runtime/model/pi0/norm_stats.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/model/preprocess_test_util.hpp"

namespace edgevla::model {
namespace {

using test::read_file;
using test::ScratchDir;
using test::write_file;

// Values exact in binary, so hand-computed results are exact too.
NormStats sample_stats() {
  NormStats s;
  s.state = {{0.5, -1.0, 2.0}, {0.25, 2.0, 0.5}, {-1.0, -3.0, 1.0}, {1.0, 1.0, 3.0}};
  s.actions = {{0.0, 1.0}, {1.0, 4.0}, {}, {}};
  return s;
}

TEST(NormStats, WriteThenLoadRoundTrips) {
  ScratchDir dir("ns_roundtrip");
  NormStats s = sample_stats();
  s.state.mean[0] = 0.1;  // not exact in binary: must survive the text form bit for bit
  s.state.std[2] = 1.0 / 3.0;
  ASSERT_OK(write_norm_stats(s, dir / "norm_stats.json"));
  auto back = load_norm_stats(dir / "norm_stats.json");
  ASSERT_TRUE(back.has_value()) << back.status().to_string();
  EXPECT_EQ(*back, s);
  EXPECT_TRUE(back->state.has_quantiles());
  EXPECT_FALSE(back->actions.has_quantiles());
  // openpi's layout: indent 2, null quantiles.
  const std::string text = read_file(dir / "norm_stats.json");
  EXPECT_NE(text.find("{\n  \"norm_stats\": {\n    \"actions\": {"), std::string::npos) << text;
  EXPECT_NE(text.find("\"q01\": null"), std::string::npos) << text;
}

TEST(NormStats, ReadsOpenpiFilesWithExtraKeysAndNullQuantiles) {
  const std::string text = R"({
  "norm_stats": {
    "state": {"mean": [1, 2.5], "std": [0.5, 1e-3], "q01": null, "q99": null},
    "actions": {"mean": [0], "std": [1], "q01": [-1], "q99": [1], "extra": 3},
    "image": {}
  }
})";
  auto s = parse_norm_stats(text, "mem.json");
  ASSERT_TRUE(s.has_value()) << s.status().to_string();
  EXPECT_EQ(s->state.mean, (std::vector<double>{1.0, 2.5}));
  EXPECT_EQ(s->state.std, (std::vector<double>{0.5, 1e-3}));
  EXPECT_TRUE(s->state.q01.empty());
  EXPECT_EQ(s->actions.q99, (std::vector<double>{1.0}));
}

void expect_error(const std::string& text, const std::string& needle) {
  auto s = parse_norm_stats(text, "stats.json");
  ASSERT_FALSE(s.has_value()) << text;
  EXPECT_NE(s.status().message().find("stats.json"), std::string::npos) << s.status().message();
  EXPECT_NE(s.status().message().find(needle), std::string::npos) << s.status().message();
}

TEST(NormStats, BadFilesAreErrorsNamingTheFileAndKey) {
  expect_error(R"({"norm_stats": {"state": {"mean": [1, 2], "std": [)", "not valid JSON");
  expect_error(R"({"norm_stats": {"state": {"mean": [NaN], "std": [1]}, "actions": {"mean": [0], "std": [1]}}})",
               "NaN");
  expect_error(R"({"norm_stats": {"state": {"mean": [1e999], "std": [1]}, "actions": {"mean": [0], "std": [1]}}})",
               "not valid JSON");
  expect_error(R"({"norm_stats": {"state": {"mean": [1, 2], "std": [1]}, "actions": {"mean": [0], "std": [1]}}})",
               "state.std has 1 entries but mean has 2");
  expect_error(R"({"norm_stats": {"state": {"mean": [1], "std": [1], "q01": [0]}, "actions": {"mean": [0], "std": [1]}}})",
               "only one of q01/q99");
  expect_error(R"({"norm_stats": {"state": {"mean": [1], "std": [1]}}})", "norm_stats.actions is missing");
  expect_error(R"({"norm_stats": {"state": {"std": [1]}, "actions": {"mean": [0], "std": [1]}}})",
               "state.mean is missing");
  expect_error(R"({"norm_stats": {"state": {"mean": ["a"], "std": [1]}, "actions": {"mean": [0], "std": [1]}}})",
               "state.mean[0]");
  expect_error(R"({"stats": {}})", "'norm_stats'");
  auto missing = load_norm_stats("/nonexistent/norm_stats.json");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("/nonexistent/norm_stats.json"), std::string::npos);
}

TEST(NormStats, ZScoreMatchesHandComputedValues) {
  const Stats s = sample_stats().state;  // mean {0.5, -1, 2}, std {0.25, 2, 0.5}
  const std::vector<double> x = {1.5, 3.0};  // shorter than the stats: uses the first 2
  std::vector<double> out(2);
  ASSERT_OK(normalize(x, s, NormKind::kZScore, out));
  EXPECT_EQ(out[0], (1.5 - 0.5) / (0.25 + 1e-6));
  EXPECT_EQ(out[1], (3.0 + 1.0) / (2.0 + 1e-6));
  EXPECT_NEAR(out[0], 3.999984, 1e-6);

  // Unnormalize to 4 dims: the third uses the stats, the fourth is padding (mean 0, std 1).
  const std::vector<double> y = {4.0, 2.0, -1.0, 10.0};
  std::vector<double> back(4);
  ASSERT_OK(unnormalize(y, s, NormKind::kZScore, back));
  EXPECT_EQ(back[0], 4.0 * (0.25 + 1e-6) + 0.5);
  EXPECT_EQ(back[1], 2.0 * (2.0 + 1e-6) - 1.0);
  EXPECT_EQ(back[2], -1.0 * (0.5 + 1e-6) + 2.0);
  EXPECT_EQ(back[3], 10.0 * (1.0 + 1e-6));  // padded dims are still scaled by 1 + 1e-6
  EXPECT_NE(back[3], 10.0);
}

TEST(NormStats, QuantileMatchesHandComputedValues) {
  const Stats s = sample_stats().state;  // q01 {-1, -3, 1}, q99 {1, 1, 3}
  const std::vector<double> x = {0.0, -3.0, 4.0};
  std::vector<double> out(3);
  ASSERT_OK(normalize(x, s, NormKind::kQuantile, out));
  EXPECT_EQ(out[0], (0.0 + 1.0) / (2.0 + 1e-6) * 2.0 - 1.0);
  EXPECT_EQ(out[1], -1.0);                         // at q01
  EXPECT_EQ(out[2], (4.0 - 1.0) / (2.0 + 1e-6) * 2.0 - 1.0);  // no clipping above 1
  EXPECT_GT(out[2], 1.9);

  const std::vector<double> y = {1.0, -1.0, 0.0, 0.75, -7.0};  // dims 3, 4 pass through
  std::vector<double> back(5);
  ASSERT_OK(unnormalize(y, s, NormKind::kQuantile, back));
  EXPECT_EQ(back[0], (1.0 + 1.0) / 2.0 * (2.0 + 1e-6) - 1.0);
  EXPECT_EQ(back[1], -3.0);
  EXPECT_EQ(back[2], 0.5 * (2.0 + 1e-6) + 1.0);
  EXPECT_EQ(back[3], 0.75);
  EXPECT_EQ(back[4], -7.0);
}

TEST(NormStats, FloatOverloadsComputeInDoubleAndRound) {
  const Stats s = sample_stats().state;
  const std::vector<float> x = {0.1f, 0.2f, 0.3f};
  std::vector<float> out(3);
  ASSERT_OK(normalize(x, s, NormKind::kZScore, out));
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(out[i], static_cast<float>((static_cast<double>(x[i]) - s.mean[i]) / (s.std[i] + 1e-6)));
  }
  std::vector<float> back(3);
  ASSERT_OK(unnormalize(std::span<const float>(out), s, NormKind::kZScore, back));
  for (std::size_t i = 0; i < 3; ++i) EXPECT_NEAR(back[i], x[i], 1e-6);
}

TEST(NormStats, MisuseIsAnError) {
  Stats s = sample_stats().actions;  // 2 dims, no quantiles
  std::vector<double> x3 = {1, 2, 3}, out3(3), out2(2);
  // quantile without q01/q99
  Status q = normalize(std::span<const double>(x3).first(2), s, NormKind::kQuantile, out2);
  EXPECT_EQ(q.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(q.message().find("q01"), std::string::npos) << q.message();
  EXPECT_FALSE(unnormalize(std::span<const double>(x3).first(2), s, NormKind::kQuantile, out2).is_ok());
  // data longer than the stats
  EXPECT_FALSE(normalize(x3, s, NormKind::kZScore, out3).is_ok());
  // stats longer than the vector to unnormalize
  std::vector<double> x1 = {1}, out1(1);
  EXPECT_FALSE(unnormalize(x1, s, NormKind::kZScore, out1).is_ok());
  // output of the wrong size
  EXPECT_FALSE(normalize(std::span<const double>(x3).first(2), s, NormKind::kZScore, out3).is_ok());
  EXPECT_EQ(norm_kind_for(ModelType::kPi0), NormKind::kZScore);
  EXPECT_EQ(norm_kind_for(ModelType::kPi05), NormKind::kQuantile);
}

TEST(NormStats, FindsTheOnlyFileOrTheNamedAsset) {
  ScratchDir dir("ns_find");
  const std::string ckpt = dir.str();
  EXPECT_EQ(find_norm_stats(ckpt, "").status().code(), StatusCode::kNotFound);

  write_file(dir / "assets/physical-intelligence/libero/norm_stats.json", "{}");
  auto only = find_norm_stats(ckpt, "");
  ASSERT_TRUE(only.has_value()) << only.status().to_string();
  EXPECT_EQ(*only, dir / "assets/physical-intelligence/libero/norm_stats.json");

  write_file(dir / "assets/droid/norm_stats.json", "{}");
  auto several = find_norm_stats(ckpt, "");
  ASSERT_FALSE(several.has_value());
  const std::string m = several.status().message();
  EXPECT_NE(m.find("'droid'"), std::string::npos) << m;
  EXPECT_NE(m.find("'physical-intelligence/libero'"), std::string::npos) << m;
  EXPECT_NE(m.find("asset_id"), std::string::npos) << m;
  EXPECT_NE(m.find("norm_stats param"), std::string::npos) << m;

  auto named = find_norm_stats(ckpt, "droid");
  ASSERT_TRUE(named.has_value());
  EXPECT_EQ(*named, dir / "assets/droid/norm_stats.json");
  auto wrong = find_norm_stats(ckpt, "trossen");
  ASSERT_FALSE(wrong.has_value());
  EXPECT_NE(wrong.status().message().find("'droid'"), std::string::npos);
}

}  // namespace
}  // namespace edgevla::model
