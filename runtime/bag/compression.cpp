#include "runtime/bag/compression.hpp"

#include <lz4frame.h>
#include <zstd.h>

namespace edgevla::mcap {

std::string_view compression_name(Compression c) {
  switch (c) {
    case Compression::kNone: return "";
    case Compression::kLz4: return "lz4";
    case Compression::kZstd: return "zstd";
  }
  return "";
}

Expected<Compression> parse_compression(std::string_view name) {
  if (name.empty() || name == "none") return Compression::kNone;
  if (name == "lz4") return Compression::kLz4;
  if (name == "zstd") return Compression::kZstd;
  return invalid_argument("unknown compression '" + std::string(name) + "' (none, lz4 or zstd)");
}

Compressor::Compressor(Compression c, int level) : kind_(c), level_(level) {
  if (kind_ == Compression::kZstd) zstd_ = ZSTD_createCCtx();
}

Compressor::~Compressor() {
  if (zstd_ != nullptr) ZSTD_freeCCtx(static_cast<ZSTD_CCtx*>(zstd_));
}

Expected<std::span<const std::byte>> Compressor::compress(std::span<const std::byte> in) {
  std::size_t bound = 0;
  LZ4F_preferences_t prefs{};
  if (kind_ == Compression::kLz4) {
    prefs.compressionLevel = level_;
    prefs.frameInfo.contentSize = in.size();
    bound = LZ4F_compressFrameBound(in.size(), &prefs);
  } else if (kind_ == Compression::kZstd) {
    bound = ZSTD_compressBound(in.size());
  } else {
    return internal_error("Compressor::compress called for no compression");
  }
  if (bound > capacity_) {
    out_.reset(new std::byte[bound]);
    capacity_ = bound;
  }
  std::size_t n = 0;
  if (kind_ == Compression::kLz4) {
    n = LZ4F_compressFrame(out_.get(), capacity_, in.data(), in.size(), &prefs);
    if (LZ4F_isError(n)) return internal_error(std::string("lz4 compression failed: ") + LZ4F_getErrorName(n));
  } else {
    n = ZSTD_compressCCtx(static_cast<ZSTD_CCtx*>(zstd_), out_.get(), capacity_, in.data(), in.size(),
                          level_ == 0 ? 1 : level_);
    if (ZSTD_isError(n)) return internal_error(std::string("zstd compression failed: ") + ZSTD_getErrorName(n));
  }
  return std::span<const std::byte>(out_.get(), n);
}

std::uint64_t max_decompressed_size(std::string_view compression, std::uint64_t compressed_size) {
  const std::uint64_t ratio = compression.empty() ? 1 : compression == "lz4" ? 255 : compression == "zstd" ? 32768 : 0;
  if (ratio == 0) return 0;
  return compressed_size > UINT64_MAX / ratio ? UINT64_MAX : compressed_size * ratio;
}

Status decompress(std::string_view compression, std::span<const std::byte> in, std::span<std::byte> out) {
  if (compression.empty()) {
    if (in.size() != out.size()) {
      return data_loss("uncompressed chunk holds " + std::to_string(in.size()) + " bytes but says " +
                       std::to_string(out.size()));
    }
    std::copy(in.begin(), in.end(), out.begin());
    return Status::ok();
  }
  if (compression == "zstd") {
    const std::size_t n = ZSTD_decompress(out.data(), out.size(), in.data(), in.size());
    if (ZSTD_isError(n)) return data_loss(std::string("zstd chunk does not decompress: ") + ZSTD_getErrorName(n));
    if (n != out.size()) {
      return data_loss("zstd chunk decompresses to " + std::to_string(n) + " bytes, expected " +
                       std::to_string(out.size()));
    }
    return Status::ok();
  }
  if (compression == "lz4") {
    LZ4F_dctx* ctx = nullptr;
    if (LZ4F_isError(LZ4F_createDecompressionContext(&ctx, LZ4F_VERSION))) {
      return internal_error("cannot create an lz4 decompression context");
    }
    std::size_t in_pos = 0, out_pos = 0;
    std::size_t hint = 1;
    while (hint != 0 && in_pos < in.size()) {
      std::size_t src = in.size() - in_pos;
      std::size_t dst = out.size() - out_pos;
      hint = LZ4F_decompress(ctx, out.data() + out_pos, &dst, in.data() + in_pos, &src, nullptr);
      if (LZ4F_isError(hint)) {
        LZ4F_freeDecompressionContext(ctx);
        return data_loss(std::string("lz4 chunk does not decompress: ") + LZ4F_getErrorName(hint));
      }
      in_pos += src;
      out_pos += dst;
      if (src == 0 && dst == 0) break;  // no progress: truncated or output full
    }
    LZ4F_freeDecompressionContext(ctx);
    if (hint != 0 || out_pos != out.size()) {
      return data_loss("lz4 chunk decompresses to " + std::to_string(out_pos) + " bytes, expected " +
                       std::to_string(out.size()));
    }
    return Status::ok();
  }
  return invalid_argument("chunk compression '" + std::string(compression) +
                          "' is not supported (none, lz4, zstd)");
}

}  // namespace edgevla::mcap
