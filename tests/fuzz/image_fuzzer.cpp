// libFuzzer target for the camera node's still-image decoders (nodes/camera/image_files.cpp):
// PNG through libpng, JPEG through libjpeg-turbo, told apart by their signature.
//
// Properties on every input: decode_image never crashes, hangs, leaks or hits UB (libpng's
// and libjpeg's longjmp error paths included) and a rejection has a message; an accepted
// image has width * height * 3 bytes of pixels. For a JPEG, the camera's MJPEG path
// (decode_jpeg_into at the decoded size) gives the same pixels, and at a wrong size it fails
// with a message; with warnings tolerated it decodes whatever decode_image decodes.
//
// Seeds (tests/fuzz/corpus/image/): small PNGs (gray, gray+alpha, rgb, rgba, palette, 16-bit,
// interlaced) and JPEGs (gray, rgb, progressive), whole and cut short.
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "nodes/camera/image_files.hpp"
#include "tests/fuzz/fuzz_util.hpp"

namespace {
constexpr const char* kTarget = "image_fuzzer";
constexpr int kMaxFuzzSide = 256;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace edgevla;
  using nodes::JpegWarnings;
  const std::span<const std::uint8_t> bytes(data, size);
  // Sides up to 256 (192 KB of pixels): the size check is the same code at any limit, and a
  // header claiming the camera's 16384 x 16384 would make each such input an 805 MB zero fill.
  auto img = nodes::decode_image(bytes, "fuzz/input", kMaxFuzzSide);
  const bool jpeg = size >= 2 && data[0] == 0xFF && data[1] == 0xD8;
  if (!img) {
    FUZZ_CHECK(!img.status().message().empty(), "");
    if (jpeg) {
      // The camera path on frames the file path rejects (MJPEG padding is tolerated there).
      std::vector<std::uint8_t> out(16 * 16 * 3);
      const Status st = nodes::decode_jpeg_into(bytes, 16, 16, out, JpegWarnings::kTolerate, "fuzz/mjpeg");
      FUZZ_CHECK(st.is_ok() || !st.message().empty(), "");
    }
    return 0;
  }
  FUZZ_CHECK(img->width > 0 && img->height > 0, "");
  FUZZ_CHECK(img->pixels.size() == static_cast<std::size_t>(img->width) * static_cast<std::size_t>(img->height) * 3,
             std::to_string(img->width) + "x" + std::to_string(img->height));
  if (!jpeg) return 0;
  std::vector<std::uint8_t> out(img->pixels.size());
  for (JpegWarnings w : {JpegWarnings::kReject, JpegWarnings::kTolerate}) {
    const Status st = nodes::decode_jpeg_into(bytes, img->width, img->height, out, w, "fuzz/mjpeg");
    FUZZ_CHECK(st.is_ok(), st.to_string());
    FUZZ_CHECK(std::memcmp(out.data(), img->pixels.data(), out.size()) == 0, "MJPEG path decodes other pixels");
  }
  std::vector<std::uint8_t> wrong(static_cast<std::size_t>(img->width + 1) * img->height * 3);
  const Status st = nodes::decode_jpeg_into(bytes, img->width + 1, img->height, wrong, JpegWarnings::kTolerate,
                                            "fuzz/mjpeg");
  FUZZ_CHECK(!st.is_ok() && !st.message().empty(), "a JPEG decoded at a size it does not have");
  return 0;
}
