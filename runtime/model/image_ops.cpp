#include "runtime/model/image_ops.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <type_traits>

namespace edgevla::model {
namespace {

// Fixed-point weights: 32 bits minus 8 for the pixel value and 2 of headroom, as PIL's 8-bit
// resampler uses, so the rounding matches it exactly.
constexpr int kPrecisionBits = 22;
constexpr std::int32_t kHalf = 1 << (kPrecisionBits - 1);

// PIL's BILINEAR filter: a triangle of radius 1 (scaled by the downscale factor).
double triangle(double x) {
  x = std::abs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

std::uint8_t clip8(std::int32_t acc) {
  return static_cast<std::uint8_t>(std::clamp(acc >> kPrecisionBits, 0, 255));
}

std::string size_text(std::int64_t w, std::int64_t h) {
  return std::to_string(w) + "x" + std::to_string(h);
}

Status check_cpu(const Tensor& t, std::string_view what) {
  if (!t.defined()) return invalid_argument(std::string(what) + " tensor is empty");
  if (!t.device().is_cpu()) {
    return failed_precondition(std::string(what) + " is on " + t.device().to_string() +
                               "; image pre-processing runs on the CPU");
  }
  return Status::ok();
}

}  // namespace

Expected<PixelFormat> parse_pixel_format(std::string_view encoding) {
  if (encoding == "rgb8") return PixelFormat::kRgb8;
  if (encoding == "bgr8") return PixelFormat::kBgr8;
  if (encoding == "rgba8") return PixelFormat::kRgba8;
  if (encoding == "mono8") return PixelFormat::kMono8;
  return invalid_argument("image encoding '" + std::string(encoding) +
                          "' is not accepted by the policy (use rgb8, bgr8, rgba8 or mono8)");
}

int channels_of(PixelFormat format) {
  switch (format) {
    case PixelFormat::kRgba8: return 4;
    case PixelFormat::kMono8: return 1;
    default: return 3;
  }
}

Expected<PadGeometry> pad_geometry(int width, int height, int size) {
  if (width < 1 || height < 1 || size < 1) {
    return invalid_argument("cannot resize a " + size_text(width, height) + " image to " +
                            size_text(size, size));
  }
  // openpi's arithmetic, in double with truncating conversions.
  const double ratio = std::max(static_cast<double>(width) / size, static_cast<double>(height) / size);
  PadGeometry g;
  g.new_width = static_cast<int>(static_cast<double>(width) / ratio);
  g.new_height = static_cast<int>(static_cast<double>(height) / ratio);
  if (g.new_width < 1 || g.new_height < 1) {
    return invalid_argument("a " + size_text(width, height) + " image resizes to " +
                            size_text(g.new_width, g.new_height) + " on a " +
                            size_text(size, size) + " canvas; its aspect ratio is too extreme");
  }
  g.left = (size - g.new_width) / 2;
  g.top = (size - g.new_height) / 2;
  return g;
}

void ImageResizer::plan_axis(int in, int out, Axis& a) {
  if (a.in == in && a.out == out) return;
  a.in = in;
  a.out = out;
  // Each step mirrors PIL's double arithmetic (operation order included), so the rounded
  // weights, and with them the output bytes, are the same.
  const double scale = static_cast<double>(in) / out;
  const double filterscale = std::max(scale, 1.0);  // widen the filter when downscaling
  const double support = 1.0 * filterscale;
  const double inv = 1.0 / filterscale;
  a.taps = static_cast<int>(std::ceil(support)) * 2 + 1;
  a.first.assign(static_cast<std::size_t>(out), 0);
  a.count.assign(static_cast<std::size_t>(out), 0);
  a.weights.assign(static_cast<std::size_t>(out) * static_cast<std::size_t>(a.taps), 0);
  std::vector<double> k(static_cast<std::size_t>(a.taps));
  for (int i = 0; i < out; ++i) {
    const double center = (i + 0.5) * scale;
    const int lo = std::max(static_cast<int>(center - support + 0.5), 0);
    const int hi = std::min(static_cast<int>(center + support + 0.5), in);
    const int n = hi - lo;
    double sum = 0.0;
    for (int t = 0; t < n; ++t) {
      const double w = triangle((static_cast<double>(t + lo) - center + 0.5) * inv);
      k[static_cast<std::size_t>(t)] = w;
      sum += w;
    }
    std::int32_t* dst = &a.weights[static_cast<std::size_t>(i) * static_cast<std::size_t>(a.taps)];
    for (int t = 0; t < n; ++t) {
      const double w = sum != 0.0 ? k[static_cast<std::size_t>(t)] / sum : k[static_cast<std::size_t>(t)];
      dst[t] = static_cast<std::int32_t>(0.5 + w * (1 << kPrecisionBits));  // w >= 0
    }
    a.first[static_cast<std::size_t>(i)] = lo;
    a.count[static_cast<std::size_t>(i)] = n;
  }
}

void ImageResizer::plan_rows(int channels, const std::array<int, 3>& map) {
  const Axis& a = horizontal_;
  if (rows_for_in_ == a.in && rows_taps_.out_width == a.out && rows_taps_.channels == channels && rows_taps_.map == map) {
    return;
  }
  rows_taps_ = row_taps<std::int32_t>(a.out, a.taps, channels, map);
  rows_taps_.start = a.first;
  rows_taps_.count = a.count;
  rows_taps_.k = a.weights;
  plan_blocks(rows_taps_);
  rows_for_in_ = a.in;
}

Status to_rgb8(const Tensor& pixels, PixelFormat format, std::vector<std::uint8_t>& rgb) {
  EDGEVLA_RETURN_IF_ERROR(check_cpu(pixels, "image"));
  const int channels = channels_of(format);
  if (pixels.dtype() != DType::kU8 || pixels.rank() != 3 || pixels.shape()[2] != channels) {
    return invalid_argument("image must be u8 [H, W, " + std::to_string(channels) +
                            "] for its encoding, got " + pixels.describe());
  }
  const std::int64_t h = pixels.shape()[0], w = pixels.shape()[1];
  if (h <= 0 || w <= 0 || h > (1 << 16) || w > (1 << 16)) {
    return invalid_argument("image " + size_text(w, h) + " is empty or too large");
  }
  EDGEVLA_ASSIGN_OR_RETURN(const Tensor src_t, pixels.contiguous());
  const std::uint8_t* src = src_t.data<std::uint8_t>();
  const auto n = static_cast<std::size_t>(h * w);
  rgb.resize(n * 3);
  std::uint8_t* dst = rgb.data();
  switch (format) {
    case PixelFormat::kRgb8:
      std::copy(src, src + n * 3, dst);
      break;
    case PixelFormat::kBgr8:
      for (std::size_t i = 0; i < n; ++i) {
        dst[3 * i] = src[3 * i + 2];
        dst[3 * i + 1] = src[3 * i + 1];
        dst[3 * i + 2] = src[3 * i];
      }
      break;
    case PixelFormat::kRgba8:
      for (std::size_t i = 0; i < n; ++i) {
        dst[3 * i] = src[4 * i];
        dst[3 * i + 1] = src[4 * i + 1];
        dst[3 * i + 2] = src[4 * i + 2];
      }
      break;
    case PixelFormat::kMono8:
      for (std::size_t i = 0; i < n; ++i) dst[3 * i] = dst[3 * i + 1] = dst[3 * i + 2] = src[i];
      break;
  }
  return Status::ok();
}

Status ImageResizer::resize_with_pad(const Tensor& pixels, PixelFormat format, Tensor& out) {
  EDGEVLA_RETURN_IF_ERROR(check_cpu(pixels, "image"));
  EDGEVLA_RETURN_IF_ERROR(check_cpu(out, "resize output"));
  const int channels = channels_of(format);
  if (pixels.dtype() != DType::kU8 || pixels.rank() != 3 || pixels.shape()[2] != channels) {
    return invalid_argument("image must be u8 [H, W, " + std::to_string(channels) +
                            "] for its encoding, got " + pixels.describe());
  }
  if (out.dtype() != DType::kU8 || out.rank() != 3 || out.shape()[0] != out.shape()[1] ||
      out.shape()[2] != 3 || !out.is_contiguous()) {
    return invalid_argument("resize output must be a contiguous u8 [S, S, 3], got " + out.describe());
  }
  const std::int64_t h64 = pixels.shape()[0], w64 = pixels.shape()[1];
  const int size = static_cast<int>(out.shape()[0]);
  if (h64 > (1 << 20) || w64 > (1 << 20)) {
    return invalid_argument("image " + size_text(w64, h64) + " is too large to resize");
  }
  const int h = static_cast<int>(h64), w = static_cast<int>(w64);
  EDGEVLA_ASSIGN_OR_RETURN(const PadGeometry g, pad_geometry(w, h, size));
  EDGEVLA_ASSIGN_OR_RETURN(const Tensor src_t, pixels.contiguous());
  const std::uint8_t* src = src_t.data<std::uint8_t>();
  std::uint8_t* dst = out.data<std::uint8_t>();

  // Source channel read for each of R, G, B.
  std::array<int, 3> map = {0, 1, 2};
  if (format == PixelFormat::kBgr8) map = {2, 1, 0};
  if (format == PixelFormat::kMono8) map = {0, 0, 0};

  const bool resize_x = g.new_width != w, resize_y = g.new_height != h;
  plan_axis(w, g.new_width, horizontal_);
  plan_axis(h, g.new_height, vertical_);
  // Rows of the input the vertical pass reads (all of them when it does not resize).
  const int row0 = resize_y ? vertical_.first.front() : 0;
  const int row1 = resize_y ? vertical_.first.back() + vertical_.count.back() : h;
  const std::size_t row_len = static_cast<std::size_t>(g.new_width) * 3;
  rows_.resize(static_cast<std::size_t>(row1 - row0) * row_len);
  acc_.resize(row_len);

  // Horizontal pass (a pass along rows, row_pass.hpp) or a plain channel reorder into packed RGB
  // rows. The channel count is a template argument so the reorder compiles to fixed strides.
  if (resize_x) plan_rows(channels, map);
  const std::size_t src_bytes = static_cast<std::size_t>(h) * static_cast<std::size_t>(w) * static_cast<std::size_t>(channels);
  auto run = [&]<int C>(std::integral_constant<int, C>) {
    for (int y = row0; y < row1; ++y) {
      const std::size_t at = static_cast<std::size_t>(y) * static_cast<std::size_t>(w) * C;
      const std::uint8_t* in = src + at;
      std::uint8_t* o = rows_.data() + static_cast<std::size_t>(y - row0) * row_len;
      if (resize_x) {
        row_pass(rows_taps_, in, src_bytes - at, kHalf, acc_.data());
        for (std::size_t x = 0; x < row_len; ++x) o[x] = clip8(acc_[x]);
      } else {
        for (int x = 0; x < w; ++x, in += C, o += 3) {
          o[0] = in[map[0]];
          o[1] = in[map[1]];
          o[2] = in[map[2]];
        }
      }
    }
  };
  switch (channels) {
    case 1: run(std::integral_constant<int, 1>{}); break;
    case 4: run(std::integral_constant<int, 4>{}); break;
    default: run(std::integral_constant<int, 3>{}); break;
  }

  // Black canvas, then the vertical pass (or a copy) straight into its place.
  std::memset(dst, 0, out.nbytes());
  const std::size_t canvas_row = static_cast<std::size_t>(size) * 3;
  for (int y = 0; y < g.new_height; ++y) {
    std::uint8_t* o = dst + static_cast<std::size_t>(y + g.top) * canvas_row +
                      static_cast<std::size_t>(g.left) * 3;
    if (!resize_y) {
      std::memcpy(o, rows_.data() + static_cast<std::size_t>(y) * row_len, row_len);
      continue;
    }
    const std::int32_t* k = &vertical_.weights[static_cast<std::size_t>(y) * vertical_.taps];
    const std::uint8_t* base =
        rows_.data() + static_cast<std::size_t>(vertical_.first[static_cast<std::size_t>(y)] - row0) * row_len;
    const int n = vertical_.count[static_cast<std::size_t>(y)];
    // Row by row into 32-bit sums: the inner loop runs along x and vectorizes.
    std::fill(acc_.begin(), acc_.end(), kHalf);
    for (int t = 0; t < n; ++t) {
      const std::uint8_t* p = base + static_cast<std::size_t>(t) * row_len;
      const std::int32_t kt = k[t];
      for (std::size_t x = 0; x < row_len; ++x) acc_[x] += p[x] * kt;
    }
    for (std::size_t x = 0; x < row_len; ++x) o[x] = clip8(acc_[x]);
  }
  return Status::ok();
}

Expected<Tensor> resize_with_pad(const Tensor& hwc_u8, int size, std::string_view encoding) {
  EDGEVLA_ASSIGN_OR_RETURN(const PixelFormat format, parse_pixel_format(encoding));
  EDGEVLA_ASSIGN_OR_RETURN(Tensor out, Tensor::empty(DType::kU8, Shape{size, size, 3}));
  ImageResizer resizer;
  EDGEVLA_RETURN_IF_ERROR(resizer.resize_with_pad(hwc_u8, format, out));
  return out;
}

Status to_model_input(const Tensor& hwc_u8, Tensor& out) {
  EDGEVLA_RETURN_IF_ERROR(check_cpu(hwc_u8, "image"));
  EDGEVLA_RETURN_IF_ERROR(check_cpu(out, "model input"));
  if (hwc_u8.dtype() != DType::kU8 || hwc_u8.rank() != 3 || hwc_u8.shape()[2] != 3) {
    return invalid_argument("model input conversion needs u8 [H, W, 3] RGB, got " + hwc_u8.describe());
  }
  const std::int64_t h = hwc_u8.shape()[0], w = hwc_u8.shape()[1];
  if (out.dtype() != DType::kF32 || !(out.shape() == Shape{3, h, w}) || !out.is_contiguous()) {
    return invalid_argument("model input must be a contiguous f32 " + Shape{3, h, w}.to_string() +
                            ", got " + out.describe());
  }
  // Every u8 value has one float result; a table keeps the float32 evaluation order exact.
  static const std::array<float, 256> kTable = [] {
    std::array<float, 256> t{};
    for (int v = 0; v < 256; ++v) t[static_cast<std::size_t>(v)] = static_cast<float>(v) / 255.0f * 2.0f - 1.0f;
    return t;
  }();
  EDGEVLA_ASSIGN_OR_RETURN(const Tensor in_t, hwc_u8.contiguous());
  const std::uint8_t* in = in_t.data<std::uint8_t>();
  const std::size_t plane = static_cast<std::size_t>(h * w);
  float* r = out.data<float>();
  float* g = r + plane;
  float* b = g + plane;
  for (std::size_t i = 0; i < plane; ++i, in += 3) {
    r[i] = kTable[in[0]];
    g[i] = kTable[in[1]];
    b[i] = kTable[in[2]];
  }
  return Status::ok();
}

Expected<Tensor> to_model_input(const Tensor& hwc_u8) {
  if (hwc_u8.rank() != 3) {
    return invalid_argument("model input conversion needs u8 [H, W, 3], got " + hwc_u8.describe());
  }
  EDGEVLA_ASSIGN_OR_RETURN(Tensor out,
                           Tensor::empty(DType::kF32, Shape{3, hwc_u8.shape()[0], hwc_u8.shape()[1]}));
  EDGEVLA_RETURN_IF_ERROR(to_model_input(hwc_u8, out));
  return out;
}

}  // namespace edgevla::model
