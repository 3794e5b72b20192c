// Reads MCAP files. The file is memory-mapped; messages in uncompressed chunks are viewed in
// place, compressed chunks are decompressed one at a time. Reading is tolerant: truncation,
// a chunk whose CRC does not match, a record claiming more bytes than the file has, or a
// missing summary are reported as issues, and every intact message is still delivered.
// Unknown opcodes are skipped, as the specification requires.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/bag/mcap_records.hpp"
#include "runtime/core/buffer.hpp"

namespace edgevla::mcap {

struct ReadIssue {
  std::uint64_t offset = 0;  // where in the file
  std::string message;
};

struct MessageView {
  const Channel* channel = nullptr;
  const Schema* schema = nullptr;  // nullptr when the channel has none
  Message record;                  // data points into `owner`
  BufferPtr owner;                 // keeps the bytes alive (the file mapping or a chunk)
};

struct AttachmentView {
  Attachment record;
  BufferPtr owner;
};

// What the summary says, or (for a file without one) what a full scan found.
struct BagSummary {
  Header header;
  std::map<std::uint16_t, Schema> schemas;
  std::map<std::uint16_t, Channel> channels;
  Statistics statistics;
  std::vector<ChunkIndex> chunk_indexes;
  std::uint64_t file_size = 0;
  bool has_summary = false;   // footer and summary present and consistent
  bool complete = false;      // DataEnd reached and (if non-zero) its CRC matched
  std::map<std::string, std::uint64_t> compression_bytes;  // chunk compression -> compressed bytes
};

class McapReader {
 public:
  // Maps the file and reads its summary (or scans it when there is none). Errors only for a
  // file that cannot be read at all or is not MCAP (wrong magic).
  static Expected<std::unique_ptr<McapReader>> open(const std::string& path);

  const BagSummary& summary() const { return summary_; }
  const std::string& path() const { return path_; }

  // Visits every intact message in file order. Returns the callback's first error; damage in
  // the file is not an error but an issue (see issues()).
  Status for_each_message(const std::function<Status(const MessageView&)>& visit);
  // Metadata and attachment records of the data section.
  std::vector<Metadata> metadata();
  std::vector<AttachmentView> attachments();

  // Problems found by open() and by the last scan (for_each_message, metadata, attachments).
  const std::vector<ReadIssue>& issues() const { return issues_; }

 private:
  McapReader(std::string path, BufferPtr file) : path_(std::move(path)), file_(std::move(file)) {}
  std::span<const std::byte> bytes() const { return file_->bytes(); }
  bool read_summary();
  struct Visitors {
    std::function<Status(const MessageView&)> message;
    std::function<void(const Metadata&)> metadata;
    std::function<void(const AttachmentView&)> attachment;
  };
  Status scan(const Visitors& v, bool record_statistics);
  Status scan_chunk(std::uint64_t offset, std::span<const std::byte> content, const Visitors& v);
  Status on_record(std::uint8_t op, std::uint64_t offset, std::span<const std::byte> content, const BufferPtr& owner,
                   const Visitors& v, bool in_chunk);
  void issue(std::uint64_t offset, std::string message);

  std::string path_;
  BufferPtr file_;
  BagSummary summary_;
  std::map<std::uint16_t, Schema> schemas_;    // as met while scanning
  std::map<std::uint16_t, Channel> channels_;
  std::vector<ReadIssue> issues_;
  std::size_t open_issues_ = 0;  // issues_[0, open_issues_) were found by open()
  Statistics scanned_;  // statistics rebuilt by a scan
};

}  // namespace edgevla::mcap
