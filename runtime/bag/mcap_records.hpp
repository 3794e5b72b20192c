// MCAP records (mcap.dev specification, major version 0): the record structs, a little-endian
// appender for writing them and a bounds-checked cursor for parsing them. Written here because
// no MCAP library is packaged in Debian.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/core/status.hpp"

namespace edgevla::mcap {

inline constexpr std::array<std::uint8_t, 8> kMagic = {0x89, 'M', 'C', 'A', 'P', '0', '\r', '\n'};

enum class Op : std::uint8_t {
  kHeader = 0x01,
  kFooter = 0x02,
  kSchema = 0x03,
  kChannel = 0x04,
  kMessage = 0x05,
  kChunk = 0x06,
  kMessageIndex = 0x07,
  kChunkIndex = 0x08,
  kAttachment = 0x09,
  kAttachmentIndex = 0x0A,
  kStatistics = 0x0B,
  kMetadata = 0x0C,
  kMetadataIndex = 0x0D,
  kSummaryOffset = 0x0E,
  kDataEnd = 0x0F,
};

// opcode (1) + content length (8)
inline constexpr std::size_t kRecordPrefix = 9;
// Footer record plus trailing magic: 1 + 8 + 20 + 8.
inline constexpr std::size_t kFooterAndMagic = 37;

using StringMap = std::map<std::string, std::string>;

struct Header {
  std::string profile;
  std::string library;
};

struct Footer {
  std::uint64_t summary_start = 0;
  std::uint64_t summary_offset_start = 0;
  std::uint32_t summary_crc = 0;
};

struct Schema {
  std::uint16_t id = 0;
  std::string name;
  std::string encoding;
  std::string data;
  bool operator==(const Schema&) const = default;
};

struct Channel {
  std::uint16_t id = 0;
  std::uint16_t schema_id = 0;
  std::string topic;
  std::string message_encoding;
  StringMap metadata;
  bool operator==(const Channel&) const = default;
};

// A message record; `data` points into whatever buffer it was parsed from.
struct Message {
  std::uint16_t channel_id = 0;
  std::uint32_t sequence = 0;
  std::uint64_t log_time = 0;
  std::uint64_t publish_time = 0;
  std::span<const std::byte> data;
};

struct ChunkHeader {
  std::uint64_t message_start_time = 0;
  std::uint64_t message_end_time = 0;
  std::uint64_t uncompressed_size = 0;
  std::uint32_t uncompressed_crc = 0;
  std::string compression;
  std::span<const std::byte> records;  // compressed bytes
};

struct MessageIndex {
  std::uint16_t channel_id = 0;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> records;  // log_time, offset in chunk
};

struct ChunkIndex {
  std::uint64_t message_start_time = 0;
  std::uint64_t message_end_time = 0;
  std::uint64_t chunk_start_offset = 0;
  std::uint64_t chunk_length = 0;
  std::map<std::uint16_t, std::uint64_t> message_index_offsets;
  std::uint64_t message_index_length = 0;
  std::string compression;
  std::uint64_t compressed_size = 0;
  std::uint64_t uncompressed_size = 0;
};

struct Attachment {
  std::uint64_t log_time = 0;
  std::uint64_t create_time = 0;
  std::string name;
  std::string media_type;
  std::span<const std::byte> data;
  std::uint32_t crc = 0;
};

struct AttachmentIndex {
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  std::uint64_t log_time = 0;
  std::uint64_t create_time = 0;
  std::uint64_t data_size = 0;
  std::string name;
  std::string media_type;
};

struct Statistics {
  std::uint64_t message_count = 0;
  std::uint16_t schema_count = 0;
  std::uint32_t channel_count = 0;
  std::uint32_t attachment_count = 0;
  std::uint32_t metadata_count = 0;
  std::uint32_t chunk_count = 0;
  std::uint64_t message_start_time = 0;
  std::uint64_t message_end_time = 0;
  std::map<std::uint16_t, std::uint64_t> channel_message_counts;
};

struct Metadata {
  std::string name;
  StringMap metadata;
};

struct MetadataIndex {
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  std::string name;
};

struct SummaryOffset {
  std::uint8_t group_opcode = 0;
  std::uint64_t group_start = 0;
  std::uint64_t group_length = 0;
};

struct DataEnd {
  std::uint32_t data_section_crc = 0;
};

// Appends records to a byte string. Each append_* writes one whole record (opcode, length,
// content) and returns nothing: appending to a std::string cannot fail short of bad_alloc.
class RecordWriter {
 public:
  explicit RecordWriter(std::string& out) : out_(out) {}

  void header(const Header& r);
  void footer(const Footer& r);
  void schema(const Schema& r);
  void channel(const Channel& r);
  void message(const Message& r);
  // Starts a message record whose data the caller appends to the string afterwards; call
  // end_record() with the returned mark when done.
  std::size_t begin_message(std::uint16_t channel_id, std::uint32_t sequence, std::uint64_t log_time,
                            std::uint64_t publish_time);
  void end_record(std::size_t mark);
  void chunk(const ChunkHeader& r);
  void message_index(const MessageIndex& r);
  void chunk_index(const ChunkIndex& r);
  void attachment(const Attachment& r);  // computes the CRC
  void attachment_index(const AttachmentIndex& r);
  void statistics(const Statistics& r);
  void metadata(const Metadata& r);
  void metadata_index(const MetadataIndex& r);
  void summary_offset(const SummaryOffset& r);
  void data_end(const DataEnd& r);

  // Little-endian primitives, public for tests and the writer's patching.
  void u8(std::uint8_t v);
  void u16(std::uint16_t v);
  void u32(std::uint32_t v);
  void u64(std::uint64_t v);
  void str(std::string_view v);
  void bytes(std::span<const std::byte> v);

 private:
  std::size_t begin(Op op);
  void string_map(const StringMap& m);
  std::string& out_;
};

// Parses a record's content. Every read is bounds-checked; a short or malformed record is a
// data_loss error naming the record and field.
class RecordReader {
 public:
  RecordReader(std::span<const std::byte> content, std::string_view what) : data_(content), what_(what) {}

  Status u8(std::uint8_t& v);
  Status u16(std::uint16_t& v);
  Status u32(std::uint32_t& v);
  Status u64(std::uint64_t& v);
  Status str(std::string& v);
  Status str_map(StringMap& v);
  // uint32-length-prefixed bytes (schema data) / uint64-length-prefixed (chunk records).
  Status bytes32(std::span<const std::byte>& v);
  Status bytes64(std::span<const std::byte>& v);
  std::span<const std::byte> rest() const { return data_.subspan(pos_); }

 private:
  Status need(std::size_t n, std::string_view field);
  std::span<const std::byte> data_;
  std::size_t pos_ = 0;
  std::string_view what_;
};

Expected<Header> parse_header(std::span<const std::byte> content);
Expected<Footer> parse_footer(std::span<const std::byte> content);
Expected<Schema> parse_schema(std::span<const std::byte> content);
Expected<Channel> parse_channel(std::span<const std::byte> content);
Expected<Message> parse_message(std::span<const std::byte> content);
Expected<ChunkHeader> parse_chunk(std::span<const std::byte> content);
Expected<MessageIndex> parse_message_index(std::span<const std::byte> content);
Expected<ChunkIndex> parse_chunk_index(std::span<const std::byte> content);
Expected<Attachment> parse_attachment(std::span<const std::byte> content);
Expected<AttachmentIndex> parse_attachment_index(std::span<const std::byte> content);
Expected<Statistics> parse_statistics(std::span<const std::byte> content);
Expected<Metadata> parse_metadata(std::span<const std::byte> content);
Expected<MetadataIndex> parse_metadata_index(std::span<const std::byte> content);
Expected<SummaryOffset> parse_summary_offset(std::span<const std::byte> content);
Expected<DataEnd> parse_data_end(std::span<const std::byte> content);

std::string_view op_name(std::uint8_t op);

// CRC-32 (ISO-HDLC, as zlib's crc32), continuing from `crc`.
std::uint32_t crc32(std::span<const std::byte> bytes, std::uint32_t crc = 0);
// The CRC of A followed by B, from crc(A), crc(B) and B's length (no pass over the bytes).
std::uint32_t crc32_concat(std::uint32_t crc_a, std::uint32_t crc_b, std::uint64_t length_b);

}  // namespace edgevla::mcap
