// Writes MCAP files: messages go into chunks (compressed with none/lz4/zstd), each followed by
// its message indexes; close() writes DataEnd, the summary (schemas, channels, statistics,
// chunk/metadata/attachment indexes), summary offsets and the footer.
//
// Crash safety: a chunk reaches the file whole once it is full or flush() is called, and every
// chunk repeats the schema and channel records its messages use, so a file cut short by a
// crash loses at most the chunk in progress (McapReader reads the rest; `edgevla bag recover`
// rewrites it with a summary).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "runtime/bag/compression.hpp"
#include "runtime/bag/mcap_records.hpp"

namespace edgevla::mcap {

struct McapWriterOptions {
  std::string profile;                    // empty: no profile (edgevla channels use msgpack)
  std::string library = "edgevla";
  Compression compression = Compression::kZstd;
  int compression_level = 0;              // 0: the codec's fast default
  std::size_t chunk_size = 4 << 20;       // uncompressed bytes that close a chunk
};

struct WriterStats {
  std::uint64_t messages = 0;
  std::uint64_t chunks = 0;
  std::uint64_t bytes_written = 0;        // file bytes so far
  std::uint64_t uncompressed_bytes = 0;   // chunk records before compression
};

class McapWriter {
 public:
  static Expected<std::unique_ptr<McapWriter>> open(const std::string& path, McapWriterOptions options = {});
  // Closes the file if close() was not called (errors are logged, not thrown).
  ~McapWriter();
  McapWriter(const McapWriter&) = delete;
  McapWriter& operator=(const McapWriter&) = delete;

  // Registers a schema; the same (name, encoding, data) gets the same id.
  std::uint16_t add_schema(const std::string& name, const std::string& encoding, const std::string& data);
  // Registers a channel; the same (topic, encoding, schema, metadata) gets the same id.
  std::uint16_t add_channel(const std::string& topic, const std::string& message_encoding, std::uint16_t schema_id,
                            const StringMap& metadata = {});

  Status write_message(std::uint16_t channel_id, std::uint32_t sequence, std::uint64_t log_time,
                       std::uint64_t publish_time, std::span<const std::byte> data);
  // Like write_message, but `fill` appends the message data straight into the chunk buffer
  // (no intermediate copy of large payloads).
  Status write_message_with(std::uint16_t channel_id, std::uint32_t sequence, std::uint64_t log_time,
                            std::uint64_t publish_time, const std::function<Status(std::string& out)>& fill);

  // Data-section records outside chunks (the chunk in progress is flushed first).
  Status write_metadata(const std::string& name, const StringMap& values);
  Status write_attachment(const std::string& name, const std::string& media_type, std::uint64_t log_time,
                          std::span<const std::byte> data);

  // Writes the chunk in progress now (bounds what a crash can lose).
  Status flush();
  // Flushes, writes DataEnd, summary and footer, and closes the file. Idempotent.
  Status close();

  const WriterStats& stats() const { return stats_; }
  const std::string& path() const { return path_; }

 private:
  McapWriter(std::string path, int fd, McapWriterOptions options);
  Status write_raw(std::span<const std::byte> bytes);
  Status write_raw(const std::string& bytes) {
    return write_raw({reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()});
  }
  void begin_message_in_chunk(std::uint16_t channel_id);
  void note_message(std::uint16_t channel_id, std::uint64_t log_time, std::size_t offset);
  Status write_chunk();

  std::string path_;
  int fd_;
  McapWriterOptions options_;
  Compressor compressor_;
  bool closed_ = false;
  Status failed_;  // first I/O error; later calls return it
  std::uint64_t offset_ = 0;
  std::uint32_t data_crc_ = 0;

  std::vector<Schema> schemas_;    // id = index + 1
  std::vector<Channel> channels_;  // id = index
  // Chunk in progress.
  std::string chunk_;
  std::set<std::uint16_t> chunk_channels_, chunk_schemas_;
  std::map<std::uint16_t, MessageIndex> chunk_index_entries_;
  std::uint64_t chunk_start_time_ = 0, chunk_end_time_ = 0;
  std::string compressed_;
  // Summary material.
  std::vector<ChunkIndex> chunk_indexes_;
  std::vector<MetadataIndex> metadata_indexes_;
  std::vector<AttachmentIndex> attachment_indexes_;
  Statistics statistics_;
  WriterStats stats_;
};

}  // namespace edgevla::mcap
