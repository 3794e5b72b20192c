// GR00T N1.6 per-embodiment normalisation (notes/groot-n16.md §4, §8) against the NumPy
// reference: the state normalised and the actions decoded (un-normalised, cut to the robot's
// dims, relative groups made absolute) for every embodiment of a generated tiny checkpoint, from
// the inputs tests/reference/groot/groot_numpy.py used; round trips; bad files, keys and
// embodiments give errors naming them and the fix.
#include "runtime/model/groot/embodiment.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

#include "runtime/model/safetensors.hpp"
#include "tests/model/preprocess_test_util.hpp"

namespace edgevla::model::groot {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using model::test::ScratchDir;

const EmbodimentLimits kTiny{128, 128, 50, 32};  // groot_configs.py's tiny (and full)

std::string reference_dir() { return edgevla::testing::source_dir() + "/tests/reference/groot"; }

// The oracles store every tensor as float64; float32 ones hold float32 values exactly.
std::vector<float> f32(const SafetensorsFile& f, const std::string& name) {
  auto t = f.tensor(name);
  EXPECT_TRUE(t.has_value()) << name;
  if (!t) return {};
  const double* p = t->data<double>();
  return {p, p + t->numel()};
}

std::vector<double> f64(const SafetensorsFile& f, const std::string& name) {
  auto t = f.tensor(name);
  EXPECT_TRUE(t.has_value()) << name;
  if (!t) return {};
  const double* p = t->data<double>();
  return {p, p + t->numel()};
}

class GrootEmbodimentTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<ScratchDir>("groot_embodiment");
    const std::string log = *dir_ / "setup.log", py = model::test::kPython;
    auto run = [&](const std::string& cmd) {
      ASSERT_EQ(model::test::run_command(cmd, log), 0) << cmd << "\n" << model::test::read_file(log);
    };
    const std::string ck = *dir_ / "tiny";
    run(py + " " + reference_dir() + "/make_checkpoint.py --config tiny --dtype f32 --out " + ck);
    run(py + " " + edgevla::testing::source_dir() + "/tests/model/groot/normalization_oracle.py " + ck + " " +
        (*dir_ / "oracle.safetensors") + " 5");
    // Whole inferences: action.<group> from the model's own normalized actions.
    const std::string oracle = py + " " + edgevla::testing::source_dir() + "/tests/model/groot/normalization_oracle.py";
    for (const auto& [tag, views] : {std::pair{"gr1", "1"}, std::pair{"oxe_droid", "3"}}) {
      const std::string tag_s = tag;
      run(py + " " + reference_dir() + "/groot_numpy.py --checkpoint " + ck + " --random-images " + views +
          " --image-size 256x256 --embodiment " + tag_s + " --dtype f32 --seed 3 --out " + (*dir_ / "raw.safetensors"));
      run(oracle + " --float64 " + (*dir_ / "raw.safetensors") + " " + (*dir_ / (tag_s + ".safetensors")));
    }
  }
  static void TearDownTestSuite() { dir_.reset(); }

  static std::string ckpt() { return *dir_ / "tiny"; }

  static RawState raw_state(const SafetensorsFile& f, const std::string& prefix, const Embodiment& e) {
    RawState raw;
    for (const StateGroup& g : e.state_groups()) raw[g.key] = f32(f, prefix + g.key);
    return raw;
  }

  static std::unique_ptr<ScratchDir> dir_;
};
std::unique_ptr<ScratchDir> GrootEmbodimentTest::dir_;

void expect_near_all(const std::vector<double>& got, const std::vector<double>& want, double rel,
                     const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], rel * (1.0 + std::abs(want[i]))) << what << " at " << i;
  }
}

TEST_F(GrootEmbodimentTest, EveryEmbodimentMatchesTheReference) {
  auto oracle = SafetensorsFile::open(*dir_ / "oracle.safetensors");
  ASSERT_TRUE(oracle.has_value()) << oracle.status().to_string();
  const std::vector<std::string> tags = {"gr1", "libero_panda", "new_embodiment", "oxe_droid", "unitree_g1"};
  for (const std::string& tag : tags) {
    SCOPED_TRACE(tag);
    auto e = Embodiment::load(ckpt(), tag, kTiny);
    ASSERT_TRUE(e.has_value()) << e.status().to_string();
    const RawState raw = raw_state(*oracle, tag + ".raw_state.", *e);

    std::vector<float> state(128);
    ASSERT_TRUE(e->normalize_state(raw, state).is_ok());
    const std::vector<float> want_state = f32(*oracle, tag + ".state");
    ASSERT_EQ(want_state.size(), state.size());
    for (std::size_t i = 0; i < state.size(); ++i) {
      // float32 results of the same float64 arithmetic; sin/cos may differ by an ulp.
      ASSERT_NEAR(state[i], want_state[i], 1e-6) << "state value " << i;
    }

    const std::vector<float> normalized = f32(*oracle, tag + ".actions_normalized");
    std::vector<double> out(static_cast<std::size_t>(e->horizon() * e->action_dim()));
    ASSERT_TRUE(e->decode_actions(normalized, 50, raw, out).is_ok());
    for (const ActionGroup& g : e->action_groups()) {
      const std::vector<double> want = f64(*oracle, tag + ".action." + g.key);
      ASSERT_EQ(static_cast<std::int64_t>(want.size()), e->horizon() * g.dim) << g.key;
      std::vector<double> got;
      for (std::int64_t r = 0; r < e->horizon(); ++r) {
        for (std::int64_t c = 0; c < g.dim; ++c) got.push_back(out[static_cast<std::size_t>(r * e->action_dim() + g.column + c)]);
      }
      expect_near_all(got, want, 1e-12, "action." + g.key);
    }
  }
}

TEST_F(GrootEmbodimentTest, WholeInferencesDecodeLikeTheReference) {
  for (const std::string tag : {"gr1", "oxe_droid"}) {
    SCOPED_TRACE(tag);
    auto ref = SafetensorsFile::open(*dir_ / (tag + ".safetensors"));
    ASSERT_TRUE(ref.has_value()) << ref.status().to_string();
    auto e = Embodiment::load(ckpt(), tag, kTiny);
    ASSERT_TRUE(e.has_value()) << e.status().to_string();
    const RawState raw = raw_state(*ref, "raw_state.", *e);
    std::vector<float> state(128);
    ASSERT_TRUE(e->normalize_state(raw, state).is_ok());
    const std::vector<float> want_state = f32(*ref, "state");
    for (std::size_t i = 0; i < state.size(); ++i) ASSERT_NEAR(state[i], want_state[i], 1e-6) << i;

    std::vector<double> out(static_cast<std::size_t>(e->horizon() * e->action_dim()));
    ASSERT_TRUE(e->decode_actions(f32(*ref, "actions_normalized"), 50, raw, out).is_ok());
    EXPECT_EQ(e->horizon(), tag == "gr1" ? 16 : 32);
    for (const ActionGroup& g : e->action_groups()) {
      const std::vector<double> want = f64(*ref, "action." + g.key);  // float32 of float64 results
      ASSERT_EQ(static_cast<std::int64_t>(want.size()), e->horizon() * g.dim) << g.key;
      for (std::int64_t r = 0; r < e->horizon(); ++r) {
        for (std::int64_t c = 0; c < g.dim; ++c) {
          const double w = want[static_cast<std::size_t>(r * g.dim + c)];
          ASSERT_NEAR(out[static_cast<std::size_t>(r * e->action_dim() + g.column + c)], w, 1e-6 * (1 + std::abs(w)))
              << g.key << " step " << r << " dim " << c;
        }
      }
    }
  }
}

// A robot whose state and action groups share statistics, so decoding the normalised state as an
// action chunk must give the raw state back (min/max inside the range, mean/std anywhere).
constexpr const char* kProcessor = R"({"processor_kwargs": {
  "max_state_dim": 8, "max_action_dim": 8, "max_action_horizon": 4, "use_percentiles": false,
  "clip_outliers": true, "apply_sincos_state_encoding": true, "use_relative_action": true,
  "modality_configs": {"arm": {
    "video": {"modality_keys": ["front"], "delta_indices": [0]},
    "state": {"modality_keys": ["j", "g"], "delta_indices": [0], "mean_std_embedding_keys": ["g"],
              "sin_cos_embedding_keys": null},
    "action": {"modality_keys": ["j", "g"], "delta_indices": [0, 1], "mean_std_embedding_keys": ["g"],
               "action_configs": [{"rep": "ABSOLUTE", "type": "NON_EEF", "format": "DEFAULT", "state_key": null},
                                  {"rep": "ABSOLUTE", "type": "NON_EEF", "format": "DEFAULT", "state_key": null}]}}}}})";
constexpr const char* kStats = R"({"arm": {
  "state": {"j": {"min": [-1.0, 0.5, 2.0], "max": [1.0, 2.5, 2.0], "mean": [0, 1, 2], "std": [0.5, 0.5, 0]},
            "g": {"min": [0.0, -3.0], "max": [1.0, 3.0], "mean": [0.25, 1.5], "std": [0.125, 0.0]}},
  "action": {"j": {"min": [-1.0, 0.5, 2.0], "max": [1.0, 2.5, 2.0], "mean": [0, 1, 2], "std": [0.5, 0.5, 0]},
             "g": {"min": [0.0, -3.0], "max": [1.0, 3.0], "mean": [0.25, 1.5], "std": [0.125, 0.0]}}}})";

Expected<Embodiment> synthetic(const std::string& processor = kProcessor, const std::string& stats = kStats,
                               std::string_view tag = "arm") {
  auto p = parse_processor_config(processor, "test processor_config.json");
  if (!p) return p.status();
  auto s = parse_statistics(stats, "test statistics.json");
  if (!s) return s.status();
  return Embodiment::resolve(*p, *s, EmbodimentIds{{"arm", 3}}, tag, {8, 8, 4, 32});
}

TEST(GrootNormalization, RoundTripsThroughTheActionDecoder) {
  auto e = synthetic();
  ASSERT_TRUE(e.has_value()) << e.status().to_string();
  EXPECT_EQ(e->id(), 3);
  EXPECT_EQ(e->action_dim(), 5);
  EXPECT_EQ(e->horizon(), 2);
  // j: min/max (dim 2 degenerate: min == max); g: mean/std (dim 1 has std 0: passed through).
  const RawState raw = {{"j", {0.25f, 1.75f, 2.0f}}, {"g", {0.7f, -9.5f}}};
  std::vector<float> state(8, 42.0f);
  ASSERT_TRUE(e->normalize_state(raw, state).is_ok());
  EXPECT_FLOAT_EQ(state[0], 0.25f);                       // 2 (0.25 + 1) / 2 - 1
  EXPECT_FLOAT_EQ(state[1], 0.25f);                       // 2 (1.75 - 0.5) / 2 - 1
  EXPECT_EQ(state[2], 0.0f);                              // min == max -> 0
  EXPECT_FLOAT_EQ(state[3], static_cast<float>((0.7 - 0.25) / 0.125));
  EXPECT_EQ(state[4], -9.5f);                             // std 0: the raw value
  for (int i = 5; i < 8; ++i) EXPECT_EQ(state[i], 0.0f);  // padding
  // Both rows of the chunk hold the normalised state; decoding gives the raw values back.
  std::vector<float> chunk(4 * 8, 0.0f);
  for (int r = 0; r < 2; ++r) std::copy_n(state.begin(), 8, chunk.begin() + r * 8);
  std::vector<double> out(2 * 5);
  ASSERT_TRUE(e->decode_actions(chunk, 4, raw, out).is_ok());
  const double want[5] = {0.25, 1.75, 2.0, 0.7, -9.5};
  for (int r = 0; r < 2; ++r) {
    for (int c = 0; c < 5; ++c) EXPECT_NEAR(out[r * 5 + c], want[c], 1e-6) << r << "," << c;
  }
  // Outside the range the state is clipped to [-1, 1] and decodes to the bound.
  ASSERT_TRUE(e->normalize_state({{"j", {7.0f, -4.0f, 2.0f}}, {"g", {0.0f, 0.0f}}}, state).is_ok());
  EXPECT_EQ(state[0], 1.0f);
  EXPECT_EQ(state[1], -1.0f);
  std::copy_n(state.begin(), 8, chunk.begin());
  ASSERT_TRUE(e->decode_actions(chunk, 4, raw, out).is_ok());
  EXPECT_DOUBLE_EQ(out[0], 1.0);
  EXPECT_DOUBLE_EQ(out[1], 0.5);
}

TEST(GrootNormalization, NoClippingWhenTheProcessorSaysSo) {
  std::string p = kProcessor;
  p.replace(p.find("\"clip_outliers\": true"), 21, "\"clip_outliers\": false");
  auto e = synthetic(p);
  ASSERT_TRUE(e.has_value()) << e.status().to_string();
  std::vector<float> state(8);
  ASSERT_TRUE(e->normalize_state({{"j", {3.0f, 0.5f, 2.0f}}, {"g", {0.0f, 0.0f}}}, state).is_ok());
  EXPECT_FLOAT_EQ(state[0], 3.0f);  // 2 (3 + 1) / 2 - 1, not clipped
}

void expect_error(const Status& s, std::initializer_list<std::string> parts) {
  ASSERT_FALSE(s.is_ok());
  for (const std::string& p : parts) {
    EXPECT_NE(s.message().find(p), std::string::npos) << "'" << p << "' not in: " << s.message();
  }
}

TEST(GrootNormalization, BadFilesKeysAndEmbodimentsNameTheProblem) {
  // An unknown embodiment lists the known ones.
  expect_error(synthetic(kProcessor, kStats, "gr2").status(), {"'gr2'", "arm", "test processor_config.json"});
  // A state group without statistics names the file, the embodiment and the group.
  std::string stats = kStats;
  stats.replace(stats.find("\"g\": {\"min\": [0.0, -3.0]"), 5, "\"h\": ");
  expect_error(synthetic(kProcessor, stats).status(), {"test statistics.json", "'arm'", "state group 'g'"});
  // A relative group without relative_action statistics.
  std::string p = kProcessor;
  p.replace(p.find("\"ABSOLUTE\""), 10, "\"RELATIVE\"");
  expect_error(synthetic(p).status(), {"relative_action.j", "'arm'"});
  // A misspelt representation.
  p = kProcessor;
  p.replace(p.find("\"ABSOLUTE\""), 10, "\"RELATIVX\"");
  expect_error(synthetic(p).status(), {"action_configs[0].rep", "RELATIVX"});
  // A missing size.
  p = kProcessor;
  p.replace(p.find("\"max_state_dim\": 8,"), 19, "");
  expect_error(synthetic(p).status(), {"max_state_dim", "test processor_config.json"});
  // Statistics arrays of different lengths.
  stats = kStats;
  stats.replace(stats.find("\"mean\": [0.25, 1.5]"), 19, "\"mean\": [0.25]     ");
  expect_error(synthetic(kProcessor, stats).status(), {"arm.state.g.mean", "[1]", "[2]"});
  // Not JSON.
  expect_error(parse_statistics("{\"arm\": ", "cut statistics.json").status(), {"cut statistics.json", "JSON"});
  // A state group missing from the input, and one of the wrong width.
  auto e = synthetic();
  ASSERT_TRUE(e.has_value());
  std::vector<float> state(8);
  expect_error(e->normalize_state({{"j", {0, 0, 0}}}, state), {"'g'", "missing", "j, g"});
  expect_error(e->normalize_state({{"j", {0, 0}}, {"g", {0, 0}}}, state), {"'j'", "2 values", "3"});
  // Non-finite actions are refused, naming the step and the group.
  std::vector<float> chunk(32, 0.0f);
  chunk[8 + 3] = std::nanf("");
  std::vector<double> out(10);
  const Status s = e->decode_actions(chunk, 4, {}, out);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  expect_error(s, {"step 1", "'g'"});
}

TEST_F(GrootEmbodimentTest, CheckpointErrorsNameTheFileAndTheFix) {
  auto e = Embodiment::load(ckpt(), "oxe_google", kTiny);
  // oxe_google has a built-in id but this checkpoint has no modality config for it.
  expect_error(e.status(), {"'oxe_google'", "gr1", "libero_panda", "new_embodiment", "oxe_droid", "unitree_g1",
                            "processor_config.json"});
  // A statistics override missing an embodiment.
  const std::string stats = *dir_ / "partial_statistics.json";
  json j = json::parse(model::test::read_file(ckpt() + "/statistics.json"));
  j.erase("gr1");
  j["libero_panda"]["action"].erase("gripper");
  j["oxe_droid"].erase("relative_action");
  model::test::write_file(stats, j.dump());
  expect_error(Embodiment::load(ckpt(), "gr1", kTiny, stats).status(), {"'gr1'", "partial_statistics.json"});
  expect_error(Embodiment::load(ckpt(), "libero_panda", kTiny, stats).status(),
               {"action group 'gripper'", "partial_statistics.json"});
  expect_error(Embodiment::load(ckpt(), "oxe_droid", kTiny, stats).status(), {"relative_action.eef_9d"});
  // A model too small for the robot.
  expect_error(Embodiment::load(ckpt(), "unitree_g1", {32, 128, 50, 32}).status(), {"max_state_dim", "32"});
  expect_error(Embodiment::load(ckpt(), "gr1", {128, 128, 50, 16}).status(), {"id 20", "max_num_embodiments"});
  // Relative actions need their reference state at decode time.
  auto droid = Embodiment::load(ckpt(), "oxe_droid", kTiny);
  ASSERT_TRUE(droid.has_value());
  std::vector<float> chunk(50 * 128, 0.1f);
  std::vector<double> out(static_cast<std::size_t>(droid->horizon() * droid->action_dim()));
  expect_error(droid->decode_actions(chunk, 50, {}, out), {"'eef_9d'", "raw state"});
}

}  // namespace
}  // namespace edgevla::model::groot
