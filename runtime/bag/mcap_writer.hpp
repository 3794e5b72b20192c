// Writes MCAP files: messages go into chunks (compressed with none/lz4/zstd), each followed by
// its message indexes; close() writes DataEnd, the summary (schemas, channels, statistics,
// chunk/metadata/attachment indexes), summary offsets and the footer.
//
// Crash safety: a chunk reaches the file whole once it is full or flush() is called, and every
// chunk repeats the schema and channel records its messages use, so a file cut short by a
// crash loses at most the chunk in progress (McapReader reads the rest; `edgevla bag recover`
// rewrites it with a summary).
//
// Speed: the caller's thread only encodes records into the chunk buffer and takes their CRC
// as it goes (bytes still in cache); a background thread compresses and writes finished
// chunks, at most two in flight, so encoding overlaps disk writes. The data-section CRC is
// derived from the chunk CRCs (crc32_concat), never a second pass over the bytes.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
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
  // (no intermediate copy of large payloads). `size_hint` (about how many bytes `fill` adds)
  // lets the writer close a chunk before a message that would overflow it and size the buffer
  // once, instead of growing it mid-message.
  Status write_message_with(std::uint16_t channel_id, std::uint32_t sequence, std::uint64_t log_time,
                            std::uint64_t publish_time, const std::function<Status(std::string& out)>& fill,
                            std::size_t size_hint = 0);

  // Data-section records outside chunks (the chunk in progress is flushed first).
  Status write_metadata(const std::string& name, const StringMap& values);
  Status write_attachment(const std::string& name, const std::string& media_type, std::uint64_t log_time,
                          std::span<const std::byte> data);

  // Writes the chunk in progress now (bounds what a crash can lose).
  Status flush();
  // Flushes, writes DataEnd, summary and footer, and closes the file. Idempotent.
  Status close();

  WriterStats stats() const;
  const std::string& path() const { return path_; }

 private:
  // A finished chunk on its way to the file.
  struct PendingChunk {
    std::string records;
    std::uint32_t crc = 0;
    std::uint64_t start_time = 0, end_time = 0;
    std::map<std::uint16_t, MessageIndex> indexes;
  };

  McapWriter(std::string path, int fd, McapWriterOptions options);
  // I/O thread (or the caller once it has stopped): the file, its offset and data CRC.
  Status write_raw(std::span<const std::byte> bytes, std::uint32_t crc);
  Status write_raw(std::span<const std::byte> bytes) { return write_raw(bytes, crc32(bytes)); }
  Status write_raw(const std::string& bytes) {
    return write_raw({reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()});
  }
  Status write_chunk_now(PendingChunk& chunk);
  // Cuts the file back to `offset` after a failed job (I/O thread, or close() after it).
  void rewind_to(std::uint64_t offset, std::uint32_t crc, std::size_t chunk_index_bytes, std::size_t chunks,
                 std::size_t metadata, std::size_t attachments);
  void io_loop();
  // Queues work for the I/O thread (waits while two jobs are pending).
  Status submit(std::function<Status()> job);
  // Waits until the I/O thread has done everything queued; its first error, if any.
  Status drain();
  Status failed() const;

  // Caller side.
  void begin_message_in_chunk(std::uint16_t channel_id);
  void append_crc(std::size_t from);
  void note_message(std::uint16_t channel_id, std::uint64_t log_time, std::size_t offset);
  Status finish_chunk();  // hands the chunk in progress to the I/O thread

  std::string path_;
  int fd_;
  McapWriterOptions options_;
  bool closed_ = false;

  std::vector<Schema> schemas_;    // id = index + 1
  std::vector<Channel> channels_;  // id = index
  // Chunk in progress (caller's thread).
  std::string chunk_;
  std::uint32_t chunk_crc_ = 0;
  std::set<std::uint16_t> chunk_channels_, chunk_schemas_;
  std::map<std::uint16_t, MessageIndex> chunk_index_entries_;
  std::uint64_t chunk_start_time_ = 0, chunk_end_time_ = 0;
  Statistics statistics_;  // message counts and times (caller); chunk/metadata/attachment counts below
  std::uint64_t messages_ = 0;
  std::atomic<std::uint64_t> uncompressed_bytes_{0};

  // I/O thread state.
  Compressor compressor_;
  std::uint64_t offset_ = 0;
  std::uint32_t data_crc_ = 0;
  std::atomic<std::uint64_t> bytes_written_{0};
  // The summary's chunk index records, encoded as each chunk is written: a few hundred bytes a
  // chunk in one buffer (a long recording's index stays small and in one piece on the heap).
  std::string chunk_index_records_;
  std::size_t chunk_index_count_ = 0;
  std::vector<MetadataIndex> metadata_indexes_;
  std::vector<AttachmentIndex> attachment_indexes_;

  mutable std::mutex io_mu_;
  std::condition_variable io_cv_;
  std::deque<std::function<Status()>> jobs_;
  bool io_busy_ = false;
  bool io_stop_ = false;
  Status failed_;                    // first I/O error; later calls return it
  // A full disk (or a file size limit): the failed job's bytes are cut off the file again, and
  // close() still tries to write the summary into the room that freed. Counts of what really
  // reached the file (the I/O thread's), for the summary of a bag cut short by a full disk.
  bool disk_full_ = false;
  std::uint64_t written_messages_ = 0;
  std::map<std::uint16_t, std::uint64_t> written_channel_counts_;
  std::uint64_t written_start_time_ = 0, written_end_time_ = 0;
  std::vector<std::string> spare_;  // chunk buffers handed back by the I/O thread
  std::thread io_;
};

struct MessageView;

// The channel (and schema) in `w` for a message read from another bag: added to `w` the first
// time its source channel is seen, remembered in `ids` (source channel id -> id in `w`).
std::uint16_t copy_channel(McapWriter& w, const MessageView& v, std::map<std::uint16_t, std::uint16_t>& ids);

}  // namespace edgevla::mcap
