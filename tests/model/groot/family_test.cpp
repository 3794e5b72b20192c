// The groot model family on the family-neutral seam: detection picks groot for a GR00T N1.6
// folder and pi0 for a pi0.5 one; the stages and their named, typed tensors; weight bytes per
// stage; the action decoder through the seam against groot_numpy.py's decoding.
#include "runtime/model/groot/groot_family.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "runtime/model/pi0/generator.hpp"
#include "runtime/model/safetensors.hpp"
#include "tests/model/preprocess_test_util.hpp"

namespace edgevla::model::groot {
namespace {

using model::test::ScratchDir;

class GrootFamilyTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<ScratchDir>("groot_family");
    const std::string log = *dir_ / "setup.log", py = model::test::kPython;
    auto run = [&](const std::string& cmd) {
      ASSERT_EQ(model::test::run_command(cmd, log), 0) << cmd << "\n" << model::test::read_file(log);
    };
    const std::string src = edgevla::testing::source_dir();
    run(py + " " + src + "/tests/reference/groot/make_checkpoint.py --config tiny --dtype bf16 --out " +
        (*dir_ / "groot"));
    run(py + " " + src + "/tests/model/groot/normalization_oracle.py " + (*dir_ / "groot") + " " +
        (*dir_ / "oracle.safetensors") + " 9");
    auto config = model::preset_config("tiny", ModelType::kPi05);
    ASSERT_TRUE(config.has_value()) << config.status().to_string();
    GenerateOptions o;
    o.config = *config;
    ASSERT_TRUE(generate_checkpoint(o, *dir_ / "pi05").is_ok());
  }
  static void TearDownTestSuite() { dir_.reset(); }
  static std::unique_ptr<ScratchDir> dir_;
};
std::unique_ptr<ScratchDir> GrootFamilyTest::dir_;

TEST_F(GrootFamilyTest, DetectionPicksTheRightFamily) {
  auto groot = find_family("auto", *dir_ / "groot");
  ASSERT_TRUE(groot.has_value()) << groot.status().to_string();
  EXPECT_EQ((*groot)->name(), "groot");
  auto pi0 = find_family("auto", *dir_ / "pi05");
  ASSERT_TRUE(pi0.has_value()) << pi0.status().to_string();
  EXPECT_EQ((*pi0)->name(), "pi0");
  EXPECT_FALSE((*groot)->recognizes(*dir_ / "pi05"));
  EXPECT_FALSE((*pi0)->recognizes(*dir_ / "groot"));
  EXPECT_FALSE(find_family("auto", *dir_ / "nothing_here").has_value());
  // groot on a pi0 folder: an error naming the other family.
  auto opened = (*groot)->open(*dir_ / "pi05", {});
  ASSERT_FALSE(opened.has_value());
  EXPECT_NE(opened.status().message().find("pi0"), std::string::npos) << opened.status().message();
}

TEST_F(GrootFamilyTest, StagesAndTensors) {
  auto family = find_family("groot", "");
  ASSERT_TRUE(family.has_value());
  auto m = (*family)->open(*dir_ / "groot", {});
  ASSERT_TRUE(m.has_value()) << m.status().to_string();
  const Model& model = **m;
  EXPECT_EQ(model.family(), "groot");
  EXPECT_EQ(model.variant(), "n1.6");
  EXPECT_EQ(model.default_num_steps(), 4);
  ASSERT_EQ(model.stages().size(), 2u);
  auto bb = model.stage(kBackbone);
  auto head = model.stage(kActionHead);
  ASSERT_TRUE(bb.has_value() && head.has_value());
  EXPECT_FALSE(model.stage("preprocess").has_value());
  auto find = [](const std::vector<TensorSpec>& v, const std::string& name) -> const TensorSpec* {
    for (const auto& t : v)
      if (t.name == name) return &t;
    return nullptr;
  };
  // tiny: LLM width 64, state / action width 128, horizon 50; 448 / 28 = 16 merged tokens per edge.
  const std::int64_t L = kMaxTextTokens + kMaxViews * 16 * 16;
  const TensorSpec* feats = find((*bb)->outputs, "backbone_features");
  ASSERT_NE(feats, nullptr);
  EXPECT_EQ(feats->max_shape, (Shape{L, 64}));
  const TensorSpec* image0 = find((*bb)->inputs, "image.0");
  ASSERT_NE(image0, nullptr);
  EXPECT_TRUE(image0->required);
  EXPECT_FALSE(find((*bb)->inputs, "image.2")->required);
  EXPECT_EQ(find((*bb)->inputs, "input_ids")->dtype, DType::kI32);
  EXPECT_EQ(find((*head)->inputs, "state")->max_shape, (Shape{128}));
  EXPECT_EQ(find((*head)->inputs, "noise")->max_shape, (Shape{50, 128}));
  EXPECT_EQ(find((*head)->inputs, "embodiment_id")->dtype, DType::kI32);
  EXPECT_TRUE(find((*head)->inputs, "backbone_features")->accepts_dtype(DType::kBF16));
  EXPECT_EQ(find((*head)->outputs, "actions")->max_shape, (Shape{50, 128}));
  EXPECT_FALSE(find((*head)->outputs, "velocities")->required);
  // Every input the head needs from the backbone is one of its outputs.
  for (const char* name : {"backbone_features", "attention_mask", "image_mask"}) {
    EXPECT_NE(find((*bb)->outputs, name), nullptr) << name;
  }
  // The stages read every weight the model reads, bf16: 2 bytes per element.
  EXPECT_GT((*bb)->weight_bytes, 0);
  EXPECT_GT((*head)->weight_bytes, 0);
  EXPECT_EQ((*bb)->weight_bytes + (*head)->weight_bytes, model.weight_bytes());
  EXPECT_EQ((*bb)->weight_bytes, 2 * (*bb)->weight_elements);
  // peek (headers only) agrees with open.
  auto peeked = (*family)->peek(*dir_ / "groot", {});
  ASSERT_TRUE(peeked.has_value());
  ASSERT_EQ(peeked->size(), 2u);
  EXPECT_EQ((*peeked)[0].weight_bytes, (*bb)->weight_bytes);
  EXPECT_EQ((*peeked)[1].weight_bytes, (*head)->weight_bytes);
  EXPECT_EQ((*peeked)[1].inputs.size(), (*head)->inputs.size());
  // Another variant asked for is refused, naming what the folder holds.
  ModelOpenOptions other;
  other.variant = "pi05";
  auto refused = (*family)->open(*dir_ / "groot", other);
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.status().message().find("GR00T"), std::string::npos);
  EXPECT_FALSE((*family)->peek(*dir_ / "groot", other).has_value());
}

TEST_F(GrootFamilyTest, ActionDecoderThroughTheSeam) {
  auto m = find_family("groot", "").value()->open(*dir_ / "groot", {});
  ASSERT_TRUE(m.has_value()) << m.status().to_string();
  // Several robots: the decoder needs one named; the error lists them.
  auto none = (*m)->make_action_decoder({});
  ASSERT_FALSE(none.has_value());
  for (const char* tag : {"gr1", "libero_panda", "new_embodiment", "oxe_droid", "unitree_g1"}) {
    EXPECT_NE(none.status().message().find(tag), std::string::npos) << none.status().message();
  }
  auto oracle = SafetensorsFile::open(*dir_ / "oracle.safetensors");
  ASSERT_TRUE(oracle.has_value()) << oracle.status().to_string();
  auto tensor64_as32 = [&](const std::string& name) {
    const Tensor t = oracle->tensor(name).value();
    Tensor out = Tensor::empty(DType::kF32, t.shape()).value();
    for (std::int64_t i = 0; i < t.numel(); ++i) out.data<float>()[i] = static_cast<float>(t.data<double>()[i]);
    return out;
  };
  struct Case {
    std::string tag;
    std::int64_t rows, dims;
    std::int32_t id;
  };
  for (const Case& c : {Case{"new_embodiment", 16, 13, 10}, Case{"unitree_g1", 30, 31, 8}}) {
    SCOPED_TRACE(c.tag);
    DecoderOptions o;
    o.embodiment = c.tag;
    auto dec = (*m)->make_action_decoder(o);
    ASSERT_TRUE(dec.has_value()) << dec.status().to_string();
    EXPECT_EQ((*dec)->out_dim(), c.dims);
    EXPECT_EQ((*dec)->out_rows(50), c.rows);
    auto e = as_groot(**m).value()->embodiment(c.tag);
    ASSERT_TRUE(e.has_value());
    std::vector<Tensor> held;
    std::vector<std::pair<std::string, const Tensor*>> context;
    held.reserve(16);
    for (const StateGroup& g : e->state_groups()) {
      held.push_back(tensor64_as32(c.tag + ".raw_state." + g.key));
      context.emplace_back("raw_state." + g.key, &held.back());
    }
    Tensor id = Tensor::empty(DType::kI32, Shape{1}).value();
    *id.data<std::int32_t>() = c.id;
    context.emplace_back("embodiment_id", &id);
    const Tensor normalized = tensor64_as32(c.tag + ".actions_normalized");
    Tensor out = Tensor::empty(DType::kF32, Shape{c.rows, c.dims}).value();
    const Status s = (*dec)->decode(normalized, context, out);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    for (const ActionGroup& g : e->action_groups()) {
      const Tensor want = oracle->tensor(c.tag + ".action." + g.key).value();
      for (std::int64_t r = 0; r < c.rows; ++r) {
        for (std::int64_t d = 0; d < g.dim; ++d) {
          const double w = want.data<double>()[r * g.dim + d];
          ASSERT_NEAR(out.data<float>()[r * c.dims + g.column + d], w, 1e-6 * (1 + std::abs(w)))
              << g.key << " " << r << "," << d;
        }
      }
    }
    // Another robot's chunk, a chunk of the wrong shape, relative actions without their state.
    *id.data<std::int32_t>() = 20;
    EXPECT_FALSE((*dec)->decode(normalized, context, out).is_ok());
    *id.data<std::int32_t>() = c.id;
    Tensor wide = Tensor::empty(DType::kF32, Shape{c.rows, c.dims + 1}).value();
    EXPECT_FALSE((*dec)->decode(normalized, context, wide).is_ok());
    const Status no_state = (*dec)->decode(normalized, {}, out);
    ASSERT_FALSE(no_state.is_ok());
    EXPECT_NE(no_state.message().find("raw state"), std::string::npos) << no_state.message();
  }
  DecoderOptions unknown;
  unknown.embodiment = "oxe_widowx";
  auto bad = (*m)->make_action_decoder(unknown);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.status().message().find("'oxe_widowx'"), std::string::npos);
  EXPECT_NE(bad.status().message().find("gr1"), std::string::npos);
}

}  // namespace
}  // namespace edgevla::model::groot
