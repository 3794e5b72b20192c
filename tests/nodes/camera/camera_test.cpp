#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/videodev2.h>
#include <png.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <thread>

#include "nodes/camera/camera_node.hpp"
#include "runtime/launch/launch_file.hpp"
#include "tests/nodes/camera/camera_test_util.hpp"

namespace edgevla::nodes {
namespace {

using namespace camera_test;

// Test images ---------------------------------------------------------------------------------

// Writes a PNG with libpng; `rows` are packed in the PNG's own layout (16-bit big-endian,
// sub-byte samples packed high bits first).
void write_png(const fs::path& path, int w, int h, int color_type, int bit_depth, const Bytes& rows,
               bool interlaced = false, const std::vector<png_color>& palette = {}) {
  FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  png_init_io(png, f);
  png_set_IHDR(png, info, w, h, bit_depth, color_type,
               interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  if (!palette.empty()) png_set_PLTE(png, info, palette.data(), static_cast<int>(palette.size()));
  png_write_info(png, info);
  const std::size_t stride = rows.size() / h;
  std::vector<png_bytep> ptrs(h);
  for (int y = 0; y < h; ++y) ptrs[y] = const_cast<png_bytep>(rows.data() + stride * y);
  png_write_image(png, ptrs.data());
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  std::fclose(f);
}

void write_jpeg(const fs::path& path, int w, int h, int components, const Bytes& pixels) {
  write_bytes(path, encode_jpeg(w, h, components, pixels));
}

// Reads the synthetic source's 7-segment frame stamp (layout: CameraNode's header).
std::int64_t read_stamp(const std::uint8_t* rgb, int width, int height) {
  const int u = CameraNode::stamp_unit(width, height);
  if (u == 0) return -1;
  // Segment centres a..g in stamp units (times 2, to stay integral).
  constexpr int kCentre2[7][2] = {{5, 1}, {9, 5}, {9, 13}, {5, 17}, {1, 13}, {1, 5}, {5, 9}};
  constexpr std::uint8_t kDigits[10] = {0x3f, 0x06, 0x5b, 0x4f, 0x66, 0x6d, 0x7d, 0x07, 0x7f, 0x6f};
  std::int64_t value = 0;
  for (int i = 0; i < CameraNode::kStampDigits; ++i) {
    const int dx = u * (CameraNode::kStampMargin + i * CameraNode::kStampPitch);
    const int dy = u * CameraNode::kStampMargin;
    std::uint8_t lit = 0;
    for (int s = 0; s < 7; ++s) {
      const int x = dx + kCentre2[s][0] * u / 2;
      const int y = dy + kCentre2[s][1] * u / 2;
      const std::uint8_t* p = rgb + (static_cast<std::size_t>(y) * width + x) * 3;
      if (p[0] > 128 && p[1] > 128 && p[2] > 128) lit |= 1 << s;
    }
    const auto* d = std::find(std::begin(kDigits), std::end(kDigits), lit);
    if (d == std::end(kDigits)) return -2;  // not a digit
    value = value * 10 + (d - std::begin(kDigits));
  }
  return value;
}

// Synthetic ------------------------------------------------------------------------------------

TEST(CameraSynthetic, FramesArriveAtTheRateWithShapeNameCounterAndStamp) {
  Camera cam({{"rate_hz", "50"}, {"width", "320"}, {"height", "240"}, {"camera", "wrist_0_rgb"}});
  const std::int64_t t0 = wall_now_ns();
  ASSERT_OK(cam.activate());
  std::this_thread::sleep_for(std::chrono::seconds(1));
  ASSERT_OK(cam.host->deactivate_all());
  const std::int64_t t1 = wall_now_ns();
  auto got = cam.frames(1);
  EXPECT_GE(got.size(), 20u);  // 50 Hz for 1 s; generous bounds for a loaded machine
  EXPECT_LE(got.size(), 80u);
  for (std::size_t i = 0; i < got.size(); ++i) {
    const msgs::Image& m = got[i];
    EXPECT_EQ(m.pixels().shape(), (Shape{240, 320, 3}));
    EXPECT_EQ(m.pixels().dtype(), DType::kU8);
    EXPECT_EQ(m.encoding(), "rgb8");
    EXPECT_EQ(m.camera(), "wrist_0_rgb");
    EXPECT_EQ(buffer_kind_name(m.pixels().buffer()->kind()), "shm");  // written into a loan
    EXPECT_EQ(frame_of(m), static_cast<std::int64_t>(i));
    EXPECT_EQ(read_stamp(m.pixels().data<std::uint8_t>(), 320, 240), frame_of(m));
    EXPECT_GE(m.header().source_stamp_ns, t0);
    EXPECT_LE(m.header().source_stamp_ns, t1);
    if (i > 0) {
      EXPECT_GT(m.header().source_stamp_ns, got[i - 1].header().source_stamp_ns);
    }
  }
}

TEST(CameraSynthetic, DefaultSizeAndMaxFrames) {
  Camera cam({{"rate_hz", "200"}, {"max_frames", "5"}});
  ASSERT_OK(cam.activate());
  auto got = cam.frames(5);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // 40 more periods
  for (auto more = cam.frames(0); const auto& m : more) got.push_back(m);
  ASSERT_EQ(got.size(), 5u);
  EXPECT_EQ(got[0].pixels().shape(), (Shape{480, 640, 3}));
  EXPECT_EQ(got[0].camera(), "base_0_rgb");
  EXPECT_EQ(read_stamp(got[4].pixels().data<std::uint8_t>(), 640, 480), 4);
}

TEST(CameraSynthetic, StampReadsBackAtEverySizeItFits) {
  for (auto [w, h] : {std::pair{640, 480}, {58, 13}, {224, 224}, {1920, 1080}, {100, 20}}) {
    ASSERT_GT(CameraNode::stamp_unit(w, h), 0) << w << "x" << h;
    Bytes rgb(static_cast<std::size_t>(w) * h * 3);
    for (std::int64_t f : {0LL, 7LL, 12345678LL, 99999999LL, 100000042LL}) {
      CameraNode::draw_synthetic(f, w, h, rgb);
      EXPECT_EQ(read_stamp(rgb.data(), w, h), f % 100000000) << w << "x" << h << " frame " << f;
    }
  }
  // Too small for the stamp: the picture is still drawn.
  EXPECT_EQ(CameraNode::stamp_unit(57, 100), 0);
  EXPECT_EQ(CameraNode::stamp_unit(100, 12), 0);
  Bytes tiny(2 * 2 * 3);
  CameraNode::draw_synthetic(3, 2, 2, tiny);
  // The square moves.
  Bytes a(64 * 48 * 3), b(64 * 48 * 3);
  CameraNode::draw_synthetic(1, 64, 48, a);
  CameraNode::draw_synthetic(2, 64, 48, b);
  EXPECT_NE(a, b);
}

// Files ----------------------------------------------------------------------------------------

TEST(CameraFiles, PngAndJpegDecodeToRgb8) {
  TempDir dir;
  const int w = 64, h = 48;
  const Bytes rgb = picture(w, h, 1);
  std::vector<Bytes> expect;
  // a: rgb8 PNG, exact.
  write_png(dir / "a.png", w, h, PNG_COLOR_TYPE_RGB, 8, rgb);
  expect.push_back(rgb);
  // b: grayscale PNG -> R = G = B.
  Bytes gray(static_cast<std::size_t>(w) * h), gray_rgb;
  for (std::size_t i = 0; i < gray.size(); ++i) gray[i] = static_cast<std::uint8_t>(i * 7);
  for (std::uint8_t g : gray) gray_rgb.insert(gray_rgb.end(), {g, g, g});
  write_png(dir / "b.png", w, h, PNG_COLOR_TYPE_GRAY, 8, gray);
  expect.push_back(gray_rgb);
  // c: RGBA PNG, interlaced -> alpha dropped.
  Bytes rgba;
  for (std::size_t i = 0; i < rgb.size(); i += 3)
    rgba.insert(rgba.end(), {rgb[i], rgb[i + 1], rgb[i + 2], std::uint8_t(i)});
  write_png(dir / "c.PNG", w, h, PNG_COLOR_TYPE_RGB_ALPHA, 8, rgba, /*interlaced=*/true);
  expect.push_back(rgb);
  // d: 16-bit RGB PNG -> scaled to 8 bits (v / 257, rounded).
  Bytes rgb16, rgb16_as8;
  for (std::size_t i = 0; i < rgb.size(); ++i) {
    const int v = rgb[i] * 257 + static_cast<int>(i % 200) - 100;
    const int c = std::clamp(v, 0, 65535);
    rgb16.insert(rgb16.end(), {std::uint8_t(c >> 8), std::uint8_t(c & 0xff)});
    rgb16_as8.push_back(static_cast<std::uint8_t>(std::lround(c / 257.0)));
  }
  write_png(dir / "d.png", w, h, PNG_COLOR_TYPE_RGB, 16, rgb16);
  expect.push_back(rgb16_as8);
  // e: 2-bit palette PNG -> expanded.
  const std::vector<png_color> pal = {{0, 0, 0}, {255, 0, 0}, {10, 200, 30}, {255, 255, 255}};
  Bytes packed(static_cast<std::size_t>(w / 4) * h), pal_rgb;
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const int idx = (x / 3 + y) % 4;
      packed[y * (w / 4) + x / 4] |= static_cast<std::uint8_t>(idx << (6 - 2 * (x % 4)));
      pal_rgb.insert(pal_rgb.end(), {pal[idx].red, pal[idx].green, pal[idx].blue});
    }
  }
  write_png(dir / "e.png", w, h, PNG_COLOR_TYPE_PALETTE, 2, packed, false, pal);
  expect.push_back(pal_rgb);
  // f: JPEG (within JPEG's loss); g: grayscale JPEG.
  write_jpeg(dir / "f.jpg", w, h, 3, rgb);
  expect.push_back(rgb);
  write_jpeg(dir / "g.jpeg", w, h, 1, gray);
  expect.push_back(gray_rgb);
  write_bytes(dir / "notes.txt", {'h', 'i'});  // not an image name: ignored

  Camera cam(
      {{"source", "files"}, {"path", dir.path().string()}, {"rate_hz", "200"}, {"loop", "false"}});
  ASSERT_OK(cam.activate());
  auto got = cam.frames(expect.size());
  ASSERT_EQ(got.size(), expect.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].pixels().shape(), (Shape{h, w, 3}));
    EXPECT_EQ(got[i].encoding(), "rgb8");
    EXPECT_EQ(frame_of(got[i]), static_cast<std::int64_t>(i));
    const Diff d = diff(got[i].pixels().data<std::uint8_t>(), expect[i]);
    if (i < 3 || i == 4) {
      EXPECT_EQ(d.max_abs, 0) << "file " << i;  // PNG: exact
    } else if (i == 3) {
      EXPECT_LE(d.max_abs, 1) << "16-bit PNG";
    } else {
      EXPECT_LE(d.max_abs, 16) << "JPEG file " << i;
      EXPECT_LE(d.mean_abs, 3.0) << "JPEG file " << i;
    }
  }
}

TEST(CameraFiles, LoopsInNameOrderOrStopsAfterTheLast) {
  TempDir dir;
  const int w = 40, h = 30;
  // Written out of order: playback follows the names.
  for (int k : {2, 0, 1})
    write_png(dir / ("frame_" + std::to_string(k) + ".png"), w, h, PNG_COLOR_TYPE_RGB, 8,
              picture(w, h, k));
  {
    Camera cam({{"source", "files"}, {"path", dir.path().string()}, {"rate_hz", "200"}});
    ASSERT_OK(cam.activate());
    auto got = cam.frames(8);
    ASSERT_GE(got.size(), 8u);
    for (std::size_t i = 0; i < 8; ++i) {
      EXPECT_EQ(frame_of(got[i]), static_cast<std::int64_t>(i));
      EXPECT_EQ(diff(got[i].pixels().data<std::uint8_t>(), picture(w, h, static_cast<int>(i % 3)))
                    .max_abs,
                0)
          << i;
    }
  }
  {
    Camera cam({{"source", "files"},
                {"path", dir.path().string()},
                {"rate_hz", "200"},
                {"loop", "false"}});
    ASSERT_OK(cam.activate());
    auto got = cam.frames(3);
    std::this_thread::sleep_for(std::chrono::milliseconds(250));  // 50 more periods
    for (auto more = cam.frames(0); const auto& m : more) got.push_back(m);
    EXPECT_EQ(got.size(), 3u);
  }
}

TEST(CameraFiles, SizeOtherThanParamsIsAnActivateErrorNamingFileAndSizes) {
  TempDir dir;
  write_png(dir / "only.png", 64, 48, PNG_COLOR_TYPE_RGB, 8, picture(64, 48, 0));
  Camera cam(
      {{"source", "files"}, {"path", dir.path().string()}, {"width", "100"}, {"height", "50"}});
  const Status s = cam.activate();
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("only.png"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("64x48"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("100x50"), std::string::npos) << s.message();
  EXPECT_TRUE(cam.frames(0).empty());

  Camera match(
      {{"source", "files"}, {"path", dir.path().string()}, {"width", "64"}, {"height", "48"}});
  EXPECT_OK(match.activate());
}

TEST(CameraFiles, FilesOfDifferentSizesAreAnError) {
  TempDir dir;
  write_png(dir / "a.png", 64, 48, PNG_COLOR_TYPE_RGB, 8, picture(64, 48, 0));
  write_jpeg(dir / "b.jpg", 32, 24, 3, picture(32, 24, 0));
  Camera cam({{"source", "files"}, {"path", dir.path().string()}});
  const Status s = cam.activate();
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("b.jpg"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("32x24"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("a.png"), std::string::npos) << s.message();
}

TEST(CameraFiles, CorruptFilesAreActivateErrorsNamingTheFile) {
  const Bytes good_jpeg = encode_jpeg(64, 48, 3, picture(64, 48, 0));
  struct Case {
    const char* name;
    Bytes bytes;
  };
  Bytes truncated_png;
  {
    TempDir scratch;
    write_png(scratch / "t.png", 64, 48, PNG_COLOR_TYPE_RGB, 8, picture(64, 48, 0));
    std::ifstream f(scratch / "t.png", std::ios::binary);
    truncated_png.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    truncated_png.resize(truncated_png.size() / 2);
  }
  const Bytes signature_only(truncated_png.begin(), truncated_png.begin() + 8);
  const std::vector<Case> cases = {
      {"garbage.png", {'n', 'o', 't', ' ', 'a', 'n', ' ', 'i', 'm', 'a', 'g', 'e'}},
      {"empty.jpg", {}},
      {"truncated.jpg",
       Bytes(good_jpeg.begin(), good_jpeg.begin() + static_cast<long>(good_jpeg.size() / 2))},
      {"headless.jpg", Bytes(good_jpeg.begin(), good_jpeg.begin() + 20)},
      {"truncated.png", truncated_png},
      {"signature_only.png", signature_only},
  };
  for (const Case& c : cases) {
    TempDir dir;
    write_png(dir / "0_good.png", 64, 48, PNG_COLOR_TYPE_RGB, 8, picture(64, 48, 0));
    write_bytes(dir / c.name, c.bytes);
    Camera cam({{"source", "files"}, {"path", dir.path().string()}});
    const Status s = cam.activate();
    ASSERT_FALSE(s.is_ok()) << c.name;
    EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.to_string();
    EXPECT_NE(s.message().find(c.name), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("'cam'"), std::string::npos) << s.message();
  }
}

TEST(CameraFiles, MissingOrEmptyFolderAndMissingPath) {
  TempDir dir;
  {
    Camera cam({{"source", "files"}, {"path", dir.path().string()}});
    const Status s = cam.activate();
    EXPECT_EQ(s.code(), StatusCode::kNotFound) << s.to_string();
    EXPECT_NE(s.message().find(dir.path().string()), std::string::npos) << s.message();
  }
  {
    Camera cam({{"source", "files"}, {"path", (dir / "nope").string()}});
    const Status s = cam.activate();
    EXPECT_EQ(s.code(), StatusCode::kNotFound) << s.to_string();
    EXPECT_NE(s.message().find("nope"), std::string::npos) << s.message();
  }
  {
    Camera cam({{"source", "files"}});  // caught at configure, before anything runs
    ASSERT_FALSE(cam.added.is_ok());
    EXPECT_NE(cam.added.message().find("path"), std::string::npos) << cam.added.message();
  }
}

TEST(CameraFiles, DecodeCacheLimitIsEnforced) {
  TempDir dir;
  for (int k = 0; k < 3; ++k)
    write_png(dir / (std::to_string(k) + ".png"), 512, 512, PNG_COLOR_TYPE_RGB, 8,
              picture(512, 512, k));
  Camera cam({{"source", "files"}, {"path", dir.path().string()}, {"max_cache_mb", "1"}});
  const Status s = cam.activate();
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.to_string();
  EXPECT_NE(s.message().find("max_cache_mb"), std::string::npos) << s.message();
}

TEST(CameraFiles, ImagesOverTheSideLimitAreRefusedFromTheHeader) {
  TempDir dir;
  const Bytes rgb = picture(64, 48, 3);
  write_png(dir / "a.png", 64, 48, PNG_COLOR_TYPE_RGB, 8, rgb);
  std::ifstream f(dir / "a.png", std::ios::binary);
  const Bytes png{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  const Bytes jpeg = encode_jpeg(64, 48, 3, rgb);
  for (const Bytes* b : {&png, &jpeg}) {
    auto over = decode_image(*b, "frames/a", 32);
    ASSERT_FALSE(over.has_value());
    EXPECT_EQ(over.status().code(), *b == png ? StatusCode::kDataLoss : StatusCode::kInvalidArgument);
    EXPECT_NE(over.status().message().find("frames/a"), std::string::npos) << over.status().message();
    EXPECT_NE(over.status().message().find("64x48"), std::string::npos) << over.status().message();
    EXPECT_NE(over.status().message().find("32x32"), std::string::npos) << over.status().message();
    auto fits = decode_image(*b, "frames/a", 64);
    ASSERT_TRUE(fits.has_value()) << fits.status().to_string();
    EXPECT_EQ(fits->width, 64);
    EXPECT_EQ(fits->height, 48);
  }
}

TEST(CameraFiles, JpegIntoAFixedBuffer) {
  const Bytes rgb = picture(64, 48, 2);
  const Bytes jpeg = encode_jpeg(64, 48, 3, rgb);
  Bytes out(64 * 48 * 3);
  ASSERT_OK(decode_jpeg_into(jpeg, 64, 48, out, JpegWarnings::kReject, "m"));
  EXPECT_LE(diff(out.data(), rgb).max_abs, 16);
  Bytes tall(64 * 96 * 3);
  const Status wrong = decode_jpeg_into(jpeg, 64, 96, tall, JpegWarnings::kReject, "m");
  EXPECT_NE(wrong.message().find("64x48"), std::string::npos) << wrong.message();
  // A cut frame is kept by the camera (lenient) path and refused by the file path.
  const Bytes cut(jpeg.begin(), jpeg.begin() + static_cast<long>(jpeg.size() * 3 / 4));
  EXPECT_OK(decode_jpeg_into(cut, 64, 48, out, JpegWarnings::kTolerate, "m"));
  EXPECT_EQ(decode_jpeg_into(cut, 64, 48, out, JpegWarnings::kReject, "m").code(),
            StatusCode::kDataLoss);
  // Many webcams send MJPEG without Huffman tables (DHT segments); the standard ones apply.
  Bytes no_dht;
  for (std::size_t i = 0; i < jpeg.size();) {
    if (i + 3 < jpeg.size() && jpeg[i] == 0xff && jpeg[i + 1] == 0xc4) {
      i += 2 + (jpeg[i + 2] << 8 | jpeg[i + 3]);  // skip the segment
      continue;
    }
    if (i + 1 < jpeg.size() && jpeg[i] == 0xff &&
        jpeg[i + 1] == 0xda) {  // start of scan: copy the rest
      no_dht.insert(no_dht.end(), jpeg.begin() + static_cast<long>(i), jpeg.end());
      break;
    }
    no_dht.push_back(jpeg[i++]);
  }
  ASSERT_LT(no_dht.size(), jpeg.size());
  Bytes with_tables(out.size()), without(out.size());
  ASSERT_OK(decode_jpeg_into(jpeg, 64, 48, with_tables, JpegWarnings::kReject, "m"));
  ASSERT_OK(decode_jpeg_into(no_dht, 64, 48, without, JpegWarnings::kTolerate, "m"));
  EXPECT_EQ(without, with_tables);
}

// V4L2 -----------------------------------------------------------------------------------------

Status activate_v4l2(const std::string& device) {
  Camera cam({{"source", "v4l2"}, {"device", device}});
  return cam.activate();
}

TEST(CameraV4l2, OpenErrorsNameTheDeviceAndTheFix) {
  const Status missing = activate_v4l2("/dev/video99");
  EXPECT_EQ(missing.code(), StatusCode::kNotFound) << missing.to_string();
  EXPECT_NE(missing.message().find("/dev/video99"), std::string::npos) << missing.message();
  EXPECT_NE(missing.message().find("does not exist"), std::string::npos) << missing.message();
  EXPECT_NE(missing.message().find("'device'"), std::string::npos) << missing.message();

  TempDir dir;
  write_bytes(dir / "video0", {1, 2, 3});
  const Status regular = activate_v4l2((dir / "video0").string());
  EXPECT_EQ(regular.code(), StatusCode::kInvalidArgument) << regular.to_string();
  EXPECT_NE(regular.message().find((dir / "video0").string()), std::string::npos)
      << regular.message();
  EXPECT_NE(regular.message().find("regular file"), std::string::npos) << regular.message();

  const Status null = activate_v4l2("/dev/null");
  EXPECT_EQ(null.code(), StatusCode::kInvalidArgument) << null.to_string();
  EXPECT_NE(null.message().find("/dev/null"), std::string::npos) << null.message();
  EXPECT_NE(null.message().find("not a V4L2"), std::string::npos) << null.message();
}

TEST(CameraV4l2, BadParamsAreConfigureErrors) {
  Camera format({{"source", "v4l2"}, {"pixel_format", "h264"}});
  EXPECT_FALSE(format.added.is_ok());
  EXPECT_NE(format.added.message().find("pixel_format"), std::string::npos)
      << format.added.message();
  Camera source({{"source", "usb"}});
  EXPECT_FALSE(source.added.is_ok());
  Camera device({{"source", "v4l2"}, {"device", "\"\""}});
  EXPECT_FALSE(device.added.is_ok());
}

// Reference BT.601 limited-range conversion in floating point.
std::array<int, 3> yuv_reference(int y, int u, int v) {
  const double c = 1.164 * (y - 16);
  auto q = [](double x) { return std::clamp(static_cast<int>(std::lround(x)), 0, 255); };
  return {q(c + 1.596 * (v - 128)), q(c - 0.392 * (u - 128) - 0.813 * (v - 128)),
          q(c + 2.017 * (u - 128))};
}

TEST(CameraV4l2, YuyvToRgbMatchesBt601WithinOne) {
  // Every (Y, U, V) on a grid, as pixel pairs; rows padded to a stride like drivers do.
  std::vector<std::array<int, 3>> yuv;
  for (int y = 0; y <= 255; y += 15)
    for (int u = 0; u <= 255; u += 17)
      for (int v = 0; v <= 255; v += 17) yuv.push_back({y, u, v});
  const int width = 2 * static_cast<int>(yuv.size());
  const int stride = width * 2 + 16;
  Bytes src(stride * 2, 0xee);
  for (std::size_t i = 0; i < yuv.size(); ++i) {
    for (int row = 0; row < 2; ++row) {
      std::uint8_t* p = &src[row * stride + i * 4];
      p[0] = static_cast<std::uint8_t>(yuv[i][0]);
      p[1] = static_cast<std::uint8_t>(yuv[i][1]);
      p[2] = static_cast<std::uint8_t>(255 - yuv[i][0]);  // second pixel of the pair
      p[3] = static_cast<std::uint8_t>(yuv[i][2]);
    }
  }
  Bytes rgb(static_cast<std::size_t>(width) * 2 * 3);
  yuyv_to_rgb(src, width, 2, stride, rgb);
  int worst = 0;
  for (int row = 0; row < 2; ++row) {
    for (std::size_t i = 0; i < yuv.size(); ++i) {
      for (int k = 0; k < 2; ++k) {
        const int y = k == 0 ? yuv[i][0] : 255 - yuv[i][0];
        const auto want = yuv_reference(y, yuv[i][1], yuv[i][2]);
        const std::uint8_t* got = &rgb[(static_cast<std::size_t>(row) * width + 2 * i + k) * 3];
        for (int c = 0; c < 3; ++c) worst = std::max(worst, std::abs(got[c] - want[c]));
      }
    }
  }
  EXPECT_LE(worst, 1);
  // An odd width converts its last, unpaired pixel too.
  const Bytes odd = {100, 90, 110, 160, 200, 128, 0, 128};
  Bytes odd_rgb(3 * 3);
  yuyv_to_rgb(odd, 3, 1, 8, odd_rgb);
  EXPECT_EQ(odd_rgb[6], yuv_reference(200, 128, 128)[0]);
}

// A real camera, only where one is attached.
TEST(CameraV4l2, CapturesFromVideo0WhenPresent) {
  const int fd = ::open("/dev/video0", O_RDWR | O_NONBLOCK);
  if (fd < 0) GTEST_SKIP() << "no /dev/video0 here: real V4L2 capture is not tested";
  v4l2_capability cap{};
  const bool capture =
      ::ioctl(fd, VIDIOC_QUERYCAP, &cap) == 0 &&
      (((cap.capabilities & V4L2_CAP_DEVICE_CAPS) ? cap.device_caps : cap.capabilities) &
       V4L2_CAP_VIDEO_CAPTURE) != 0;
  ::close(fd);
  if (!capture) GTEST_SKIP() << "/dev/video0 is not a video capture device";
  for (const char* format : {"mjpeg", "yuyv"}) {
    Camera cam({{"source", "v4l2"}, {"device", "/dev/video0"}, {"pixel_format", format}}, "v4l2");
    const Status s = cam.activate();
    if (s.code() == StatusCode::kInvalidArgument) continue;  // format not offered: try the next
    ASSERT_OK(s);
    const std::int64_t t0 = wall_now_ns();
    auto got = cam.frames(3);
    ASSERT_GE(got.size(), 3u) << "no frames from /dev/video0 (" << format << ") in 10 s";
    for (std::size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(got[i].pixels().shape()[2], 3);
      EXPECT_EQ(frame_of(got[i]), static_cast<std::int64_t>(i));
      EXPECT_GT(got[i].header().source_stamp_ns, t0 - 2'000'000'000);
      EXPECT_LE(got[i].header().source_stamp_ns, wall_now_ns());
    }
    ASSERT_OK(cam.host->deactivate_all());  // stops streaming cleanly
    return;
  }
  GTEST_SKIP() << "/dev/video0 offers neither MJPEG nor YUYV";
}

// The demo launch file ----------------------------------------------------------------------------

TEST(CameraLaunch, DemoLaunchFileValidates) {
  auto d = load_launch(testing::source_dir() + "/launch/camera_demo.yaml", {});
  ASSERT_TRUE(d.has_value()) << d.status().to_string();
}

}  // namespace
}  // namespace edgevla::nodes
