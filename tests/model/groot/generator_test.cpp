// `edgevla model init --family groot`: the published layout (notes/groot-n16.md §5, §8). full's
// plan comes to the published 1106 tensors / 6,573,217,664 bf16 bytes in two shards of the
// published sizes without writing them; the key order equals the reference generator's
// (tests/reference/groot/make_checkpoint.py); a tiny checkpoint written by the CLI opens with
// edgevla's checkpoint opener and tokenizer, and groot_numpy.py runs on it with finite outputs.
#include "runtime/model/groot/generator.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "runtime/model/groot/checkpoint.hpp"
#include "runtime/model/groot/embodiment.hpp"
#include "runtime/model/groot/groot_family.hpp"
#include "runtime/model/groot/tokenizer.hpp"
#include "tests/model/preprocess_test_util.hpp"

namespace edgevla::model::groot {
namespace {

using json = nlohmann::json;
using model::test::ScratchDir;

std::string edgevla_bin() { return edgevla::testing::bin_dir() + "/edgevla"; }

class GrootGeneratorTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<ScratchDir>("groot_generator");
    const std::string log = *dir_ / "setup.log";
    auto run = [&](const std::string& cmd) {
      ASSERT_EQ(model::test::run_command(cmd, log), 0) << cmd << "\n" << model::test::read_file(log);
    };
    run(edgevla_bin() + " model init --family groot --config tiny --dtype f32 --seed 3 --out " + (*dir_ / "tiny"));
    // The reference generator's key order for each config.
    const std::string keys =
        "import json, sys; sys.path.insert(0, sys.argv[1]); import make_checkpoint, groot_configs; "
        "json.dump({n: [k for k, _, _ in make_checkpoint.weight_specs(groot_configs.get(n))] "
        "for n in ('tiny', 'small', 'full')}, open(sys.argv[2], 'w'))";
    run(std::string(model::test::kPython) + " -c " + model::test::shell_quote(keys) + " " +
        edgevla::testing::source_dir() + "/tests/reference/groot " + (*dir_ / "keys.json"));
    reference_keys_ = json::parse(model::test::read_file(*dir_ / "keys.json"));
  }
  static void TearDownTestSuite() { dir_.reset(); }
  static std::unique_ptr<ScratchDir> dir_;
  static json reference_keys_;
};
std::unique_ptr<ScratchDir> GrootGeneratorTest::dir_;
json GrootGeneratorTest::reference_keys_;

TEST_F(GrootGeneratorTest, FullPlanMatchesThePublishedCheckpoint) {
  GenerateOptions o;
  o.preset = "full";
  o.dtype = DType::kBF16;
  auto plan = plan_checkpoint(o);
  ASSERT_TRUE(plan.has_value()) << plan.status().to_string();
  EXPECT_EQ(plan->tensors, 1106);
  EXPECT_EQ(plan->params, 3'286'608'832);
  EXPECT_EQ(plan->total_bytes, 6'573'217'664);
  EXPECT_EQ(plan->keys_per_part.at("vision"), 448);
  EXPECT_EQ(plan->keys_per_part.at("language"), 179);
  EXPECT_EQ(plan->keys_per_part.at("mlp1"), 6);
  EXPECT_EQ(plan->keys_per_part.at("dit"), 456);
  ASSERT_EQ(plan->shards.size(), 2u);
  EXPECT_EQ(plan->shards[0].file, "model-00001-of-00002.safetensors");
  EXPECT_EQ(plan->shards[0].bytes, 4'990'961'536);  // the published 4.99 + 1.58 GB
  EXPECT_EQ(plan->shards[1].bytes, 1'582'256'128);
  // The CLI's dry run prints the same, writing nothing.
  const std::string out = *dir_ / "dry.json";
  ASSERT_EQ(model::test::run_command(edgevla_bin() + " model init --family groot --config full --dry-run", out), 0)
      << model::test::read_file(out);
  const json j = json::parse(model::test::read_file(out));
  EXPECT_EQ(j["tensors"], 1106);
  EXPECT_EQ(j["total_size"], 6'573'217'664);
  EXPECT_EQ(j["shards"].size(), 2u);
}

// `edgevla model info` on a GR00T checkpoint: the towers, the stages' bytes and every robot.
TEST_F(GrootGeneratorTest, ModelInfoListsTheStagesAndEveryRobot) {
  const std::string out = *dir_ / "info.txt";
  ASSERT_EQ(model::test::run_command(edgevla_bin() + " model info " + (*dir_ / "tiny"), out), 0)
      << model::test::read_file(out);
  const std::string text = model::test::read_file(out);
  for (const char* line : {"(family groot)", "stage        backbone", "stage        action_head",
                           "robot        gr1 (id 20): views ego_view; state 29 [left_arm:7",
                           "robot        libero_panda (id 2): views image, wrist_image; state 8",
                           "actions 16 x 29"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  }
}

TEST_F(GrootGeneratorTest, KeysInTheReferencesOrderAndTheOpenersShapes) {
  for (const char* name : {"tiny", "small", "full"}) {
    SCOPED_TRACE(name);
    GenerateOptions o;
    o.preset = name;
    auto plan = plan_checkpoint(o);
    ASSERT_TRUE(plan.has_value());
    std::vector<std::string> keys;
    for (const auto& s : plan->shards) keys.insert(keys.end(), s.tensors.begin(), s.tensors.end());
    EXPECT_EQ(json(keys), reference_keys_[name]);
    // Every tensor the opener expects is written (the rest is the unused pooling head).
    auto p = preset(name);
    ASSERT_TRUE(p.has_value());
    std::set<std::string> written(keys.begin(), keys.end());
    for (const WeightSpec& w : expected_weights(p->config)) EXPECT_TRUE(written.contains(w.name)) << w.name;
    EXPECT_EQ(written.size(), expected_weights(p->config).size() + 11);
  }
  GenerateOptions bad;
  bad.preset = "huge";
  EXPECT_FALSE(plan_checkpoint(bad).has_value());
  bad.preset = "tiny";
  bad.dtype = DType::kI32;
  EXPECT_FALSE(plan_checkpoint(bad).has_value());
}

TEST_F(GrootGeneratorTest, TinyOpensAndTheReferenceRunsOnIt) {
  const std::string ck = *dir_ / "tiny";
  auto opened = Checkpoint::open(ck);
  ASSERT_TRUE(opened.has_value()) << opened.status().to_string();
  EXPECT_EQ(opened->shards().size(), 3u);  // tiny's 2 MB shard limit
  EXPECT_TRUE(opened->lm_head_tied());
  const GrootConfig& c = opened->config();
  EXPECT_EQ(c.text.hidden_size, 64);
  EXPECT_EQ(c.dit.num_layers, 4);
  auto tok = Tokenizer::load(c.eagle_dir);
  ASSERT_TRUE(tok.has_value()) << tok.status().to_string();
  EXPECT_EQ(tok->token_id("<IMG_CONTEXT>").value(), c.image_token_id);
  EXPECT_LE(tok->vocab_size(), c.text.vocab_size);
  auto ids = tok->encode("<|im_start|>user\npick the pear<image 1><img><IMG_CONTEXT></img><|im_end|>\n");
  ASSERT_TRUE(ids.has_value());
  auto text = tok->decode(*ids);
  ASSERT_TRUE(text.has_value());
  EXPECT_EQ(*text, "<|im_start|>user\npick the pear<image 1><img><IMG_CONTEXT></img><|im_end|>\n");
  EXPECT_LT(ids->size(), 30u);  // merges learned: fewer tokens than bytes

  // The NumPy reference's whole inference on the C++ checkpoint: finite outputs of the right shapes.
  const std::string py = model::test::kPython, src = edgevla::testing::source_dir(), log = *dir_ / "ref.log";
  for (const auto& [tag, views] : {std::pair{"gr1", "1"}, std::pair{"new_embodiment", "2"}}) {
    SCOPED_TRACE(tag);
    const std::string raw = *dir_ / "raw.safetensors", out = *dir_ / (std::string(tag) + ".safetensors");
    ASSERT_EQ(model::test::run_command(py + " " + src + "/tests/reference/groot/groot_numpy.py --checkpoint " + ck +
                                           " --random-images " + views + " --image-size 240x320 --embodiment " + tag +
                                           " --dtype f32 --seed 1 --out " + raw,
                                       log),
              0)
        << model::test::read_file(log);
    ASSERT_EQ(model::test::run_command(py + " " + src + "/tests/model/groot/normalization_oracle.py --float64 " + raw +
                                           " " + out,
                                       log),
              0)
        << model::test::read_file(log);
    auto ref = SafetensorsFile::open(out);
    ASSERT_TRUE(ref.has_value()) << ref.status().to_string();
    for (const auto& e : ref->entries()) {
      auto t = ref->tensor(e.name).value();
      for (std::int64_t i = 0; i < t.numel(); ++i) ASSERT_TRUE(std::isfinite(t.data<double>()[i])) << e.name << " " << i;
    }
    EXPECT_EQ(ref->find("actions_normalized")->shape, (Shape{50, 128}));
    EXPECT_EQ(ref->find("velocity")->shape, (Shape{4, 50, 128}));
    EXPECT_EQ(ref->find("backbone_features")->shape[1], 64);
    // Its decoded actions are what edgevla's decoder makes of its normalized ones.
    auto e = Embodiment::load(ck, tag, embodiment_limits(c));
    ASSERT_TRUE(e.has_value()) << e.status().to_string();
    RawState state;
    for (const StateGroup& g : e->state_groups()) {
      auto t = ref->tensor("raw_state." + g.key).value();
      for (std::int64_t i = 0; i < t.numel(); ++i) state[g.key].push_back(static_cast<float>(t.data<double>()[i]));
    }
    auto an = ref->tensor("actions_normalized").value();
    std::vector<float> normalized(static_cast<std::size_t>(an.numel()));
    for (std::int64_t i = 0; i < an.numel(); ++i) normalized[static_cast<std::size_t>(i)] = static_cast<float>(an.data<double>()[i]);
    std::vector<double> decoded(static_cast<std::size_t>(e->horizon() * e->action_dim()));
    ASSERT_TRUE(e->decode_actions(normalized, 50, state, decoded).is_ok());
    for (const ActionGroup& g : e->action_groups()) {
      auto want = ref->tensor("action." + g.key).value();
      ASSERT_EQ(want.shape(), (Shape{e->horizon(), g.dim}));
      for (std::int64_t r = 0; r < e->horizon(); ++r) {
        for (std::int64_t d = 0; d < g.dim; ++d) {
          const double w = want.data<double>()[r * g.dim + d];
          ASSERT_NEAR(decoded[static_cast<std::size_t>(r * e->action_dim() + g.column + d)], w, 1e-6 * (1 + std::abs(w)));
        }
      }
    }
  }
}

TEST_F(GrootGeneratorTest, SeededAndRoundedPerDtype) {
  GenerateOptions o;
  o.preset = "tiny";
  o.seed = 3;
  o.dtype = DType::kF32;
  ASSERT_TRUE(generate_checkpoint(o, *dir_ / "again").is_ok());
  o.dtype = DType::kBF16;
  ASSERT_TRUE(generate_checkpoint(o, *dir_ / "bf16").is_ok());
  o.dtype = DType::kF32;
  o.seed = 4;
  ASSERT_TRUE(generate_checkpoint(o, *dir_ / "other").is_ok());
  for (const char* f : {"model-00001-of-00003.safetensors", "statistics.json", "Eagle-Block2A-2B-v2/tokenizer.json"}) {
    EXPECT_EQ(model::test::read_file(*dir_ / "tiny/" + f), model::test::read_file(*dir_ / "again/" + f)) << f;
  }
  EXPECT_NE(model::test::read_file(*dir_ / "tiny/model-00001-of-00003.safetensors"),
            model::test::read_file(*dir_ / "other/model-00001-of-00003.safetensors"));
  auto f32 = Checkpoint::open(*dir_ / "tiny");
  auto bf16 = Checkpoint::open(*dir_ / "bf16");
  ASSERT_TRUE(f32.has_value() && bf16.has_value());
  for (const std::string& name : {std::string(kEmbedTokens), std::string(kDitPrefix) + "proj_out_2.weight"}) {
    const Tensor a = f32->weight(name).value(), b = bf16->weight(name).value();
    ASSERT_EQ(b.dtype(), DType::kBF16);
    for (std::int64_t i = 0; i < a.numel(); ++i) {
      ASSERT_EQ(float_to_bfloat16(a.data<float>()[i]), b.data<std::uint16_t>()[i]) << name << " " << i;
    }
  }
}

}  // namespace
}  // namespace edgevla::model::groot
