// GR00T's frame pipeline (runtime/model/groot/image_pipeline.hpp) against the NumPy reference
// (tests/reference/groot/image_ref.py, through image_oracle.py): the frame the vision tower sees
// must be byte-identical for frames that take every path of INTER_AREA (integer-factor,
// float area, enlarging), with and without letterbox, and Pillow's bicubic in both directions;
// smart_resize agrees; bad frames are one clear error. The same bytes again with every pass in
// slices of rows over thread pools of 2, 3 and 7 threads.
#include "runtime/model/groot/image_pipeline.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "runtime/model/row_pass.hpp"
#include "runtime/util/thread_pool.hpp"
#include "tests/model/preprocess_test_util.hpp"

namespace edgevla::model::groot {
namespace {

using model::test::ScratchDir;

std::vector<std::uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

std::pair<int, int> read_pair(const std::string& path) {
  std::ifstream f(path);
  int a = 0, b = 0;
  f >> a >> b;
  return {a, b};
}

TEST(GrootImagePipeline, EveryFrameMatchesTheReferenceByteForByte) {
  // 512x512: 2x2 integer area; 480x640: float area; 100x300, 96x96: enlarging (fixed point);
  // 256x256: no area resize; odd and wide sizes; letterboxed frames.
  // 240x320: the launch files' cameras.
  const std::vector<std::string> cases = {"480x640",  "512x512",       "256x256", "100x300",       "96x96",
                                          "720x1280", "333x517",       "241x1999", "480x640:letterbox",
                                          "300x200:letterbox", "1024x768", "240x320"};
  ThreadPool two(2), three(3), seven(7);
  ScratchDir dir("groot_image");
  std::string cmd = std::string(model::test::kPython) + " " + edgevla::testing::source_dir() +
                    "/tests/model/groot/image_oracle.py " + dir.str();
  for (const auto& c : cases) cmd += " " + c;
  const std::string log = dir / "oracle.log";
  ASSERT_EQ(model::test::run_command(cmd, log), 0) << model::test::read_file(log);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const std::string base = dir / std::to_string(i);
    const std::string spec = cases[i];
    const auto x = spec.find('x');
    const int h = std::stoi(spec.substr(0, x));
    const int w = std::stoi(spec.substr(x + 1));
    const std::vector<std::uint8_t> bytes = read_bytes(base + ".in");
    Frame in{h, w, Pixels(bytes.begin(), bytes.end())};
    ASSERT_EQ(in.rgb.size(), static_cast<std::size_t>(h) * w * 3) << spec;
    const auto [eh, ew] = read_pair(base + ".shape");
    const std::vector<std::uint8_t> want = read_bytes(base + ".out");
    // Every pool size with the passes along rows in their shuffle form (where the CPU has AVX2),
    // and on one thread and three in their one-value-at-a-time form.
    struct Run {
      ThreadPool* pool;
      bool shuffle;
    };
    for (const Run run : {Run{nullptr, true}, Run{&two, true}, Run{&three, true}, Run{&seven, true}, Run{nullptr, false},
                          Run{&three, false}}) {
      ThreadPool* pool = run.pool;
      const bool shuffle = model::use_shuffle_passes(run.shuffle);
      const std::string at = spec + " on " + std::to_string(pool ? pool->size() : 1) + " thread(s)" +
                             (shuffle ? ", shuffle passes" : ", scalar passes");
      FrameOptions o;
      o.letterbox = spec.find(":letterbox") != std::string::npos;
      o.pool = pool;
      auto out = preprocess_frame(in, o);
      ASSERT_TRUE(out.has_value()) << at << ": " << out.status().to_string();
      EXPECT_EQ(out->height, eh) << at;
      EXPECT_EQ(out->width, ew) << at;
      ASSERT_EQ(out->rgb.size(), want.size()) << at;
      std::size_t differ = 0;
      for (std::size_t k = 0; k < want.size(); ++k) differ += out->rgb[k] != want[k];
      EXPECT_EQ(differ, 0u) << at << ": " << differ << " of " << want.size() << " bytes differ";
      EXPECT_EQ(vision_tokens(*out), (eh / 28) * (ew / 28));
    }
    model::use_shuffle_passes(true);
    auto smart = smart_resize(h, w);
    ASSERT_TRUE(smart.has_value());
    EXPECT_EQ(*smart, read_pair(base + ".smart")) << spec;
  }
}

TEST(GrootImagePipeline, PixelsAreNormalisedChannelsFirst) {
  Frame f{1, 2, {0, 128, 255, 10, 20, 30}};
  std::vector<float> out(6);
  normalize_pixels(f, out.data());
  EXPECT_FLOAT_EQ(out[0], -1.0f);                    // R of pixel 0
  EXPECT_FLOAT_EQ(out[1], (10.0f - 127.5f) / 127.5f);  // R of pixel 1
  EXPECT_FLOAT_EQ(out[2], (128.0f - 127.5f) / 127.5f);  // G of pixel 0
  EXPECT_FLOAT_EQ(out[4], 1.0f);                     // B of pixel 0

  // A frame large enough to be split: the same floats on 3 threads, every one written.
  Frame big{252, 336, Pixels(252 * 336 * 3, 0)};
  for (std::size_t i = 0; i < big.rgb.size(); ++i) big.rgb[i] = static_cast<std::uint8_t>((i * 7919) >> 3);
  std::vector<float> one(big.rgb.size()), split(big.rgb.size(), 9.0f);
  ThreadPool three(3);
  normalize_pixels(big, one.data());
  normalize_pixels(big, split.data(), &three);
  EXPECT_EQ(one, split);
}

TEST(GrootImagePipeline, BadFramesAreOneClearError) {
  Frame empty;
  auto e = preprocess_frame(empty);
  ASSERT_FALSE(e.has_value());
  EXPECT_NE(e.status().message().find("uint8 RGB"), std::string::npos) << e.status().message();
  Frame short_buffer{4, 4, Pixels(10, 0)};
  EXPECT_FALSE(preprocess_frame(short_buffer).has_value());
  auto wide = smart_resize(10, 2500);
  ASSERT_FALSE(wide.has_value());
  EXPECT_NE(wide.status().message().find("aspect ratio"), std::string::npos) << wide.status().message();
  FrameOptions bad;
  bad.crop_fraction = 0.0;
  EXPECT_FALSE(preprocess_frame(Frame{2, 2, Pixels(12, 0)}, bad).has_value());
}

}  // namespace
}  // namespace edgevla::model::groot
