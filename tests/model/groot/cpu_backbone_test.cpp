// The groot backbone's CPU engine against the NumPy reference (tests/reference/groot/
// groot_numpy.py, float32): the reference's pixel values, input ids and attention mask go in,
// backbone_features (and the mlp1 outputs, the masks) must match within rel-L2 1e-4 on generated
// tiny and small checkpoints with 1, 2 and 3 views, two prompts, left padding and views of
// different sizes. Then bad input (views, shapes, pixels, prompt length) and no heap allocation
// in a repeated run.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>

#include "runtime/backends/backend.hpp"
#include "runtime/model/groot/checkpoint.hpp"
#include "runtime/model/groot/generator.hpp"
#include "runtime/model/groot/groot_family.hpp"
#include "runtime/model/safetensors.hpp"
#include "tests/model/preprocess_test_util.hpp"
#include "tests/support/allocation_counter.hpp"


namespace edgevla::backends {
namespace {

namespace mg = model::groot;
using model::test::kPython;
using model::test::run_command;
using model::test::ScratchDir;

constexpr const char* kPromptA = "Pick the pear from the counter and place it in the plate.";
constexpr const char* kPromptB = "Open the top drawer, then put the red_block inside!";

double rel_l2(const float* a, const float* b, std::int64_t n) {
  double num = 0, den = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(a[i]) - b[i];
    num += d * d;
    den += static_cast<double>(b[i]) * b[i];
  }
  return std::sqrt(num) / std::max(std::sqrt(den), 1e-30);
}

struct Case {
  std::string preset = "tiny";
  int views = 1;
  std::string embodiment = "gr1";
  std::string instruction = kPromptA;
  int pad = 0;              // extra left padding tokens
  std::string image_sizes;  // "HxW,HxW": frames of these sizes (else --random-images at 480x640)
  DType weights = DType::kF32;
};

// A generated f32 checkpoint, the reference's stage outputs for `c`, and the engine's inputs.
class GrootBackboneCpu : public ::testing::Test {
 protected:
  void prepare(const Case& c) {
    dir_ = std::make_unique<ScratchDir>("groot_cpu_backbone");
    const std::string ck = *dir_ / c.preset;
    mg::GenerateOptions g;
    g.preset = c.preset;
    g.dtype = c.weights;
    g.seed = 5;
    ASSERT_TRUE(mg::generate_checkpoint(g, ck).is_ok());
    const std::string script =
        edgevla::testing::source_dir() + "/tests/reference/groot/groot_numpy.py";
    std::string images = " --random-images " + std::to_string(c.views);
    if (!c.image_sizes.empty()) {
      // uint8 frames of the given sizes, written by NumPy.
      const std::string make =
          "import sys, numpy as np; rng = np.random.default_rng(3); out = []\n"
          "for i, s in enumerate(sys.argv[2].split(',')):\n"
          "    h, w = (int(v) for v in s.split('x')); p = sys.argv[1] + f'/frame{i}.npy'\n"
          "    np.save(p, rng.integers(0, 256, (h, w, 3), dtype=np.uint8)); out.append(p)\n"
          "print(','.join(out), end='')";
      const std::string list = *dir_ / "frames.txt";
      ASSERT_EQ(run_command(std::string(kPython) + " -c " + model::test::shell_quote(make) + " " +
                                dir_->str() + " " + c.image_sizes,
                            list),
                0)
          << model::test::read_file(list);
      images = " --images " + model::test::read_file(list);
    }
    const std::string log = *dir_ / "ref.log";
    // The reference's stage outputs, then the tensors this test reads re-saved with 4-byte ones
    // first (the reference writes them unaligned; the mapped reader needs element alignment).
    const std::string repack =
        "import sys; sys.path.insert(0, sys.argv[1]); import numpy as np, safetensors_io as io\n"
        "t = io.load(sys.argv[2]); out = {k: v for k, v in t.items() if "
        "k.startswith('pixel_values.')}\n"
        "out.update(image_embeds=t['image_embeds'], backbone_features=t['backbone_features'],\n"
        "           input_ids=t['input_ids'].astype(np.int32), state=t['state'], "
        "noise=t['noise'],\n"
        "           embodiment_id=t['embodiment_id'], actions_normalized=t['actions_normalized'],\n"
        "           attention_mask=t['attention_mask'], image_mask=t['image_mask'])\n"
        "io.save(sys.argv[3], out)";
    auto reference = [&](const std::string& extra) {
      const std::string cmd = std::string(kPython) + " " + script + " --checkpoint " + ck + images +
                              " --embodiment " + c.embodiment + " --instruction " +
                              model::test::shell_quote(c.instruction) + " --dtype f32 --out " +
                              (*dir_ / "raw.safetensors") + extra;
      ASSERT_EQ(run_command(cmd, log), 0) << cmd << "\n" << model::test::read_file(log);
      ASSERT_EQ(run_command(std::string(kPython) + " -c " + model::test::shell_quote(repack) + " " +
                                edgevla::testing::source_dir() + "/tests/reference " +
                                (*dir_ / "raw.safetensors") + " " + (*dir_ / "ref.safetensors"),
                            log),
                0)
          << model::test::read_file(log);
      auto ref = model::SafetensorsFile::open(*dir_ / "ref.safetensors");
      ASSERT_TRUE(ref.has_value()) << ref.status().to_string();
      ref_ = std::make_unique<model::SafetensorsFile>(std::move(*ref));
    };
    ASSERT_NO_FATAL_FAILURE(reference(""));
    if (c.pad > 0) {  // the same run left-padded by c.pad tokens
      ASSERT_NO_FATAL_FAILURE(
          reference(" --pad-to " + std::to_string(ref_->find("input_ids")->shape[0] + c.pad)));
    }

    auto opened = mg::Checkpoint::open(ck);
    ASSERT_TRUE(opened.has_value()) << opened.status().to_string();
    model_ = std::make_shared<mg::GrootModel>(std::move(*opened));
    auto backend = make_backend("cpu");
    ASSERT_TRUE(backend.has_value()) << backend.status().to_string();
    backend_ = std::move(*backend);
    EngineOptions o;
    o.threads = 2;
    auto e = backend_->create(*model_, model::kBackbone, o);
    ASSERT_TRUE(e.has_value()) << e.status().to_string();
    engine_ = std::move(*e);

    // The reference's ids and mask (uint8) as the stage's i32 / bool.
    ids_ = *tensor("input_ids").clone();
    const Tensor mask8 = tensor("attention_mask");
    mask_ = *Tensor::empty(DType::kBool, Shape{mask8.numel()});
    for (std::int64_t i = 0; i < mask8.numel(); ++i)
      mask_.data<bool>()[i] = mask8.data<std::uint8_t>()[i] != 0;
    for (int k = 0; k < c.views; ++k)
      pixels_.push_back(tensor("pixel_values." + std::to_string(k)));
  }

  Tensor tensor(const std::string& name) const {
    auto t = ref_->tensor(name);
    EXPECT_TRUE(t.has_value()) << name;
    return t.has_value() ? *t : Tensor();
  }

  Status bind_all() {
    engine_->clear_bindings();
    for (std::size_t k = 0; k < pixels_.size(); ++k) {
      EDGEVLA_RETURN_IF_ERROR(engine_->bind("image." + std::to_string(k), pixels_[k]));
    }
    EDGEVLA_RETURN_IF_ERROR(engine_->bind("input_ids", ids_));
    return engine_->bind("attention_mask", mask_);
  }

  // Runs the engine on the reference's inputs and compares every output.
  void run_and_compare() {
    ASSERT_TRUE(bind_all().is_ok());
    const Status s = engine_->run({});
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    auto feats = engine_->output("backbone_features");
    ASSERT_TRUE(feats.has_value());
    const Tensor want = tensor("backbone_features");
    ASSERT_EQ(feats->shape(), want.shape());
    const double err = rel_l2(feats->data<float>(), want.data<float>(), want.numel());
    const RunTimings& t = engine_->last_timings();
    std::printf("backbone_features %s rel-L2 %.3g (%.1f ms: vision %.1f, llm %.1f)\n",
                want.shape().to_string().c_str(), err, t.total_ms, t.parts.at(0).second,
                t.parts.at(1).second);
    EXPECT_LE(err, 1e-4);
    auto embeds = engine_->output("image_embeds");
    ASSERT_TRUE(embeds.has_value());
    const Tensor want_e = tensor("image_embeds");
    ASSERT_EQ(embeds->shape(), want_e.shape());
    EXPECT_LE(rel_l2(embeds->data<float>(), want_e.data<float>(), want_e.numel()), 1e-4);
    auto image_mask = engine_->output("image_mask");
    auto mask = engine_->output("attention_mask");
    ASSERT_TRUE(image_mask.has_value() && mask.has_value());
    const Tensor want_im = tensor("image_mask");
    ASSERT_EQ(image_mask->numel(), want_im.numel());
    ASSERT_EQ(mask->numel(), mask_.numel());
    for (std::int64_t i = 0; i < want_im.numel(); ++i) {
      EXPECT_EQ(image_mask->data<bool>()[i], want_im.data<std::uint8_t>()[i] != 0) << i;
      EXPECT_EQ(mask->data<bool>()[i], mask_.data<bool>()[i]) << i;
    }
  }

  std::unique_ptr<ScratchDir> dir_;
  std::unique_ptr<model::SafetensorsFile> ref_;
  std::shared_ptr<const model::Model> model_;
  std::shared_ptr<Backend> backend_;
  std::unique_ptr<Engine> engine_;
  std::vector<Tensor> pixels_;
  Tensor ids_, mask_;
};

TEST_F(GrootBackboneCpu, TinyOneViewMatchesReference) {
  ASSERT_NO_FATAL_FAILURE(prepare({}));
  ASSERT_NO_FATAL_FAILURE(run_and_compare());
}

TEST_F(GrootBackboneCpu, TinyThreeViewsMatchReference) {
  ASSERT_NO_FATAL_FAILURE(
      prepare({.views = 3, .embodiment = "oxe_droid", .instruction = kPromptB}));
  ASSERT_NO_FATAL_FAILURE(run_and_compare());
}

TEST_F(GrootBackboneCpu, TinyLeftPaddedPromptMatchesReference) {
  ASSERT_NO_FATAL_FAILURE(
      prepare({.views = 2, .embodiment = "libero_panda", .instruction = kPromptB, .pad = 9}));
  ASSERT_FALSE(mask_.data<bool>()[0]);  // the case really is padded
  ASSERT_NO_FATAL_FAILURE(run_and_compare());
}

TEST_F(GrootBackboneCpu, TinyViewsOfDifferentSizesMatchReference) {
  // 640x480 -> 336x252 (108 tokens), 300x300 -> 252x252 (81 tokens): separate patch grids and
  // position-table interpolations, attention inside each view.
  ASSERT_NO_FATAL_FAILURE(
      prepare({.views = 2, .embodiment = "libero_panda", .image_sizes = "480x640,300x300"}));
  ASSERT_NE(pixels_[0].shape(), pixels_[1].shape());
  ASSERT_NO_FATAL_FAILURE(run_and_compare());
}

TEST_F(GrootBackboneCpu, SmallOneViewMatchesReference) {
  ASSERT_NO_FATAL_FAILURE(prepare({.preset = "small", .instruction = kPromptB}));
  ASSERT_NO_FATAL_FAILURE(run_and_compare());
}

TEST_F(GrootBackboneCpu, SmallThreeViewsMatchReference) {
  ASSERT_NO_FATAL_FAILURE(prepare({.preset = "small", .views = 3, .embodiment = "oxe_droid"}));
  ASSERT_NO_FATAL_FAILURE(run_and_compare());
}

TEST_F(GrootBackboneCpu, RepeatedRunIsIdenticalAndAllocatesNothing) {
  ASSERT_NO_FATAL_FAILURE(prepare({.views = 2, .embodiment = "libero_panda", .pad = 3}));
  ASSERT_NO_FATAL_FAILURE(run_and_compare());
  const Tensor first = *engine_->output("backbone_features")->clone();
  edgevla::testing::count_allocations(true);
  const Status s = engine_->run({});
  edgevla::testing::count_allocations(false);
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  EXPECT_EQ(edgevla::testing::allocations(), 0);
  const Tensor again = *engine_->output("backbone_features");
  ASSERT_EQ(again.shape(), first.shape());
  for (std::int64_t i = 0; i < first.numel(); ++i)
    ASSERT_EQ(again.data<float>()[i], first.data<float>()[i]) << i;
}

TEST_F(GrootBackboneCpu, TinyBf16WeightsMatchReference) {
  // bf16 matrices are widened panel by panel while multiplying; the reference widens the same
  // rounded values, so f32 compute agrees as tightly as with f32 weights.
  ASSERT_NO_FATAL_FAILURE(prepare({.views = 2,
                                   .embodiment = "libero_panda",
                                   .instruction = kPromptB,
                                   .weights = DType::kBF16}));
  ASSERT_NO_FATAL_FAILURE(run_and_compare());
}

TEST_F(GrootBackboneCpu, Bf16PixelsEqualTheirF32Values) {
  // Pixels bound as bf16 give exactly what the same values bound as f32 give.
  ASSERT_NO_FATAL_FAILURE(prepare({.views = 2, .embodiment = "libero_panda"}));
  std::vector<Tensor> bf16, widened;
  for (const Tensor& p : pixels_) {
    Tensor b = *Tensor::empty(DType::kBF16, p.shape());
    Tensor f = *Tensor::empty(DType::kF32, p.shape());
    auto* bits = reinterpret_cast<std::uint16_t*>(b.raw_data());
    for (std::int64_t i = 0; i < p.numel(); ++i) {
      std::uint32_t u;
      std::memcpy(&u, p.data<float>() + i, sizeof u);
      bits[i] = static_cast<std::uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);  // nearest even
      const std::uint32_t back = static_cast<std::uint32_t>(bits[i]) << 16;
      std::memcpy(f.data<float>() + i, &back, sizeof back);
    }
    bf16.push_back(std::move(b));
    widened.push_back(std::move(f));
  }
  auto features = [&](const std::vector<Tensor>& views) {
    engine_->clear_bindings();
    for (std::size_t k = 0; k < views.size(); ++k) {
      EXPECT_TRUE(engine_->bind("image." + std::to_string(k), views[k]).is_ok());
    }
    EXPECT_TRUE(engine_->bind("input_ids", ids_).is_ok());
    EXPECT_TRUE(engine_->bind("attention_mask", mask_).is_ok());
    const Status s = engine_->run({});
    EXPECT_TRUE(s.is_ok()) << s.to_string();
    return *engine_->output("backbone_features")->clone();
  };
  const Tensor a = features(bf16), b = features(widened);
  ASSERT_EQ(a.shape(), b.shape());
  for (std::int64_t i = 0; i < a.numel(); ++i)
    ASSERT_EQ(a.data<float>()[i], b.data<float>()[i]) << i;
  // The rounding really changed the input: the features moved, a little.
  const double moved =
      rel_l2(a.data<float>(), tensor("backbone_features").data<float>(), a.numel());
  EXPECT_GT(moved, 0.0);
  EXPECT_LT(moved, 0.05);
}

TEST_F(GrootBackboneCpu, BackboneThenActionHeadGiveTheReferenceActions) {
  // The backbone's outputs go to the action head as the nodes pass them (vlln is the head's).
  ASSERT_NO_FATAL_FAILURE(
      prepare({.views = 3, .embodiment = "oxe_droid", .instruction = kPromptB, .pad = 4}));
  ASSERT_TRUE(bind_all().is_ok());
  ASSERT_TRUE(engine_->run({}).is_ok());
  EngineOptions o;
  o.threads = 2;
  auto head = backend_->create(*model_, model::kActionHead, o);
  ASSERT_TRUE(head.has_value()) << head.status().to_string();
  Engine& h = **head;
  for (const char* name : {"backbone_features", "attention_mask", "image_mask"}) {
    auto t = engine_->output(name);
    ASSERT_TRUE(t.has_value()) << name;
    ASSERT_TRUE(h.bind(name, *t).is_ok()) << name;
  }
  for (const char* name : {"state", "embodiment_id", "noise"}) {
    ASSERT_TRUE(h.bind(name, tensor(name)).is_ok()) << name;
  }
  const Status s = h.run(RunOptions{model_->default_num_steps()});
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  const Tensor want = tensor("actions_normalized");
  auto actions = h.output("actions");
  ASSERT_TRUE(actions.has_value());
  ASSERT_EQ(actions->shape(), want.shape());
  const double err = rel_l2(actions->data<float>(), want.data<float>(), want.numel());
  std::printf("actions_normalized %s rel-L2 %.3g\n", want.shape().to_string().c_str(), err);
  EXPECT_LE(err, 1e-4);
}

TEST_F(GrootBackboneCpu, BadInputIsRefusedByName) {
  ASSERT_NO_FATAL_FAILURE(prepare({.views = 3, .embodiment = "oxe_droid"}));
  auto expect_invalid = [&](const Status& s, const std::string& names) {
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
    EXPECT_NE(s.message().find(names), std::string::npos) << s.message();
  };
  // Fewer views than the prompt's image blocks.
  ASSERT_TRUE(bind_all().is_ok());
  engine_->clear_bindings();
  ASSERT_TRUE(engine_->bind("image.0", pixels_[0]).is_ok());
  ASSERT_TRUE(engine_->bind("image.1", pixels_[1]).is_ok());
  ASSERT_TRUE(engine_->bind("input_ids", ids_).is_ok());
  ASSERT_TRUE(engine_->bind("attention_mask", mask_).is_ok());
  expect_invalid(engine_->run({}), "2 view(s)");
  // A gap in the views.
  engine_->clear_bindings();
  ASSERT_TRUE(engine_->bind("image.0", pixels_[0]).is_ok());
  ASSERT_TRUE(engine_->bind("image.2", pixels_[2]).is_ok());
  ASSERT_TRUE(engine_->bind("input_ids", ids_).is_ok());
  ASSERT_TRUE(engine_->bind("attention_mask", mask_).is_ok());
  expect_invalid(engine_->run({}), "image.1");
  // No view at all.
  engine_->clear_bindings();
  ASSERT_TRUE(engine_->bind("input_ids", ids_).is_ok());
  ASSERT_TRUE(engine_->bind("attention_mask", mask_).is_ok());
  expect_invalid(engine_->run({}), "image.0");
  // A frame whose size is no multiple of 28.
  ASSERT_TRUE(bind_all().is_ok());
  Tensor odd = *Tensor::empty(DType::kF32, Shape{3, 250, 336});
  std::fill(odd.data<float>(), odd.data<float>() + odd.numel(), 0.0f);
  ASSERT_TRUE(engine_->bind("image.1", odd).is_ok());
  expect_invalid(engine_->run({}), "image.1");
  // A valid size that disagrees with the prompt's image block.
  Tensor other = *Tensor::empty(DType::kF32, Shape{3, 252, 252});
  std::fill(other.data<float>(), other.data<float>() + other.numel(), 0.0f);
  ASSERT_TRUE(engine_->bind("image.1", other).is_ok());
  expect_invalid(engine_->run({}), "<IMG_CONTEXT>");
  // A non-finite pixel.
  Tensor nan = *pixels_[2].clone();
  nan.data<float>()[7] = std::numeric_limits<float>::quiet_NaN();
  ASSERT_TRUE(bind_all().is_ok());
  ASSERT_TRUE(engine_->bind("image.2", nan).is_ok());
  expect_invalid(engine_->run({}), "non-finite");
  // Ids and mask of different lengths; an id outside the vocabulary; all padding.
  ASSERT_TRUE(bind_all().is_ok());
  ASSERT_TRUE(engine_->bind("attention_mask", *mask_.slice(0, 0, mask_.numel() - 1)).is_ok());
  expect_invalid(engine_->run({}), "attention_mask");
  Tensor bad_ids = *ids_.clone();
  bad_ids.data<std::int32_t>()[0] = 1 << 30;
  ASSERT_TRUE(bind_all().is_ok());
  ASSERT_TRUE(engine_->bind("input_ids", bad_ids).is_ok());
  expect_invalid(engine_->run({}), "vocabulary");
  Tensor none = *mask_.clone();
  std::fill(none.data<bool>(), none.data<bool>() + none.numel(), false);
  ASSERT_TRUE(bind_all().is_ok());
  ASSERT_TRUE(engine_->bind("attention_mask", none).is_ok());
  expect_invalid(engine_->run({}), "padding");
  // A prompt longer than the stage takes is refused when bound.
  std::int64_t max_len = 0;
  for (const auto& spec : model_->stage(model::kBackbone).value()->inputs) {
    if (spec.name == "input_ids") max_len = spec.max_shape[0];
  }
  ASSERT_GT(max_len, 0);
  Tensor long_ids = *Tensor::empty(DType::kI32, Shape{max_len + 1});
  expect_invalid(engine_->bind("input_ids", long_ids), "input_ids");
  // And the engine still works after all that.
  ASSERT_NO_FATAL_FAILURE(run_and_compare());
}

}  // namespace
}  // namespace edgevla::backends
