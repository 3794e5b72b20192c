#include "nodes/camera/image_files.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

// jpeglib.h needs size_t and FILE declared first.
#include <jpeglib.h>
#include <png.h>

namespace edgevla::nodes {
namespace {

std::string size_text(int w, int h) { return std::to_string(w) + "x" + std::to_string(h); }

Status check_side(int w, int h, int max_side, const std::string& what) {
  if (w <= 0 || h <= 0 || w > max_side || h > max_side) {
    return invalid_argument(what + ": image is " + size_text(w, h) +
                            "; supported sizes are 1x1 to " + size_text(max_side, max_side));
  }
  return Status::ok();
}

// JPEG -----------------------------------------------------------------------------------------
// libjpeg reports fatal errors through error_exit, which must not return: it longjmps back
// into run_jpeg(). Nothing with a destructor lives in run_jpeg's frame, so the jump skips none.

struct JpegError {
  jpeg_error_mgr mgr;  // first: libjpeg hands back a pointer to it
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  char warning[JMSG_LENGTH_MAX];
  int warnings;
};

void on_jpeg_error(j_common_ptr cinfo) {
  auto* e = reinterpret_cast<JpegError*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, e->message);
  std::longjmp(e->jump, 1);
}

void on_jpeg_message(j_common_ptr cinfo, int level) {
  if (level >= 0) return;  // trace messages
  auto* e = reinterpret_cast<JpegError*>(cinfo->err);
  if (e->warnings++ == 0) (*cinfo->err->format_message)(cinfo, e->warning);
}

// Where decoded rows go: a growable image, or a fixed buffer of a required size.
struct JpegTarget {
  RgbImage* image = nullptr;
  std::uint8_t* fixed = nullptr;
  int want_w = 0;
  int want_h = 0;
  int got_w = 0;  // the JPEG's size
  int got_h = 0;
  int max_side = kMaxImageSide;
};

enum class JpegResult { kOk, kLibraryError, kWrongSize, kTooLarge };

JpegResult run_jpeg(jpeg_decompress_struct* cinfo, JpegError* err, const std::uint8_t* data,
                    std::size_t size, JpegTarget* t) {
  if (setjmp(err->jump)) return JpegResult::kLibraryError;
  jpeg_create_decompress(cinfo);
  jpeg_mem_src(cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(cinfo, TRUE);
  t->got_w = static_cast<int>(cinfo->image_width);
  t->got_h = static_cast<int>(cinfo->image_height);
  if (!check_side(t->got_w, t->got_h, t->max_side, "").is_ok()) return JpegResult::kTooLarge;
  // A frame of another size is refused from its header: starting the decompressor first would
  // size its buffers (a progressive JPEG's: the whole image's coefficients) from the claim.
  if (t->image == nullptr && (t->got_w != t->want_w || t->got_h != t->want_h)) return JpegResult::kWrongSize;
  cinfo->out_color_space = JCS_RGB;  // YCbCr and grayscale both convert
  jpeg_start_decompress(cinfo);
  std::uint8_t* dst = t->fixed;
  if (t->image != nullptr) {
    t->image->width = t->got_w;
    t->image->height = t->got_h;
    t->image->pixels.resize(static_cast<std::size_t>(t->got_w) * t->got_h * 3);
    dst = t->image->pixels.data();
  }
  const std::size_t stride = static_cast<std::size_t>(t->got_w) * 3;
  while (cinfo->output_scanline < cinfo->output_height) {
    JSAMPROW row = dst + stride * cinfo->output_scanline;
    jpeg_read_scanlines(cinfo, &row, 1);
  }
  jpeg_finish_decompress(cinfo);
  return JpegResult::kOk;
}

Status decode_jpeg(std::span<const std::uint8_t> bytes, JpegTarget& target, JpegWarnings warnings,
                   const std::string& what) {
  jpeg_decompress_struct cinfo{};
  JpegError err{};
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = on_jpeg_error;
  err.mgr.emit_message = on_jpeg_message;
  JpegResult r;
  {
    struct Release {  // also when run_jpeg throws (std::bad_alloc sizing the image)
      jpeg_decompress_struct* cinfo;
      ~Release() { jpeg_destroy_decompress(cinfo); }
    } release{&cinfo};
    r = run_jpeg(&cinfo, &err, bytes.data(), bytes.size(), &target);
  }
  switch (r) {
    case JpegResult::kOk:
      break;
    case JpegResult::kLibraryError:
      return data_loss(what + ": cannot decode JPEG: " + err.message);
    case JpegResult::kTooLarge:
      return check_side(target.got_w, target.got_h, target.max_side, what);
    case JpegResult::kWrongSize:
      return invalid_argument(what + ": JPEG is " + size_text(target.got_w, target.got_h) +
                              ", expected " + size_text(target.want_w, target.want_h));
  }
  if (warnings == JpegWarnings::kReject && err.warnings > 0) {
    return data_loss(what + ": corrupt JPEG: " + err.warning);
  }
  return Status::ok();
}

// PNG ------------------------------------------------------------------------------------------
// The same longjmp arrangement as for JPEG: on_png_error jumps back into run_png().

struct PngReader {
  const std::uint8_t* data = nullptr;
  std::size_t size = 0;
  std::size_t pos = 0;
  char message[256] = {};
  RgbImage* image = nullptr;
  int max_side = kMaxImageSide;
  std::vector<png_bytep> rows;  // lives in decode_png's frame, not run_png's
};

void on_png_read(png_structp png, png_bytep out, png_size_t n) {
  auto* r = static_cast<PngReader*>(png_get_io_ptr(png));
  if (n > r->size - r->pos) png_error(png, "file ends early (truncated)");
  std::memcpy(out, r->data + r->pos, n);
  r->pos += n;
}

void on_png_error(png_structp png, png_const_charp message) {
  auto* r = static_cast<PngReader*>(png_get_error_ptr(png));
  std::snprintf(r->message, sizeof(r->message), "%s", message);
  png_longjmp(png, 1);
}

// Warnings (an odd ICC profile, a bad ancillary chunk) leave the pixels intact.
void on_png_warning(png_structp, png_const_charp) {}

bool run_png(png_structp png, png_infop info, PngReader* r) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_set_read_fn(png, r, on_png_read);
  png_read_info(png, info);
  const int w = static_cast<int>(png_get_image_width(png, info));
  const int h = static_cast<int>(png_get_image_height(png, info));
  if (w > r->max_side || h > r->max_side) {
    std::snprintf(r->message, sizeof(r->message), "image is %dx%d; supported sizes are 1x1 to %dx%d", w, h,
                  r->max_side, r->max_side);
    png_longjmp(png, 1);
  }
  const int color = png_get_color_type(png, info);
  const int depth = png_get_bit_depth(png, info);
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (depth == 16) png_set_scale_16(png);
  if ((color & PNG_COLOR_MASK_ALPHA) != 0) png_set_strip_alpha(png);
  if (color == PNG_COLOR_TYPE_GRAY || color == PNG_COLOR_TYPE_GRAY_ALPHA) png_set_gray_to_rgb(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  const std::size_t stride = static_cast<std::size_t>(w) * 3;
  if (png_get_rowbytes(png, info) != stride)
    png_error(png, "unsupported pixel layout after conversion");
  r->image->width = w;
  r->image->height = h;
  r->image->pixels.resize(stride * h);
  r->rows.resize(h);
  for (int y = 0; y < h; ++y) r->rows[y] = r->image->pixels.data() + stride * y;
  png_read_image(png, r->rows.data());
  png_read_end(png, nullptr);
  return true;
}

Expected<RgbImage> decode_png(std::span<const std::uint8_t> bytes, const std::string& what, int max_side) {
  RgbImage image;
  PngReader reader;
  reader.max_side = max_side;
  reader.data = bytes.data();
  reader.size = bytes.size();
  reader.image = &image;
  png_structp png =
      png_create_read_struct(PNG_LIBPNG_VER_STRING, &reader, on_png_error, on_png_warning);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  struct Release {
    png_structp* png;
    png_infop* info;
    ~Release() { png_destroy_read_struct(png, info, nullptr); }
  } release{&png, &info};
  if (png == nullptr || info == nullptr)
    return resource_exhausted(what + ": libpng is out of memory");
  if (!run_png(png, info, &reader))
    return data_loss(what + ": cannot decode PNG: " + reader.message);
  return image;
}

bool has_prefix(std::span<const std::uint8_t> bytes, std::initializer_list<std::uint8_t> prefix) {
  return bytes.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), bytes.begin());
}

}  // namespace

Expected<RgbImage> decode_image(std::span<const std::uint8_t> bytes, const std::string& what, int max_side) {
  if (has_prefix(bytes, {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'}))
    return decode_png(bytes, what, max_side);
  if (has_prefix(bytes, {0xff, 0xd8, 0xff})) {
    RgbImage image;
    JpegTarget target;
    target.image = &image;
    target.max_side = max_side;
    EDGEVLA_RETURN_IF_ERROR(decode_jpeg(bytes, target, JpegWarnings::kReject, what));
    return image;
  }
  return data_loss(what + ": not a PNG or JPEG file (" +
                   (bytes.empty() ? std::string("it is empty") : "unknown signature") + ")");
}

Expected<RgbImage> decode_image_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec)) {
    return invalid_argument(path + ": not a regular file (give a PNG or JPEG file)");
  }
  std::ifstream f(path, std::ios::binary);
  if (!f) return not_found(path + ": cannot open: " + std::strerror(errno));
  std::vector<std::uint8_t> bytes{std::istreambuf_iterator<char>(f),
                                  std::istreambuf_iterator<char>()};
  if (f.bad()) return data_loss(path + ": read error: " + std::strerror(errno));
  return decode_image(bytes, path);
}

Status decode_jpeg_into(std::span<const std::uint8_t> jpeg, int width, int height,
                        std::span<std::uint8_t> out, JpegWarnings warnings,
                        const std::string& what) {
  if (out.size() != static_cast<std::size_t>(width) * height * 3) {
    return internal_error(what + ": output buffer of " + std::to_string(out.size()) +
                          " bytes does not hold " + size_text(width, height) + " rgb8");
  }
  JpegTarget target;
  target.fixed = out.data();
  target.want_w = width;
  target.want_h = height;
  return decode_jpeg(jpeg, target, warnings, what);
}

Expected<std::vector<std::string>> list_image_files(const std::string& folder) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::directory_iterator it(folder, ec);
  if (ec) return not_found("cannot read image folder '" + folder + "': " + ec.message());
  std::vector<std::string> files;
  for (const fs::directory_entry& e : it) {
    std::string ext = e.path().extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    if (ext != ".png" && ext != ".jpg" && ext != ".jpeg") continue;
    if (!e.is_regular_file(ec)) continue;
    files.push_back(e.path().string());
  }
  if (files.empty()) {
    return not_found("image folder '" + folder + "' holds no .png, .jpg or .jpeg files");
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace edgevla::nodes
