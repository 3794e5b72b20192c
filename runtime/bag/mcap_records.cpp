#include "runtime/bag/mcap_records.hpp"

#include <zlib.h>

#include <cstring>

namespace edgevla::mcap {

std::uint32_t crc32(std::span<const std::byte> bytes, std::uint32_t crc) {
  // zlib takes a uInt length; feed large spans in pieces.
  uLong c = crc;
  while (!bytes.empty()) {
    const std::size_t n = std::min<std::size_t>(bytes.size(), std::size_t{1} << 30);
    c = ::crc32(c, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(n));
    bytes = bytes.subspan(n);
  }
  return static_cast<std::uint32_t>(c);
}

std::uint32_t crc32_concat(std::uint32_t crc_a, std::uint32_t crc_b, std::uint64_t length_b) {
  return static_cast<std::uint32_t>(::crc32_combine64(crc_a, crc_b, static_cast<z_off64_t>(length_b)));
}

std::string_view op_name(std::uint8_t op) {
  switch (static_cast<Op>(op)) {
    case Op::kHeader: return "Header";
    case Op::kFooter: return "Footer";
    case Op::kSchema: return "Schema";
    case Op::kChannel: return "Channel";
    case Op::kMessage: return "Message";
    case Op::kChunk: return "Chunk";
    case Op::kMessageIndex: return "MessageIndex";
    case Op::kChunkIndex: return "ChunkIndex";
    case Op::kAttachment: return "Attachment";
    case Op::kAttachmentIndex: return "AttachmentIndex";
    case Op::kStatistics: return "Statistics";
    case Op::kMetadata: return "Metadata";
    case Op::kMetadataIndex: return "MetadataIndex";
    case Op::kSummaryOffset: return "SummaryOffset";
    case Op::kDataEnd: return "DataEnd";
  }
  return "unknown";
}

// RecordWriter ------------------------------------------------------------------------------

void RecordWriter::u8(std::uint8_t v) { out_.push_back(static_cast<char>(v)); }

void RecordWriter::u16(std::uint16_t v) {
  const char b[2] = {static_cast<char>(v), static_cast<char>(v >> 8)};
  out_.append(b, 2);
}

void RecordWriter::u32(std::uint32_t v) {
  char b[4];
  for (int i = 0; i < 4; ++i) b[i] = static_cast<char>(v >> (8 * i));
  out_.append(b, 4);
}

void RecordWriter::u64(std::uint64_t v) {
  char b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<char>(v >> (8 * i));
  out_.append(b, 8);
}

void RecordWriter::str(std::string_view v) {
  u32(static_cast<std::uint32_t>(v.size()));
  out_.append(v);
}

void RecordWriter::bytes(std::span<const std::byte> v) {
  out_.append(reinterpret_cast<const char*>(v.data()), v.size());
}

void RecordWriter::string_map(const StringMap& m) {
  const std::size_t mark = out_.size();
  u32(0);
  for (const auto& [k, v] : m) {
    str(k);
    str(v);
  }
  const auto len = static_cast<std::uint32_t>(out_.size() - mark - 4);
  for (int i = 0; i < 4; ++i) out_[mark + i] = static_cast<char>(len >> (8 * i));
}

std::size_t RecordWriter::begin(Op op) {
  u8(static_cast<std::uint8_t>(op));
  const std::size_t mark = out_.size();
  u64(0);  // length, patched by end_record
  return mark;
}

void RecordWriter::end_record(std::size_t mark) {
  const std::uint64_t len = out_.size() - mark - 8;
  for (int i = 0; i < 8; ++i) out_[mark + i] = static_cast<char>(len >> (8 * i));
}

void RecordWriter::header(const Header& r) {
  const auto m = begin(Op::kHeader);
  str(r.profile);
  str(r.library);
  end_record(m);
}

void RecordWriter::footer(const Footer& r) {
  const auto m = begin(Op::kFooter);
  u64(r.summary_start);
  u64(r.summary_offset_start);
  u32(r.summary_crc);
  end_record(m);
}

void RecordWriter::schema(const Schema& r) {
  const auto m = begin(Op::kSchema);
  u16(r.id);
  str(r.name);
  str(r.encoding);
  str(r.data);  // uint32-length-prefixed bytes
  end_record(m);
}

void RecordWriter::channel(const Channel& r) {
  const auto m = begin(Op::kChannel);
  u16(r.id);
  u16(r.schema_id);
  str(r.topic);
  str(r.message_encoding);
  string_map(r.metadata);
  end_record(m);
}

std::size_t RecordWriter::begin_message(std::uint16_t channel_id, std::uint32_t sequence,
                                        std::uint64_t log_time, std::uint64_t publish_time) {
  const auto m = begin(Op::kMessage);
  u16(channel_id);
  u32(sequence);
  u64(log_time);
  u64(publish_time);
  return m;
}

void RecordWriter::message(const Message& r) {
  const auto m = begin_message(r.channel_id, r.sequence, r.log_time, r.publish_time);
  bytes(r.data);
  end_record(m);
}

void RecordWriter::chunk(const ChunkHeader& r) {
  const auto m = begin(Op::kChunk);
  u64(r.message_start_time);
  u64(r.message_end_time);
  u64(r.uncompressed_size);
  u32(r.uncompressed_crc);
  str(r.compression);
  u64(r.records.size());
  bytes(r.records);
  end_record(m);
}

void RecordWriter::message_index(const MessageIndex& r) {
  const auto m = begin(Op::kMessageIndex);
  u16(r.channel_id);
  u32(static_cast<std::uint32_t>(r.records.size() * 16));
  for (const auto& [t, off] : r.records) {
    u64(t);
    u64(off);
  }
  end_record(m);
}

void RecordWriter::chunk_index(const ChunkIndex& r) {
  const auto m = begin(Op::kChunkIndex);
  u64(r.message_start_time);
  u64(r.message_end_time);
  u64(r.chunk_start_offset);
  u64(r.chunk_length);
  u32(static_cast<std::uint32_t>(r.message_index_offsets.size() * 10));
  for (const auto& [ch, off] : r.message_index_offsets) {
    u16(ch);
    u64(off);
  }
  u64(r.message_index_length);
  str(r.compression);
  u64(r.compressed_size);
  u64(r.uncompressed_size);
  end_record(m);
}

void RecordWriter::attachment(const Attachment& r) {
  const auto m = begin(Op::kAttachment);
  const std::size_t start = out_.size();
  u64(r.log_time);
  u64(r.create_time);
  str(r.name);
  str(r.media_type);
  u64(r.data.size());
  bytes(r.data);
  const auto crc = mcap::crc32({reinterpret_cast<const std::byte*>(out_.data()) + start, out_.size() - start});
  u32(crc);
  end_record(m);
}

void RecordWriter::attachment_index(const AttachmentIndex& r) {
  const auto m = begin(Op::kAttachmentIndex);
  u64(r.offset);
  u64(r.length);
  u64(r.log_time);
  u64(r.create_time);
  u64(r.data_size);
  str(r.name);
  str(r.media_type);
  end_record(m);
}

void RecordWriter::statistics(const Statistics& r) {
  const auto m = begin(Op::kStatistics);
  u64(r.message_count);
  u16(r.schema_count);
  u32(r.channel_count);
  u32(r.attachment_count);
  u32(r.metadata_count);
  u32(r.chunk_count);
  u64(r.message_start_time);
  u64(r.message_end_time);
  u32(static_cast<std::uint32_t>(r.channel_message_counts.size() * 10));
  for (const auto& [ch, n] : r.channel_message_counts) {
    u16(ch);
    u64(n);
  }
  end_record(m);
}

void RecordWriter::metadata(const Metadata& r) {
  const auto m = begin(Op::kMetadata);
  str(r.name);
  string_map(r.metadata);
  end_record(m);
}

void RecordWriter::metadata_index(const MetadataIndex& r) {
  const auto m = begin(Op::kMetadataIndex);
  u64(r.offset);
  u64(r.length);
  str(r.name);
  end_record(m);
}

void RecordWriter::summary_offset(const SummaryOffset& r) {
  const auto m = begin(Op::kSummaryOffset);
  u8(r.group_opcode);
  u64(r.group_start);
  u64(r.group_length);
  end_record(m);
}

void RecordWriter::data_end(const DataEnd& r) {
  const auto m = begin(Op::kDataEnd);
  u32(r.data_section_crc);
  end_record(m);
}

// RecordReader ------------------------------------------------------------------------------

Status RecordReader::need(std::size_t n, std::string_view field) {
  if (data_.size() - pos_ < n) {
    return data_loss(std::string(what_) + " record is truncated at field '" + std::string(field) + "' (needs " +
                     std::to_string(n) + " bytes, " + std::to_string(data_.size() - pos_) + " left)");
  }
  return Status::ok();
}

namespace {

template <class T>
T load_le(const std::byte* p) {
  T v = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) v |= static_cast<T>(static_cast<std::uint8_t>(p[i])) << (8 * i);
  return v;
}

}  // namespace

Status RecordReader::u8(std::uint8_t& v) {
  EDGEVLA_RETURN_IF_ERROR(need(1, "u8"));
  v = static_cast<std::uint8_t>(data_[pos_]);
  pos_ += 1;
  return Status::ok();
}

Status RecordReader::u16(std::uint16_t& v) {
  EDGEVLA_RETURN_IF_ERROR(need(2, "u16"));
  v = load_le<std::uint16_t>(data_.data() + pos_);
  pos_ += 2;
  return Status::ok();
}

Status RecordReader::u32(std::uint32_t& v) {
  EDGEVLA_RETURN_IF_ERROR(need(4, "u32"));
  v = load_le<std::uint32_t>(data_.data() + pos_);
  pos_ += 4;
  return Status::ok();
}

Status RecordReader::u64(std::uint64_t& v) {
  EDGEVLA_RETURN_IF_ERROR(need(8, "u64"));
  v = load_le<std::uint64_t>(data_.data() + pos_);
  pos_ += 8;
  return Status::ok();
}

Status RecordReader::bytes32(std::span<const std::byte>& v) {
  std::uint32_t n = 0;
  EDGEVLA_RETURN_IF_ERROR(u32(n));
  EDGEVLA_RETURN_IF_ERROR(need(n, "bytes"));
  v = data_.subspan(pos_, n);
  pos_ += n;
  return Status::ok();
}

Status RecordReader::bytes64(std::span<const std::byte>& v) {
  std::uint64_t n = 0;
  EDGEVLA_RETURN_IF_ERROR(u64(n));
  if (n > data_.size() - pos_) return need(data_.size() - pos_ + 1, "records");
  v = data_.subspan(pos_, static_cast<std::size_t>(n));
  pos_ += static_cast<std::size_t>(n);
  return Status::ok();
}

Status RecordReader::str(std::string& v) {
  std::span<const std::byte> b;
  EDGEVLA_RETURN_IF_ERROR(bytes32(b));
  v.assign(reinterpret_cast<const char*>(b.data()), b.size());
  return Status::ok();
}

Status RecordReader::str_map(StringMap& v) {
  std::span<const std::byte> b;
  EDGEVLA_RETURN_IF_ERROR(bytes32(b));
  RecordReader inner(b, what_);
  while (!inner.rest().empty()) {
    std::string k, val;
    EDGEVLA_RETURN_IF_ERROR(inner.str(k));
    EDGEVLA_RETURN_IF_ERROR(inner.str(val));
    v[k] = std::move(val);
  }
  return Status::ok();
}

// Parsers -----------------------------------------------------------------------------------
// Fields added to a record by later spec revisions are ignored (they follow the known ones).

Expected<Header> parse_header(std::span<const std::byte> c) {
  RecordReader r(c, "Header");
  Header h;
  EDGEVLA_RETURN_IF_ERROR(r.str(h.profile));
  EDGEVLA_RETURN_IF_ERROR(r.str(h.library));
  return h;
}

Expected<Footer> parse_footer(std::span<const std::byte> c) {
  RecordReader r(c, "Footer");
  Footer f;
  EDGEVLA_RETURN_IF_ERROR(r.u64(f.summary_start));
  EDGEVLA_RETURN_IF_ERROR(r.u64(f.summary_offset_start));
  EDGEVLA_RETURN_IF_ERROR(r.u32(f.summary_crc));
  return f;
}

Expected<Schema> parse_schema(std::span<const std::byte> c) {
  RecordReader r(c, "Schema");
  Schema s;
  EDGEVLA_RETURN_IF_ERROR(r.u16(s.id));
  EDGEVLA_RETURN_IF_ERROR(r.str(s.name));
  EDGEVLA_RETURN_IF_ERROR(r.str(s.encoding));
  EDGEVLA_RETURN_IF_ERROR(r.str(s.data));
  return s;
}

Expected<Channel> parse_channel(std::span<const std::byte> c) {
  RecordReader r(c, "Channel");
  Channel ch;
  EDGEVLA_RETURN_IF_ERROR(r.u16(ch.id));
  EDGEVLA_RETURN_IF_ERROR(r.u16(ch.schema_id));
  EDGEVLA_RETURN_IF_ERROR(r.str(ch.topic));
  EDGEVLA_RETURN_IF_ERROR(r.str(ch.message_encoding));
  EDGEVLA_RETURN_IF_ERROR(r.str_map(ch.metadata));
  return ch;
}

Expected<Message> parse_message(std::span<const std::byte> c) {
  RecordReader r(c, "Message");
  Message m;
  EDGEVLA_RETURN_IF_ERROR(r.u16(m.channel_id));
  EDGEVLA_RETURN_IF_ERROR(r.u32(m.sequence));
  EDGEVLA_RETURN_IF_ERROR(r.u64(m.log_time));
  EDGEVLA_RETURN_IF_ERROR(r.u64(m.publish_time));
  m.data = r.rest();
  return m;
}

Expected<ChunkHeader> parse_chunk(std::span<const std::byte> c) {
  RecordReader r(c, "Chunk");
  ChunkHeader h;
  EDGEVLA_RETURN_IF_ERROR(r.u64(h.message_start_time));
  EDGEVLA_RETURN_IF_ERROR(r.u64(h.message_end_time));
  EDGEVLA_RETURN_IF_ERROR(r.u64(h.uncompressed_size));
  EDGEVLA_RETURN_IF_ERROR(r.u32(h.uncompressed_crc));
  EDGEVLA_RETURN_IF_ERROR(r.str(h.compression));
  EDGEVLA_RETURN_IF_ERROR(r.bytes64(h.records));
  return h;
}

Expected<MessageIndex> parse_message_index(std::span<const std::byte> c) {
  RecordReader r(c, "MessageIndex");
  MessageIndex mi;
  EDGEVLA_RETURN_IF_ERROR(r.u16(mi.channel_id));
  std::span<const std::byte> arr;
  EDGEVLA_RETURN_IF_ERROR(r.bytes32(arr));
  RecordReader a(arr, "MessageIndex");
  while (!a.rest().empty()) {
    std::uint64_t t = 0, off = 0;
    EDGEVLA_RETURN_IF_ERROR(a.u64(t));
    EDGEVLA_RETURN_IF_ERROR(a.u64(off));
    mi.records.emplace_back(t, off);
  }
  return mi;
}

Expected<ChunkIndex> parse_chunk_index(std::span<const std::byte> c) {
  RecordReader r(c, "ChunkIndex");
  ChunkIndex ci;
  EDGEVLA_RETURN_IF_ERROR(r.u64(ci.message_start_time));
  EDGEVLA_RETURN_IF_ERROR(r.u64(ci.message_end_time));
  EDGEVLA_RETURN_IF_ERROR(r.u64(ci.chunk_start_offset));
  EDGEVLA_RETURN_IF_ERROR(r.u64(ci.chunk_length));
  std::span<const std::byte> map;
  EDGEVLA_RETURN_IF_ERROR(r.bytes32(map));
  RecordReader m(map, "ChunkIndex");
  while (!m.rest().empty()) {
    std::uint16_t ch = 0;
    std::uint64_t off = 0;
    EDGEVLA_RETURN_IF_ERROR(m.u16(ch));
    EDGEVLA_RETURN_IF_ERROR(m.u64(off));
    ci.message_index_offsets[ch] = off;
  }
  EDGEVLA_RETURN_IF_ERROR(r.u64(ci.message_index_length));
  EDGEVLA_RETURN_IF_ERROR(r.str(ci.compression));
  EDGEVLA_RETURN_IF_ERROR(r.u64(ci.compressed_size));
  EDGEVLA_RETURN_IF_ERROR(r.u64(ci.uncompressed_size));
  return ci;
}

Expected<Attachment> parse_attachment(std::span<const std::byte> c) {
  RecordReader r(c, "Attachment");
  Attachment a;
  EDGEVLA_RETURN_IF_ERROR(r.u64(a.log_time));
  EDGEVLA_RETURN_IF_ERROR(r.u64(a.create_time));
  EDGEVLA_RETURN_IF_ERROR(r.str(a.name));
  EDGEVLA_RETURN_IF_ERROR(r.str(a.media_type));
  EDGEVLA_RETURN_IF_ERROR(r.bytes64(a.data));
  const std::size_t covered = c.size() - r.rest().size();
  EDGEVLA_RETURN_IF_ERROR(r.u32(a.crc));
  if (a.crc != 0 && crc32(c.first(covered)) != a.crc) {
    return data_loss("Attachment '" + a.name + "' fails its CRC check");
  }
  return a;
}

Expected<AttachmentIndex> parse_attachment_index(std::span<const std::byte> c) {
  RecordReader r(c, "AttachmentIndex");
  AttachmentIndex a;
  EDGEVLA_RETURN_IF_ERROR(r.u64(a.offset));
  EDGEVLA_RETURN_IF_ERROR(r.u64(a.length));
  EDGEVLA_RETURN_IF_ERROR(r.u64(a.log_time));
  EDGEVLA_RETURN_IF_ERROR(r.u64(a.create_time));
  EDGEVLA_RETURN_IF_ERROR(r.u64(a.data_size));
  EDGEVLA_RETURN_IF_ERROR(r.str(a.name));
  EDGEVLA_RETURN_IF_ERROR(r.str(a.media_type));
  return a;
}

Expected<Statistics> parse_statistics(std::span<const std::byte> c) {
  RecordReader r(c, "Statistics");
  Statistics s;
  EDGEVLA_RETURN_IF_ERROR(r.u64(s.message_count));
  EDGEVLA_RETURN_IF_ERROR(r.u16(s.schema_count));
  EDGEVLA_RETURN_IF_ERROR(r.u32(s.channel_count));
  EDGEVLA_RETURN_IF_ERROR(r.u32(s.attachment_count));
  EDGEVLA_RETURN_IF_ERROR(r.u32(s.metadata_count));
  EDGEVLA_RETURN_IF_ERROR(r.u32(s.chunk_count));
  EDGEVLA_RETURN_IF_ERROR(r.u64(s.message_start_time));
  EDGEVLA_RETURN_IF_ERROR(r.u64(s.message_end_time));
  std::span<const std::byte> map;
  EDGEVLA_RETURN_IF_ERROR(r.bytes32(map));
  RecordReader m(map, "Statistics");
  while (!m.rest().empty()) {
    std::uint16_t ch = 0;
    std::uint64_t n = 0;
    EDGEVLA_RETURN_IF_ERROR(m.u16(ch));
    EDGEVLA_RETURN_IF_ERROR(m.u64(n));
    s.channel_message_counts[ch] = n;
  }
  return s;
}

Expected<Metadata> parse_metadata(std::span<const std::byte> c) {
  RecordReader r(c, "Metadata");
  Metadata m;
  EDGEVLA_RETURN_IF_ERROR(r.str(m.name));
  EDGEVLA_RETURN_IF_ERROR(r.str_map(m.metadata));
  return m;
}

Expected<MetadataIndex> parse_metadata_index(std::span<const std::byte> c) {
  RecordReader r(c, "MetadataIndex");
  MetadataIndex m;
  EDGEVLA_RETURN_IF_ERROR(r.u64(m.offset));
  EDGEVLA_RETURN_IF_ERROR(r.u64(m.length));
  EDGEVLA_RETURN_IF_ERROR(r.str(m.name));
  return m;
}

Expected<SummaryOffset> parse_summary_offset(std::span<const std::byte> c) {
  RecordReader r(c, "SummaryOffset");
  SummaryOffset s;
  EDGEVLA_RETURN_IF_ERROR(r.u8(s.group_opcode));
  EDGEVLA_RETURN_IF_ERROR(r.u64(s.group_start));
  EDGEVLA_RETURN_IF_ERROR(r.u64(s.group_length));
  return s;
}

Expected<DataEnd> parse_data_end(std::span<const std::byte> c) {
  RecordReader r(c, "DataEnd");
  DataEnd d;
  EDGEVLA_RETURN_IF_ERROR(r.u32(d.data_section_crc));
  return d;
}

}  // namespace edgevla::mcap
