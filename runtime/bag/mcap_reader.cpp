#include "runtime/bag/mcap_reader.hpp"

#include <cstring>

#include "runtime/bag/compression.hpp"

namespace edgevla::mcap {
namespace {

std::uint64_t load_u64(const std::byte* p) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(static_cast<std::uint8_t>(p[i])) << (8 * i);
  return v;
}

bool has_magic(std::span<const std::byte> b) {
  return b.size() >= kMagic.size() && std::memcmp(b.data(), kMagic.data(), kMagic.size()) == 0;
}

std::string at(std::uint64_t offset) { return "at byte " + std::to_string(offset); }

}  // namespace

void McapReader::issue(std::uint64_t offset, std::string message) {
  issues_.push_back({offset, std::move(message)});
}

Expected<std::unique_ptr<McapReader>> McapReader::open(const std::string& path) {
  auto file = Buffer::map_file(path);
  if (!file) return file.status();
  std::unique_ptr<McapReader> r(new McapReader(path, std::move(*file)));
  const auto b = r->bytes();
  r->summary_.file_size = b.size();
  if (!has_magic(b)) {
    return data_loss("'" + path + "' is not an MCAP file (wrong magic; it should start with \\x89MCAP0\\r\\n)");
  }
  if (!r->read_summary()) {
    // No usable summary (a crashed recorder, or a writer that writes none): scan for it.
    Visitors none;
    EDGEVLA_RETURN_IF_ERROR(r->scan(none, /*record_statistics=*/true));
    r->summary_.schemas = r->schemas_;
    r->summary_.channels = r->channels_;
    r->summary_.statistics = r->scanned_;
  }
  r->open_issues_ = r->issues_.size();
  return r;
}

bool McapReader::read_summary() {
  const auto b = bytes();
  if (b.size() < kMagic.size() + kFooterAndMagic) {
    issue(b.size(), "file is too short for a footer (" + std::to_string(b.size()) + " bytes): truncated");
    return false;
  }
  const auto tail = b.subspan(b.size() - kFooterAndMagic);
  if (!has_magic(tail.subspan(29)) || static_cast<std::uint8_t>(tail[0]) != static_cast<std::uint8_t>(Op::kFooter) ||
      load_u64(tail.data() + 1) != 20) {
    issue(b.size(), "no footer at the end of the file: the recording was cut short (a crash or kill); "
                    "messages are read by scanning, `edgevla bag recover` rewrites it whole");
    return false;
  }
  auto footer = parse_footer(tail.subspan(9, 20));
  if (!footer) return false;
  if (footer->summary_start == 0) return false;
  const std::uint64_t footer_offset = b.size() - kFooterAndMagic;
  if (footer->summary_start >= footer_offset) {
    issue(footer_offset, "footer points to a summary outside the file");
    return false;
  }
  if (footer->summary_crc != 0) {
    const auto covered = b.subspan(footer->summary_start, footer_offset + 1 + 8 + 16 - footer->summary_start);
    if (crc32(covered) != footer->summary_crc) {
      issue(footer->summary_start, "summary fails its CRC check; using a scan instead");
      return false;
    }
  }
  if (footer->summary_offset_start != 0 &&
      (footer->summary_offset_start < footer->summary_start || footer->summary_offset_start > footer_offset)) {
    issue(footer_offset, "footer points to summary offsets outside the summary; using a scan instead");
    return false;
  }
  const std::uint64_t end = footer->summary_offset_start ? footer->summary_offset_start : footer_offset;
  std::uint64_t pos = footer->summary_start;
  while (pos < end) {
    if (end - pos < kRecordPrefix) break;
    const auto op = static_cast<std::uint8_t>(b[pos]);
    const std::uint64_t len = load_u64(b.data() + pos + 1);
    if (len > end - pos - kRecordPrefix) {
      issue(pos, "summary record claims more bytes than the summary holds");
      return false;
    }
    const auto content = b.subspan(pos + kRecordPrefix, len);
    switch (static_cast<Op>(op)) {
      case Op::kSchema:
        if (auto s = parse_schema(content)) summary_.schemas[s->id] = *s;
        break;
      case Op::kChannel:
        if (auto c = parse_channel(content)) summary_.channels[c->id] = *c;
        break;
      case Op::kStatistics:
        if (auto s = parse_statistics(content)) summary_.statistics = *s;
        break;
      case Op::kChunkIndex:
        if (auto c = parse_chunk_index(content)) {
          summary_.compression_bytes[c->compression.empty() ? "none" : c->compression] += c->compressed_size;
          summary_.chunk_indexes.push_back(std::move(*c));
        }
        break;
      default:
        break;  // other summary records (and unknown ones) are not needed here
    }
    pos += kRecordPrefix + len;
  }
  // The header is the first record after the magic.
  if (b.size() > kMagic.size() + kRecordPrefix && static_cast<std::uint8_t>(b[kMagic.size()]) == 1) {
    const std::uint64_t len = load_u64(b.data() + kMagic.size() + 1);
    if (len <= b.size() - kMagic.size() - kRecordPrefix) {
      if (auto h = parse_header(b.subspan(kMagic.size() + kRecordPrefix, len))) summary_.header = *h;
    }
  }
  summary_.has_summary = true;
  summary_.complete = true;
  return true;
}

Status McapReader::on_record(std::uint8_t op, std::uint64_t offset, std::span<const std::byte> content,
                             const BufferPtr& owner, const Visitors& v, bool in_chunk) {
  switch (static_cast<Op>(op)) {
    case Op::kSchema: {
      auto s = parse_schema(content);
      if (!s) {
        issue(offset, s.status().message());
      } else if (s->id != 0) {
        schemas_[s->id] = *s;
      }
      return Status::ok();
    }
    case Op::kChannel: {
      auto c = parse_channel(content);
      if (!c) {
        issue(offset, c.status().message());
      } else {
        channels_[c->id] = *c;
      }
      return Status::ok();
    }
    case Op::kMessage: {
      auto m = parse_message(content);
      if (!m) {
        issue(offset, m.status().message());
        return Status::ok();
      }
      auto ch = channels_.find(m->channel_id);
      if (ch == channels_.end()) {
        issue(offset, "message on channel " + std::to_string(m->channel_id) + " before its Channel record; skipped");
        return Status::ok();
      }
      if (scanned_.message_count == 0 || m->log_time < scanned_.message_start_time) {
        scanned_.message_start_time = m->log_time;
      }
      scanned_.message_end_time = std::max(scanned_.message_end_time, m->log_time);
      ++scanned_.message_count;
      ++scanned_.channel_message_counts[m->channel_id];
      if (!v.message) return Status::ok();
      auto sc = schemas_.find(ch->second.schema_id);
      MessageView view{&ch->second, sc == schemas_.end() ? nullptr : &sc->second, *m, owner};
      return v.message(view);
    }
    case Op::kMetadata:
      if (in_chunk) return Status::ok();
      ++scanned_.metadata_count;
      if (v.metadata) {
        if (auto md = parse_metadata(content)) {
          v.metadata(*md);
        } else {
          issue(offset, md.status().message());
        }
      }
      return Status::ok();
    case Op::kAttachment:
      if (in_chunk) return Status::ok();
      ++scanned_.attachment_count;
      if (v.attachment) {
        if (auto a = parse_attachment(content)) {
          v.attachment({*a, owner});
        } else {
          issue(offset, a.status().message());
        }
      }
      return Status::ok();
    default:
      return Status::ok();  // indexes and unknown opcodes carry nothing to deliver
  }
}

Status McapReader::scan_chunk(std::uint64_t offset, std::span<const std::byte> content, const Visitors& v) {
  auto chunk = parse_chunk(content);
  if (!chunk) {
    issue(offset, chunk.status().message());
    return Status::ok();
  }
  ++scanned_.chunk_count;
  BufferPtr owner = file_;
  std::span<const std::byte> records = chunk->records;
  if (!chunk->compression.empty()) {
    constexpr std::uint64_t kMaxChunk = std::uint64_t{16} << 30;
    if (chunk->uncompressed_size > kMaxChunk) {
      issue(offset, "chunk claims " + std::to_string(chunk->uncompressed_size) + " uncompressed bytes; skipped");
      return Status::ok();
    }
    if (auto known = parse_compression(chunk->compression); !known) {
      issue(offset, "chunk " + at(offset) + ": " + known.status().message() + "; skipped");
      return Status::ok();
    }
    // A damaged header must not make the reader allocate gigabytes for a few compressed bytes.
    if (chunk->uncompressed_size > max_decompressed_size(chunk->compression, chunk->records.size())) {
      issue(offset, "chunk " + at(offset) + " claims " + std::to_string(chunk->uncompressed_size) +
                        " uncompressed bytes from " + std::to_string(chunk->records.size()) + " " +
                        chunk->compression + " bytes, more than " + chunk->compression +
                        " can produce (corrupted header); skipped");
      return Status::ok();
    }
    auto buf = Buffer::allocate_heap(static_cast<std::size_t>(chunk->uncompressed_size));
    if (!buf) return buf.status();
    if (Status s = decompress(chunk->compression, chunk->records, (*buf)->bytes()); !s.is_ok()) {
      issue(offset, "chunk " + at(offset) + ": " + s.message() + "; skipped");
      return Status::ok();
    }
    owner = *buf;
    records = owner->bytes();
  } else if (chunk->records.size() != chunk->uncompressed_size) {
    issue(offset, "uncompressed chunk " + at(offset) + " size disagrees with its header; skipped");
    return Status::ok();
  }
  if (chunk->uncompressed_crc != 0 && crc32(records) != chunk->uncompressed_crc) {
    issue(offset, "chunk " + at(offset) + " fails its CRC check (corrupted); its messages are skipped");
    return Status::ok();
  }
  std::size_t pos = 0;
  while (pos < records.size()) {
    if (records.size() - pos < kRecordPrefix) {
      issue(offset, "chunk " + at(offset) + " ends inside a record");
      break;
    }
    const auto op = static_cast<std::uint8_t>(records[pos]);
    const std::uint64_t len = load_u64(records.data() + pos + 1);
    if (len > records.size() - pos - kRecordPrefix) {
      issue(offset, "record in chunk " + at(offset) + " claims more bytes than the chunk holds");
      break;
    }
    EDGEVLA_RETURN_IF_ERROR(on_record(op, offset, records.subspan(pos + kRecordPrefix, len), owner, v, true));
    pos += kRecordPrefix + len;
  }
  return Status::ok();
}

Status McapReader::scan(const Visitors& v, bool record_statistics) {
  const auto b = bytes();
  schemas_.clear();
  channels_.clear();
  scanned_ = Statistics{};
  std::uint64_t pos = kMagic.size();
  bool first = true;
  while (true) {
    if (pos == b.size()) {
      issue(pos, "file ends without a DataEnd record: truncated (everything before is recovered)");
      break;
    }
    if (b.size() - pos < kRecordPrefix) {
      issue(pos, "file ends inside a record header: truncated");
      break;
    }
    const auto op = static_cast<std::uint8_t>(b[pos]);
    const std::uint64_t len = load_u64(b.data() + pos + 1);
    if (op == 0) {
      issue(pos, "invalid opcode 0 " + at(pos) + ": the file is corrupted from here on");
      break;
    }
    if (len > b.size() - pos - kRecordPrefix) {
      issue(pos, std::string(op_name(op)) + " record " + at(pos) + " claims " + std::to_string(len) +
                     " bytes, past the end of the file: truncated");
      break;
    }
    const auto content = b.subspan(pos + kRecordPrefix, len);
    if (first) {
      first = false;
      if (op != static_cast<std::uint8_t>(Op::kHeader)) {
        issue(pos, "first record is " + std::string(op_name(op)) + ", not a Header");
      } else if (auto h = parse_header(content)) {
        summary_.header = *h;
      }
    }
    if (op == static_cast<std::uint8_t>(Op::kChunk)) {
      EDGEVLA_RETURN_IF_ERROR(scan_chunk(pos, content, v));
    } else if (op == static_cast<std::uint8_t>(Op::kDataEnd)) {
      auto d = parse_data_end(content);
      const bool crc_ok = d && (d->data_section_crc == 0 || crc32(b.first(pos)) == d->data_section_crc);
      if (!crc_ok) issue(pos, "data section fails its CRC check: some bytes before it are corrupted");
      if (record_statistics) summary_.complete = crc_ok;
      break;  // the summary follows; it repeats records we already have
    } else {
      EDGEVLA_RETURN_IF_ERROR(on_record(op, pos, content, file_, v, false));
    }
    pos += kRecordPrefix + len;
  }
  return Status::ok();
}

Status McapReader::for_each_message(const std::function<Status(const MessageView&)>& visit) {
  issues_.resize(open_issues_);  // keep what open() found, replace the previous scan's
  Visitors v;
  v.message = visit;
  return scan(v, false);
}

std::vector<Metadata> McapReader::metadata() {
  issues_.resize(open_issues_);
  std::vector<Metadata> out;
  Visitors v;
  v.metadata = [&](const Metadata& m) { out.push_back(m); };
  (void)scan(v, false);
  return out;
}

std::vector<AttachmentView> McapReader::attachments() {
  issues_.resize(open_issues_);
  std::vector<AttachmentView> out;
  Visitors v;
  v.attachment = [&](const AttachmentView& a) { out.push_back(a); };
  (void)scan(v, false);
  return out;
}

}  // namespace edgevla::mcap
