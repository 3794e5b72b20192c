// Still images for the camera node: PNG (libpng) and JPEG (libjpeg-turbo) decoding to rgb8,
// and listing a folder of them. Decoders never print and never exit: every libpng/libjpeg
// error comes back as a Status naming what was being decoded.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "runtime/core/status.hpp"

namespace edgevla::nodes {

// rgb8, rows packed (stride width * 3).
struct RgbImage {
  int width = 0;
  int height = 0;
  std::vector<std::uint8_t> pixels;
};

// What a JPEG decoder does with data libjpeg only warns about (a truncated file, bytes
// before a marker): files are rejected, camera MJPEG frames (which often carry such
// harmless padding) are kept.
enum class JpegWarnings { kReject, kTolerate };

// The largest side the camera node publishes (its params' limit).
inline constexpr int kMaxImageSide = 16384;

// Decodes PNG or JPEG bytes (told apart by their signature, not the file name) to rgb8:
// grayscale becomes R=G=B, alpha is dropped, 16-bit samples are scaled to 8 bits, palettes
// are expanded. `what` names the source in errors ("frames/0003.png"). An image with a side
// over `max_side` is refused from its header, before any pixel memory is taken (a few
// hundred bytes may claim 16384 x 16384 x 3 = 805 MB).
Expected<RgbImage> decode_image(std::span<const std::uint8_t> bytes, const std::string& what,
                                int max_side = kMaxImageSide);

// Reads and decodes one file.
Expected<RgbImage> decode_image_file(const std::string& path);

// Decodes a JPEG of exactly `width` x `height` straight into `out` (width * height * 3
// bytes): the camera's MJPEG path, which writes into a loaned buffer. A JPEG of another
// size is an error.
Status decode_jpeg_into(std::span<const std::uint8_t> jpeg, int width, int height,
                        std::span<std::uint8_t> out, JpegWarnings warnings,
                        const std::string& what);

// The PNG and JPEG files (by extension: .png, .jpg, .jpeg, any case) directly in `folder`,
// sorted by name. Errors when the folder cannot be read or holds none.
Expected<std::vector<std::string>> list_image_files(const std::string& folder);

}  // namespace edgevla::nodes
