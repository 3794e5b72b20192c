// The cuda GR00T engines refusing by name, the engines running on: bad input (view sizes and
// order, image blocks, ids, padding, non-finite pixels and features, embodiment, noise, state,
// steps), before and after graphs were replayed, and a memory budget too small for a stage.
// A suite of its own beside cuda_groot_test.cpp's CudaGroot (the same executable; gtest takes one
// fixture class a suite). Without a GPU every test skips itself.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "tests/gpu/cuda_groot_cases.hpp"
#include "tests/gpu/engine_compare.hpp"
#include "tests/support/test_util.hpp"

namespace edgevla::backends {
namespace {

using namespace groot_test;  // NOLINT: the shared cases of cuda_groot_cases.hpp

class CudaGrootRefusals : public ::testing::TestWithParam<std::string> {};

void expect_invalid(const Status& s, const std::string& needle) {
  EXPECT_FALSE(s.is_ok()) << "expected an error naming '" << needle << "'";
  EXPECT_NE(s.message().find(needle), std::string::npos) << s.to_string();
  std::printf("  refused as expected: %s\n", s.to_string().c_str());
}

TEST_P(CudaGrootRefusals, BadInputIsRefusedByName) {
  REQUIRE_GPU();
  const std::string& dir = checkpoint(GetParam());
  auto gpu = open(dir, "cuda", Precision::kBF16);
  ASSERT_TRUE(gpu) << gpu.status().to_string();
  const std::vector<int> emb = embodiment_ids(dir);
  const mg::GrootConfig& c = config_of(*gpu);
  const Inputs in = make_inputs(c, cases()[1], emb[0], 3);
  Engine& b = *gpu->backbone;
  // A view whose size is not a multiple of patch x unshuffle.
  Inputs odd = in;
  odd.images[0] = *Tensor::empty(DType::kF32, Shape{3, 250, 336});
  ASSERT_TRUE(bind_backbone(b, odd).is_ok());
  expect_invalid(b.run({}), "image.0");
  // image.1 without image.0.
  b.clear_bindings();
  ASSERT_TRUE(b.bind("image.1", in.images[1]).is_ok());
  ASSERT_TRUE(b.bind("input_ids", in.ids).is_ok());
  ASSERT_TRUE(b.bind("attention_mask", in.mask).is_ok());
  expect_invalid(b.run({}), "image.0");
  // Fewer views than image blocks in the prompt.
  b.clear_bindings();
  ASSERT_TRUE(b.bind("image.0", in.images[0]).is_ok());
  ASSERT_TRUE(b.bind("input_ids", in.ids).is_ok());
  ASSERT_TRUE(b.bind("attention_mask", in.mask).is_ok());
  expect_invalid(b.run({}), "view");
  // A non-finite pixel.
  Inputs nan_pixel = in;
  nan_pixel.images[1] = *in.images[1].clone();
  nan_pixel.images[1].data<float>()[17] = std::nanf("");
  ASSERT_TRUE(bind_backbone(b, nan_pixel).is_ok());
  expect_invalid(b.run({}), "image.1");
  // An id outside the vocabulary; all padding.
  Inputs bad = in;
  bad.ids = *in.ids.clone();
  bad.ids.data<std::int32_t>()[bad.ids.numel() - 1] = static_cast<std::int32_t>(c.text.vocab_size);
  ASSERT_TRUE(bind_backbone(b, bad).is_ok());
  expect_invalid(b.run({}), "vocabulary");
  Inputs none = in;
  none.mask = *in.mask.clone();
  for (std::int64_t i = 0; i < none.mask.numel(); ++i) none.mask.data<bool>()[i] = false;
  ASSERT_TRUE(bind_backbone(b, none).is_ok());
  expect_invalid(b.run({}), "padding");
  // The engine still runs after refusing; with the pass replayed from its graph, the pixel count
  // read is this chunk's, not the last one's.
  ASSERT_TRUE(bind_backbone(b, in).is_ok());
  ASSERT_TRUE(b.run({}).is_ok());
  ASSERT_TRUE(bind_backbone(b, nan_pixel).is_ok());
  expect_invalid(b.run({}), "image.1");
  ASSERT_TRUE(bind_backbone(b, in).is_ok());
  ASSERT_TRUE(b.run({}).is_ok());
  const Tensor features = *b.output("backbone_features")->clone();
  const Tensor mask = *b.output("attention_mask")->clone();
  const Tensor image_mask = *b.output("image_mask")->clone();
  // Features bound on the device, as the backbone node loans them: they go out with a ready
  // fence while the stream still computes. The non-finite pixel check then reads its count once
  // the pass is queued behind it, still naming the view, and leaves the bound features as they
  // were; a host copy waits for the fence and holds the same features; the head's stream waits
  // for it on the device and makes the same actions.
  {
    const TensorSpec* spec = nullptr;
    for (const TensorSpec& s : b.outputs()) {
      if (s.name == "backbone_features") spec = &s;
    }
    ASSERT_NE(spec, nullptr);
    Tensor dev = *Tensor::empty(DType::kF32, spec->max_shape, Device::cuda(0));
    ASSERT_EQ(cudaMemset(dev.raw_data(), 0, dev.nbytes()), cudaSuccess);
    ASSERT_TRUE(bind_backbone(b, nan_pixel).is_ok());
    ASSERT_TRUE(b.bind("backbone_features", dev).is_ok());
    expect_invalid(b.run({}), "image.1");
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const Tensor untouched = *dev.to(Device::cpu());
    for (std::int64_t i = 0; i < untouched.numel(); ++i) {
      ASSERT_EQ(untouched.data<float>()[i], 0.0f) << "the refused chunk wrote the bound features at " << i;
    }
    Tensor dev2 = *Tensor::empty(DType::kF32, spec->max_shape, Device::cuda(0));
    ASSERT_TRUE(bind_backbone(b, in).is_ok());
    ASSERT_TRUE(b.bind("backbone_features", dev2).is_ok());
    ASSERT_TRUE(b.run({}).is_ok());
    EXPECT_NE(dev2.buffer()->ready(), nullptr) << "the features went out without a fence";
    const Tensor fenced = *b.output("backbone_features");
    const Tensor host = *fenced.to(Device::cpu());
    ASSERT_EQ(host.shape(), features.shape());
    EXPECT_EQ(std::memcmp(host.raw_data(), features.raw_data(), features.nbytes()), 0);
    Engine& h = *gpu->head;
    ASSERT_TRUE(bind_head(h, in, features, mask, image_mask).is_ok());
    ASSERT_TRUE(h.run(RunOptions{4}).is_ok());
    const Tensor from_host = *h.output("actions")->clone();
    Tensor dev3 = *Tensor::empty(DType::kF32, spec->max_shape, Device::cuda(0));
    ASSERT_TRUE(bind_backbone(b, in).is_ok());
    ASSERT_TRUE(b.bind("backbone_features", dev3).is_ok());
    ASSERT_TRUE(b.run({}).is_ok());
    ASSERT_TRUE(bind_head(h, in, *b.output("backbone_features"), mask, image_mask).is_ok());
    ASSERT_TRUE(h.run(RunOptions{4}).is_ok());  // right away: its stream waits on the device
    const Tensor from_fenced = *h.output("actions")->clone();
    ASSERT_EQ(from_fenced.shape(), from_host.shape());
    for (std::int64_t i = 0; i < from_host.numel(); ++i) {
      ASSERT_NEAR(from_fenced.data<float>()[i], from_host.data<float>()[i], 1e-5f) << i;
    }
    // A fenced chunk right after good ones, replayed from the same graph, is still refused.
    ASSERT_TRUE(bind_backbone(b, nan_pixel).is_ok());
    ASSERT_TRUE(b.bind("backbone_features", dev3).is_ok());
    expect_invalid(b.run({}), "image.1");
  }

  Engine& h = *gpu->head;
  // An embodiment the checkpoint lacks.
  Inputs other = in;
  other.embodiment = *in.embodiment.clone();
  int unknown = 0;
  while (std::find(emb.begin(), emb.end(), unknown) != emb.end()) ++unknown;
  *other.embodiment.data<std::int32_t>() = unknown;
  ASSERT_TRUE(bind_head(h, other, features, mask, image_mask).is_ok());
  expect_invalid(h.run(RunOptions{4}), "embodiment id");
  // Noise of the wrong shape; a state with a NaN; no image token attended; too many steps.
  ASSERT_TRUE(bind_head(h, in, features, mask, image_mask).is_ok());
  ASSERT_TRUE(
      h.bind("noise", *Tensor::empty(DType::kF32, Shape{c.action_horizon - 1, c.max_action_dim}))
          .is_ok());
  expect_invalid(h.run(RunOptions{4}), "noise");
  Inputs nan = in;
  nan.state = *in.state.clone();
  nan.state.data<float>()[0] = std::nanf("");
  ASSERT_TRUE(bind_head(h, nan, features, mask, image_mask).is_ok());
  expect_invalid(h.run(RunOptions{4}), "state");
  Tensor nan_features = *features.clone();
  std::int64_t attended = 0;
  while (!mask.data<bool>()[attended]) ++attended;
  nan_features.data<float>()[attended * nan_features.shape()[1] + 3] = INFINITY;
  ASSERT_TRUE(bind_head(h, in, nan_features, mask, image_mask).is_ok());
  expect_invalid(h.run(RunOptions{4}), "backbone_features");
  Tensor no_images = *image_mask.clone();
  for (std::int64_t i = 0; i < no_images.numel(); ++i) no_images.data<bool>()[i] = false;
  ASSERT_TRUE(bind_head(h, in, features, mask, no_images).is_ok());
  expect_invalid(h.run(RunOptions{4}), "image");
  ASSERT_TRUE(bind_head(h, in, features, mask, image_mask).is_ok());
  const Status many = h.run(RunOptions{9});
  EXPECT_FALSE(many.is_ok());
  EXPECT_NE(many.message().find("num_steps"), std::string::npos) << many.to_string();
  // And still runs.
  ASSERT_TRUE(bind_head(h, in, features, mask, image_mask).is_ok());
  const Status ok = h.run(RunOptions{4});
  ASSERT_TRUE(ok.is_ok()) << ok.to_string();
  EXPECT_TRUE(all_finite(*h.output("actions")));
}

TEST_P(CudaGrootRefusals, AMemoryBudgetRefusesByName) {
  REQUIRE_GPU();
  const std::string& dir = checkpoint(GetParam());
  auto small = open(dir, "cuda", Precision::kBF16, std::int64_t{1} << 20);
  ASSERT_FALSE(small);
  std::printf("  refused as expected: %s\n", small.status().to_string().c_str());
  EXPECT_NE(small.status().message().find("gpu_memory_budget_mb"), std::string::npos)
      << small.status().to_string();
  auto fits = open(dir, "cuda", Precision::kBF16, std::int64_t{8} << 30);
  ASSERT_TRUE(fits) << fits.status().to_string();
  std::printf("  [%s] device bytes: backbone %lld MiB, action head %lld MiB\n", GetParam().c_str(),
              static_cast<long long>(fits->backbone->device_bytes() >> 20),
              static_cast<long long>(fits->head->device_bytes() >> 20));
}

INSTANTIATE_TEST_SUITE_P(Configs, CudaGrootRefusals, ::testing::Values("tiny", "small"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace edgevla::backends
