// Image pre-processing of pi0 / pi0.5 (docs/model.md §9.4): openpi's resize-with-pad (PIL's
// antialiasing BILINEAR resize, rounded to uint8, pasted centred on a black square) and the
// uint8 -> [-1, 1] float conversion into the CHW layout SigLIP reads.
//
// The resize reproduces PIL's 8-bit resampler byte for byte: per axis, each output pixel is a
// weighted sum of the input pixels under a triangle filter whose support grows with the
// downscale factor; the weights are normalized, rounded to 22-bit fixed point, and the two
// passes (horizontal, then vertical) each round to uint8.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "runtime/core/status.hpp"
#include "runtime/core/tensor.hpp"
#include "runtime/model/row_pass.hpp"

namespace edgevla::model {

// Channel layouts of an Image message that the model accepts (msgs/types.hpp encodings).
enum class PixelFormat { kRgb8, kBgr8, kRgba8, kMono8 };

// "rgb8", "bgr8", "rgba8", "mono8"; any other encoding is an error naming the accepted ones.
Expected<PixelFormat> parse_pixel_format(std::string_view encoding);
int channels_of(PixelFormat format);

// Where openpi puts a width x height image on the size x size canvas: ratio = max(w, h) / size
// (per axis, in double), new_w = int(w / ratio), new_h = int(h / ratio), offsets
// int((size - new) / 2) (the odd pixel goes right/bottom). An image that shrinks to 0 pixels
// along an axis is an error (PIL refuses it too).
struct PadGeometry {
  int new_width = 0, new_height = 0;
  int left = 0, top = 0;
};
Expected<PadGeometry> pad_geometry(int width, int height, int size);

// Resize-with-pad with cached weights: keep one per camera, so a stream of same-sized frames
// computes its filter weights once and allocates nothing per frame.
class ImageResizer final {
 public:
  // Writes `pixels` (u8 [H, W, C], any strides, channels per `format`) as RGB into `out`
  // (u8 [size, size, 3], contiguous, allocated by the caller; `size` is taken from it). Every
  // check comes before the first write: on error `out` is left as it was.
  Status resize_with_pad(const Tensor& pixels, PixelFormat format, Tensor& out);

 private:
  // Weights of one axis: output i reads `count[i]` inputs from `first[i]` with the
  // fixed-point weights at weights[i * taps ...].
  struct Axis {
    int in = -1, out = -1;
    int taps = 0;
    std::vector<int> first, count;
    std::vector<std::int32_t> weights;
  };
  static void plan_axis(int in, int out, Axis& axis);
  // The horizontal axis as a pass along rows (row_pass.hpp) over `channels` bytes a pixel,
  // reading source channel map[c] for R, G, B; kept while the same.
  void plan_rows(int channels, const std::array<int, 3>& map);

  Axis horizontal_, vertical_;
  RowTaps<std::int32_t> rows_taps_;
  int rows_for_in_ = -1;  // the input width rows_taps_ was planned for (its out_width the output's)
  std::vector<std::uint8_t> rows_;  // horizontal pass output: the rows the vertical pass reads
  std::vector<std::int32_t> acc_;   // one output row's fixed-point sums (either pass)
};

// An 8-bit frame (u8 [H, W, C], any strides, channels per `format`) as packed RGB [H][W][3]
// in `rgb` (resized to fit; its capacity is reused frame after frame). Every check comes
// before the first write: on error `rgb` is left as it was. For families that transform the
// whole frame themselves (GR00T's image pipeline).
Status to_rgb8(const Tensor& pixels, PixelFormat format, std::vector<std::uint8_t>& rgb);

// One-shot form (a new resizer and output tensor each call); `encoding` as in the Image message.
Expected<Tensor> resize_with_pad(const Tensor& hwc_u8, int size, std::string_view encoding = "rgb8");

// u8 [S, S, 3] RGB -> f32 [3, S, S], each value v / 255 * 2 - 1 evaluated in float32 in that
// order (openpi's conversion). `out` is allocated by the caller (e.g. loaned shared memory).
Status to_model_input(const Tensor& hwc_u8, Tensor& out_chw_f32);
Expected<Tensor> to_model_input(const Tensor& hwc_u8);

}  // namespace edgevla::model
