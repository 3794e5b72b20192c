// Image pre-processing against PIL: the C++ resize-with-pad and model-input conversion must give
// the bytes tests/reference/preprocess_ref.py computes with PIL and NumPy (openpi's libraries).
#include "runtime/model/image_ops.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <random>

#include "tests/model/preprocess_test_util.hpp"

namespace edgevla::model {
namespace {

using test::ScratchDir;

struct Case {
  std::string name;
  int width, height;
  std::string encoding;
  int size;
  int pattern;  // 0 noise, 1 smooth gradient with hard edges, 2 constant
};

int channels(const std::string& encoding) {
  return encoding == "rgba8" ? 4 : encoding == "mono8" ? 1 : 3;
}

std::string make_pixels(const Case& c, std::uint32_t seed) {
  const int ch = channels(c.encoding);
  std::string px(static_cast<std::size_t>(c.width) * c.height * ch, '\0');
  std::mt19937 rng(seed);
  for (int y = 0; y < c.height; ++y) {
    for (int x = 0; x < c.width; ++x) {
      for (int k = 0; k < ch; ++k) {
        int v = 0;
        if (c.pattern == 0) {
          v = static_cast<int>(rng() & 0xff);
        } else if (c.pattern == 1) {
          v = (x * 255 / std::max(1, c.width - 1) + y * 97 / std::max(1, c.height - 1) + k * 60) % 256;
          if ((x / 7 + y / 5) % 3 == 0) v = 255 - v;  // hard edges (ringing-free filter, but rounding matters)
        } else {
          v = 37 + 80 * k;
        }
        px[(static_cast<std::size_t>(y) * c.width + x) * ch + k] = static_cast<char>(v);
      }
    }
  }
  return px;
}

Tensor tensor_of(const std::string& px, const Case& c) {
  auto t = Tensor::from_bytes(DType::kU8, Shape{c.height, c.width, channels(c.encoding)},
                              std::as_bytes(std::span<const char>(px)));
  EXPECT_TRUE(t.has_value());
  return std::move(*t);
}

TEST(ImageOps, ResizeWithPadMatchesPilByteForByte) {
  const std::vector<Case> cases = {
      {"landscape", 640, 480, "rgb8", 224, 0},   {"portrait", 480, 640, "rgb8", 224, 0},
      {"tall", 100, 300, "rgb8", 224, 1},        {"same", 224, 224, "rgb8", 224, 0},
      {"upscale", 50, 50, "rgb8", 224, 0},       {"odd", 333, 217, "rgb8", 224, 1},
      {"odd_up", 97, 61, "rgb8", 224, 0},        {"near", 225, 224, "rgb8", 224, 0},
      {"wide_up", 224, 100, "rgb8", 224, 0},     {"narrow", 7, 500, "rgb8", 224, 1},
      {"big", 1920, 1080, "rgb8", 224, 0},       {"bgr", 640, 480, "bgr8", 224, 1},
      {"rgba", 320, 240, "rgba8", 224, 0},       {"mono", 333, 217, "mono8", 224, 0},
      {"constant", 640, 480, "rgb8", 224, 2},    {"small_canvas", 640, 480, "rgb8", 56, 0},
      {"large_canvas", 300, 200, "rgb8", 448, 0}, {"bgr_same", 224, 224, "bgr8", 224, 0},
  };
  ScratchDir dir("resize_vs_pil");
  nlohmann::json manifest = nlohmann::json::array();
  std::vector<std::string> inputs;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    inputs.push_back(make_pixels(c, static_cast<std::uint32_t>(1000 + i)));
    test::write_file(dir / (c.name + ".raw"), inputs.back());
    manifest.push_back({{"name", c.name}, {"width", c.width}, {"height", c.height},
                        {"encoding", c.encoding}, {"size", c.size}});
  }
  test::write_file(dir / "cases.json", manifest.dump());
  const std::string log = dir / "python.log";
  ASSERT_EQ(test::run_command(std::string(test::kPython) + " " +
                                  test::shell_quote(test::reference_script()) + " resize " +
                                  test::shell_quote(dir.str()),
                              log),
            0)
      << test::read_file(log);

  int worst = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    SCOPED_TRACE(c.name + " " + std::to_string(c.width) + "x" + std::to_string(c.height) + " " +
                 c.encoding + " -> " + std::to_string(c.size));
    // The horizontal pass in its one-value-at-a-time form must give the same bytes as the
    // shuffle form (row_pass.hpp) checked below.
    const bool shuffle = use_shuffle_passes(false);
    auto scalar = resize_with_pad(tensor_of(inputs[i], c), c.size, c.encoding);
    use_shuffle_passes(true);
    ASSERT_TRUE(scalar.has_value()) << scalar.status().to_string();
    EXPECT_FALSE(shuffle);
    auto out = resize_with_pad(tensor_of(inputs[i], c), c.size, c.encoding);
    ASSERT_TRUE(out.has_value()) << out.status().to_string();
    EXPECT_EQ(std::memcmp(scalar->raw_data(), out->raw_data(), out->nbytes()), 0);
    const std::string want = test::read_file(dir / (c.name + ".u8"));
    ASSERT_EQ(want.size(), out->nbytes());
    const auto* got = out->data<std::uint8_t>();
    int max_diff = 0;
    std::size_t differing = 0;
    for (std::size_t k = 0; k < want.size(); ++k) {
      const int d = std::abs(int(got[k]) - int(static_cast<std::uint8_t>(want[k])));
      max_diff = std::max(max_diff, d);
      differing += d != 0;
    }
    worst = std::max(worst, max_diff);
    EXPECT_EQ(max_diff, 0) << differing << " of " << want.size() << " bytes differ";

    // The model input: bit-identical floats.
    auto f = to_model_input(*out);
    ASSERT_TRUE(f.has_value()) << f.status().to_string();
    const std::string want_f = test::read_file(dir / (c.name + ".f32"));
    ASSERT_EQ(want_f.size(), f->nbytes());
    EXPECT_EQ(std::memcmp(want_f.data(), f->raw_data(), want_f.size()), 0);
  }
  RecordProperty("max_abs_diff_vs_pil", worst);
}

TEST(ImageOps, PadGeometryFollowsOpenpi) {
  auto g = pad_geometry(640, 480, 224);
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->new_width, 224);
  EXPECT_EQ(g->new_height, 168);
  EXPECT_EQ(g->left, 0);
  EXPECT_EQ(g->top, 28);
  g = pad_geometry(100, 300, 224);  // ratio 300/224: 74.66 -> 74 wide, left int(150/2) = 75
  EXPECT_EQ(g->new_width, 74);
  EXPECT_EQ(g->new_height, 224);
  EXPECT_EQ(g->left, 75);
  g = pad_geometry(333, 217, 224);  // 217 * 224 / 333 = 145.97 -> 145; top int(79/2) = 39
  EXPECT_EQ(g->new_height, 145);
  EXPECT_EQ(g->top, 39);
  EXPECT_FALSE(pad_geometry(1, 1000, 224).has_value());  // shrinks to 0 columns
  EXPECT_FALSE(pad_geometry(0, 10, 224).has_value());
}

TEST(ImageOps, SameSizeIsUnchangedAndEncodingsMapToRgb) {
  const Case c{"", 224, 224, "bgr8", 224, 0};
  const std::string px = make_pixels(c, 7);
  auto out = resize_with_pad(tensor_of(px, c), 224, "bgr8");
  ASSERT_TRUE(out.has_value());
  const auto* o = out->data<std::uint8_t>();
  for (std::size_t i = 0; i < px.size(); i += 3) {
    ASSERT_EQ(o[i + 0], static_cast<std::uint8_t>(px[i + 2]));
    ASSERT_EQ(o[i + 1], static_cast<std::uint8_t>(px[i + 1]));
    ASSERT_EQ(o[i + 2], static_cast<std::uint8_t>(px[i + 0]));
  }
  // rgb8 at the target size: the same bytes.
  const Case r{"", 224, 224, "rgb8", 224, 0};
  const std::string rp = make_pixels(r, 8);
  auto same = resize_with_pad(tensor_of(rp, r), 224, "rgb8");
  ASSERT_TRUE(same.has_value());
  EXPECT_EQ(std::memcmp(same->raw_data(), rp.data(), rp.size()), 0);
}

TEST(ImageOps, ConstantImagesStayConstantAndPaddingIsBlack) {
  const Case c{"", 50, 30, "rgb8", 224, 2};  // upscale; content 37, 117, 197
  auto out = resize_with_pad(tensor_of(make_pixels(c, 0), c), 224, "rgb8");
  ASSERT_TRUE(out.has_value());
  const auto g = *pad_geometry(50, 30, 224);  // 224 x 134, top 45
  EXPECT_EQ(g.new_height, 134);
  const auto* o = out->data<std::uint8_t>();
  auto at = [&](int y, int x, int k) { return int(o[(static_cast<std::size_t>(y) * 224 + x) * 3 + k]); };
  for (int y = 0; y < 224; ++y) {
    const bool inside = y >= g.top && y < g.top + g.new_height;
    for (int x = 0; x < 224; x += 17) {
      for (int k = 0; k < 3; ++k) ASSERT_EQ(at(y, x, k), inside ? 37 + 80 * k : 0) << y << "," << x;
    }
  }
  auto f = to_model_input(*out);
  ASSERT_TRUE(f.has_value());
  const float* p = f->data<float>();
  EXPECT_EQ(p[0], -1.0f);                                       // R, padding
  EXPECT_EQ(p[(g.top * 224)], 37.0f / 255.0f * 2.0f - 1.0f);    // R, first content row
  EXPECT_EQ(p[224 * 224 * 2 + g.top * 224 + 5], 197.0f / 255.0f * 2.0f - 1.0f);  // B
  EXPECT_EQ(255.0f / 255.0f * 2.0f - 1.0f, 1.0f);
}

TEST(ImageOps, ResizerReusesItsPlanAcrossSizes) {
  ImageResizer resizer;
  auto out = Tensor::empty(DType::kU8, Shape{224, 224, 3});
  ASSERT_TRUE(out.has_value());
  for (const Case& c : {Case{"", 640, 480, "rgb8", 224, 0}, Case{"", 100, 300, "rgb8", 224, 0},
                        Case{"", 640, 480, "rgb8", 224, 0}}) {
    const Tensor in = tensor_of(make_pixels(c, 3), c);
    ASSERT_OK(resizer.resize_with_pad(in, PixelFormat::kRgb8, *out));
    auto fresh = resize_with_pad(in, 224, "rgb8");
    ASSERT_TRUE(fresh.has_value());
    EXPECT_EQ(std::memcmp(out->raw_data(), fresh->raw_data(), out->nbytes()), 0);
  }
}

TEST(ImageOps, BadInputsAreClearErrors) {
  const Case c{"", 64, 48, "rgb8", 224, 0};
  const Tensor in = tensor_of(make_pixels(c, 1), c);
  auto enc = resize_with_pad(in, 224, "yuv422");
  ASSERT_FALSE(enc.has_value());
  EXPECT_NE(enc.status().message().find("rgb8, bgr8, rgba8 or mono8"), std::string::npos);
  EXPECT_FALSE(resize_with_pad(in, 224, "rgba8").has_value());  // 3 channels, not 4
  EXPECT_FALSE(resize_with_pad(in, 0, "rgb8").has_value());
  auto f32 = Tensor::empty(DType::kF32, Shape{48, 64, 3});
  EXPECT_FALSE(resize_with_pad(*f32, 224, "rgb8").has_value());
  ImageResizer r;
  auto small = Tensor::empty(DType::kU8, Shape{224, 200, 3});
  EXPECT_FALSE(r.resize_with_pad(in, PixelFormat::kRgb8, *small).is_ok());  // not square
  auto wrong = Tensor::empty(DType::kF32, Shape{3, 10, 10});
  auto canvas = resize_with_pad(in, 224, "rgb8");
  EXPECT_FALSE(to_model_input(*canvas, *wrong).is_ok());
}

}  // namespace
}  // namespace edgevla::model
