// Chunk compression for MCAP: none, lz4 (frame format) and zstd, via Debian's liblz4/libzstd.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "runtime/core/status.hpp"

namespace edgevla::mcap {

enum class Compression { kNone, kLz4, kZstd };

// The MCAP name: "", "lz4" or "zstd".
std::string_view compression_name(Compression c);
// Accepts "none", "", "lz4", "zstd".
Expected<Compression> parse_compression(std::string_view name);

// Compresses with reusable contexts (one per writer thread).
class Compressor {
 public:
  explicit Compressor(Compression c, int level = 0);
  ~Compressor();
  Compressor(const Compressor&) = delete;
  Compressor& operator=(const Compressor&) = delete;
  Compression kind() const { return kind_; }
  // The compressed form of `in`, in a buffer the compressor reuses (valid until the next
  // call). Not for Compression::kNone.
  Expected<std::span<const std::byte>> compress(std::span<const std::byte> in);

 private:
  Compression kind_;
  int level_;
  void* zstd_ = nullptr;  // ZSTD_CCtx
  std::unique_ptr<std::byte[]> out_;  // grown, never zero-filled
  std::size_t capacity_ = 0;
};

// The most bytes `compressed_size` bytes of `compression` can decompress to (none: the same;
// lz4 frames: 255 per byte; zstd: 32768 per byte, an RLE block's 4 bytes giving 128 KiB), so
// a reader can refuse a chunk header's claim before allocating it. 0 for an unknown name.
std::uint64_t max_decompressed_size(std::string_view compression, std::uint64_t compressed_size);

// Decompresses a chunk's records into exactly `uncompressed_size` bytes at `out`.
Status decompress(std::string_view compression, std::span<const std::byte> in, std::span<std::byte> out);

}  // namespace edgevla::mcap
