#include "runtime/bag/mcap_writer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "runtime/bag/mcap_reader.hpp"
#include "runtime/util/log.hpp"
#include "runtime/util/thread_name.hpp"

namespace edgevla::mcap {
namespace {

std::span<const std::byte> as_bytes(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

// Chunks finished but not yet written. Two: one being written, one waiting, while the caller
// fills a third; a writer that falls further behind makes the caller wait (its queues, not
// this buffer, absorb the backlog).
constexpr std::size_t kMaxPendingJobs = 2;

}  // namespace

Expected<std::unique_ptr<McapWriter>> McapWriter::open(const std::string& path, McapWriterOptions options) {
  // A bag under a folder that does not exist yet (a new run directory) gets that folder.
  if (const std::filesystem::path parent = std::filesystem::path(path).parent_path(); !parent.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(parent, ec);
    if (ec) {
      return unavailable("cannot create bag '" + path + "': its folder '" + parent.string() +
                         "' cannot be made (" + ec.message() + "); record to a writable folder");
    }
  }
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return unavailable("cannot create bag '" + path + "': " + std::strerror(errno));
  std::unique_ptr<McapWriter> w(new McapWriter(path, fd, std::move(options)));
  std::string head(reinterpret_cast<const char*>(kMagic.data()), kMagic.size());
  RecordWriter(head).header({w->options_.profile, w->options_.library});
  EDGEVLA_RETURN_IF_ERROR(w->write_raw(head));
  w->io_ = std::thread([p = w.get()] {
    name_this_thread("mcap-io");
    p->io_loop();
  });
  return w;
}

McapWriter::McapWriter(std::string path, int fd, McapWriterOptions options)
    : path_(std::move(path)), fd_(fd), options_(std::move(options)),
      compressor_(options_.compression, options_.compression_level) {
  chunk_.reserve(options_.chunk_size + (64 << 10));
}

McapWriter::~McapWriter() {
  if (Status s = close(); !s.is_ok()) logger().error("closing bag '{}': {}", path_, s.message());
}

// I/O thread -------------------------------------------------------------------------------

Status McapWriter::write_raw(std::span<const std::byte> bytes, std::uint32_t crc) {
  data_crc_ = crc32_concat(data_crc_, crc, bytes.size());
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      if (err == ENOSPC || err == EDQUOT || err == EFBIG) {
        disk_full_ = true;
        return resource_exhausted("writing bag '" + path_ + "' failed: " + std::strerror(err) + " (" +
                                  (err == EFBIG ? "the file size limit is reached" : "the disk is full") +
                                  "): the recording stops at " + std::to_string(offset_) + " bytes");
      }
      return unavailable("writing bag '" + path_ + "' failed: " + std::strerror(err));
    }
    bytes = bytes.subspan(static_cast<std::size_t>(n));
    offset_ += static_cast<std::uint64_t>(n);
    bytes_written_.fetch_add(static_cast<std::uint64_t>(n), std::memory_order_relaxed);
  }
  return Status::ok();
}

Status McapWriter::write_chunk_now(PendingChunk& c) {
  const auto records = as_bytes(c.records);
  std::span<const std::byte> body = records;
  std::uint32_t body_crc = c.crc;  // uncompressed: the records' CRC, taken while encoding
  if (options_.compression != Compression::kNone) {
    EDGEVLA_ASSIGN_OR_RETURN(body, compressor_.compress(records));
    body_crc = crc32(body);
  }
  // The chunk record's fields, then its records straight from the buffer.
  const std::string compression(compression_name(options_.compression));
  std::string head;
  RecordWriter h(head);
  h.u8(static_cast<std::uint8_t>(Op::kChunk));
  h.u64(8 + 8 + 8 + 4 + 4 + compression.size() + 8 + body.size());
  h.u64(c.start_time);
  h.u64(c.end_time);
  h.u64(records.size());
  h.u32(c.crc);
  h.str(compression);
  h.u64(body.size());
  ChunkIndex ci;
  ci.message_start_time = c.start_time;
  ci.message_end_time = c.end_time;
  ci.chunk_start_offset = offset_;
  ci.compression = compression;
  ci.compressed_size = body.size();
  ci.uncompressed_size = records.size();
  EDGEVLA_RETURN_IF_ERROR(write_raw(as_bytes(head)));
  EDGEVLA_RETURN_IF_ERROR(write_raw(body, body_crc));
  ci.chunk_length = offset_ - ci.chunk_start_offset;

  std::string indexes;
  const std::uint64_t index_start = offset_;
  for (const auto& [channel, idx] : c.indexes) {
    ci.message_index_offsets[channel] = index_start + indexes.size();
    RecordWriter(indexes).message_index(idx);
  }
  ci.message_index_length = indexes.size();
  EDGEVLA_RETURN_IF_ERROR(write_raw(indexes));
  RecordWriter(chunk_index_records_).chunk_index(ci);
  ++chunk_index_count_;
  for (const auto& [channel, idx] : c.indexes) {
    written_channel_counts_[channel] += idx.records.size();
    written_messages_ += idx.records.size();
  }
  if (written_start_time_ == 0 || c.start_time < written_start_time_) written_start_time_ = c.start_time;
  written_end_time_ = std::max(written_end_time_, c.end_time);
  uncompressed_bytes_.fetch_add(records.size(), std::memory_order_relaxed);
  return Status::ok();
}

void McapWriter::io_loop() {
  for (;;) {
    std::function<Status()> job;
    {
      std::unique_lock lock(io_mu_);
      io_cv_.wait(lock, [&] { return io_stop_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stopping, and nothing left to do
      job = std::move(jobs_.front());
      io_busy_ = true;
    }
    // After a failure the remaining jobs are dropped. A job that failed for want of room is
    // cut off the file again, so it ends with its last whole record.
    const std::uint64_t offset = offset_;
    const std::uint32_t crc = data_crc_;
    const std::size_t chunk_index_bytes = chunk_index_records_.size(), chunks = chunk_index_count_,
                      metadata = metadata_indexes_.size(), attachments = attachment_indexes_.size();
    Status s = failed().is_ok() ? job() : Status::ok();
    if (!s.is_ok() && disk_full_) rewind_to(offset, crc, chunk_index_bytes, chunks, metadata, attachments);
    {
      std::lock_guard lock(io_mu_);
      jobs_.pop_front();
      io_busy_ = false;
      if (!s.is_ok() && failed_.is_ok()) failed_ = s;
    }
    io_cv_.notify_all();
  }
}

void McapWriter::rewind_to(std::uint64_t offset, std::uint32_t crc, std::size_t chunk_index_bytes, std::size_t chunks,
                           std::size_t metadata, std::size_t attachments) {
  if (::ftruncate(fd_, static_cast<off_t>(offset)) != 0 || ::lseek(fd_, static_cast<off_t>(offset), SEEK_SET) < 0) {
    return;  // cannot cut it: the bag stays cut short mid-record (`bag recover` handles that)
  }
  offset_ = offset;
  data_crc_ = crc;
  bytes_written_.store(offset, std::memory_order_relaxed);
  chunk_index_records_.resize(chunk_index_bytes);
  chunk_index_count_ = chunks;
  metadata_indexes_.resize(metadata);
  attachment_indexes_.resize(attachments);
}

Status McapWriter::submit(std::function<Status()> job) {
  std::unique_lock lock(io_mu_);
  io_cv_.wait(lock, [&] { return jobs_.size() < kMaxPendingJobs || !failed_.is_ok(); });
  if (!failed_.is_ok()) return failed_;
  jobs_.push_back(std::move(job));
  io_cv_.notify_all();
  return Status::ok();
}

Status McapWriter::drain() {
  std::unique_lock lock(io_mu_);
  io_cv_.wait(lock, [&] { return jobs_.empty() && !io_busy_; });
  return failed_;
}

Status McapWriter::failed() const {
  std::lock_guard lock(io_mu_);
  return failed_;
}

// Caller side ------------------------------------------------------------------------------

std::uint16_t McapWriter::add_schema(const std::string& name, const std::string& encoding, const std::string& data) {
  for (const auto& s : schemas_) {
    if (s.name == name && s.encoding == encoding && s.data == data) return s.id;
  }
  schemas_.push_back({static_cast<std::uint16_t>(schemas_.size() + 1), name, encoding, data});
  return schemas_.back().id;
}

std::uint16_t McapWriter::add_channel(const std::string& topic, const std::string& message_encoding,
                                      std::uint16_t schema_id, const StringMap& metadata) {
  for (const auto& c : channels_) {
    if (c.topic == topic && c.message_encoding == message_encoding && c.schema_id == schema_id &&
        c.metadata == metadata) {
      return c.id;
    }
  }
  channels_.push_back({static_cast<std::uint16_t>(channels_.size()), schema_id, topic, message_encoding, metadata});
  return channels_.back().id;
}

void McapWriter::append_crc(std::size_t from) {
  chunk_crc_ = crc32({reinterpret_cast<const std::byte*>(chunk_.data()) + from, chunk_.size() - from}, chunk_crc_);
}

void McapWriter::begin_message_in_chunk(std::uint16_t channel_id) {
  // Every chunk carries the schema and channel records of the messages in it.
  if (chunk_channels_.insert(channel_id).second) {
    const std::size_t from = chunk_.size();
    const Channel& ch = channels_[channel_id];
    RecordWriter w(chunk_);
    if (ch.schema_id != 0 && chunk_schemas_.insert(ch.schema_id).second) w.schema(schemas_[ch.schema_id - 1]);
    w.channel(ch);
    append_crc(from);
  }
}

void McapWriter::note_message(std::uint16_t channel_id, std::uint64_t log_time, std::size_t offset) {
  if (chunk_index_entries_.empty() || log_time < chunk_start_time_) chunk_start_time_ = log_time;
  if (chunk_index_entries_.empty() || log_time > chunk_end_time_) chunk_end_time_ = log_time;
  auto& idx = chunk_index_entries_[channel_id];
  idx.channel_id = channel_id;
  idx.records.emplace_back(log_time, offset);
  if (statistics_.message_count == 0 || log_time < statistics_.message_start_time) {
    statistics_.message_start_time = log_time;
  }
  if (log_time > statistics_.message_end_time) statistics_.message_end_time = log_time;
  ++statistics_.message_count;
  ++statistics_.channel_message_counts[channel_id];
  ++messages_;
}

Status McapWriter::write_message(std::uint16_t channel_id, std::uint32_t sequence, std::uint64_t log_time,
                                 std::uint64_t publish_time, std::span<const std::byte> data) {
  return write_message_with(
      channel_id, sequence, log_time, publish_time,
      [&](std::string& out) {
        out.append(reinterpret_cast<const char*>(data.data()), data.size());
        return Status::ok();
      },
      data.size());
}

Status McapWriter::write_message_with(std::uint16_t channel_id, std::uint32_t sequence, std::uint64_t log_time,
                                      std::uint64_t publish_time, const std::function<Status(std::string& out)>& fill,
                                      std::size_t size_hint) {
  if (closed_) return failed_precondition("bag '" + path_ + "' is closed");
  EDGEVLA_RETURN_IF_ERROR(failed());
  if (channel_id >= channels_.size()) return invalid_argument("unknown channel id " + std::to_string(channel_id));
  if (!chunk_.empty() && chunk_.size() + size_hint > options_.chunk_size) EDGEVLA_RETURN_IF_ERROR(finish_chunk());
  // Room for the channel/schema records, the record header and the data, before writing any.
  if (chunk_.capacity() < chunk_.size() + size_hint + (64 << 10)) chunk_.reserve(chunk_.size() + size_hint + (64 << 10));
  begin_message_in_chunk(channel_id);
  const std::size_t offset = chunk_.size();
  RecordWriter w(chunk_);
  const std::size_t mark = w.begin_message(channel_id, sequence, log_time, publish_time);
  if (Status s = fill(chunk_); !s.is_ok()) {
    chunk_.resize(offset);  // drop the half-written record
    return s;
  }
  w.end_record(mark);
  append_crc(offset);
  note_message(channel_id, log_time, offset);
  if (chunk_.size() >= options_.chunk_size) return finish_chunk();
  return Status::ok();
}

Status McapWriter::finish_chunk() {
  if (chunk_.empty()) return Status::ok();
  auto pending = std::make_shared<PendingChunk>();
  pending->records.swap(chunk_);
  pending->crc = chunk_crc_;
  pending->start_time = chunk_start_time_;
  pending->end_time = chunk_end_time_;
  pending->indexes.swap(chunk_index_entries_);
  chunk_crc_ = 0;
  chunk_channels_.clear();
  chunk_schemas_.clear();
  ++statistics_.chunk_count;
  {
    std::lock_guard lock(io_mu_);  // a buffer the I/O thread is done with, capacity kept
    if (!spare_.empty()) {
      chunk_.swap(spare_.back());
      spare_.pop_back();
    }
  }
  if (chunk_.capacity() < options_.chunk_size) chunk_.reserve(options_.chunk_size + (64 << 10));
  return submit([this, pending] {
    Status s = write_chunk_now(*pending);
    pending->records.clear();
    std::lock_guard lock(io_mu_);
    spare_.push_back(std::move(pending->records));
    return s;
  });
}

Status McapWriter::flush() {
  EDGEVLA_RETURN_IF_ERROR(finish_chunk());
  return drain();
}

Status McapWriter::write_metadata(const std::string& name, const StringMap& values) {
  if (closed_) return failed_precondition("bag '" + path_ + "' is closed");
  EDGEVLA_RETURN_IF_ERROR(finish_chunk());
  ++statistics_.metadata_count;
  auto rec = std::make_shared<std::string>();
  RecordWriter(*rec).metadata({name, values});
  return submit([this, rec, name] {
    metadata_indexes_.push_back({offset_, rec->size(), name});
    return write_raw(*rec);
  });
}

Status McapWriter::write_attachment(const std::string& name, const std::string& media_type, std::uint64_t log_time,
                                    std::span<const std::byte> data) {
  if (closed_) return failed_precondition("bag '" + path_ + "' is closed");
  EDGEVLA_RETURN_IF_ERROR(finish_chunk());
  ++statistics_.attachment_count;
  auto rec = std::make_shared<std::string>();
  RecordWriter(*rec).attachment({log_time, log_time, name, media_type, data, 0});
  AttachmentIndex index{0, rec->size(), log_time, log_time, data.size(), name, media_type};
  return submit([this, rec, index]() mutable {
    index.offset = offset_;
    attachment_indexes_.push_back(index);
    return write_raw(*rec);
  });
}

WriterStats McapWriter::stats() const {
  WriterStats s;
  s.messages = messages_;
  s.chunks = statistics_.chunk_count;
  s.bytes_written = bytes_written_.load(std::memory_order_relaxed);
  s.uncompressed_bytes = uncompressed_bytes_.load(std::memory_order_relaxed);
  return s;
}

Status McapWriter::close() {
  if (closed_) return failed();
  closed_ = true;
  Status s = finish_chunk();
  const Status drained = drain();
  if (s.is_ok()) s = drained;
  {
    std::lock_guard lock(io_mu_);
    io_stop_ = true;
  }
  io_cv_.notify_all();
  if (io_.joinable()) io_.join();
  // The I/O thread is gone: its state is ours now.
  const bool disk_full = disk_full_ && !s.is_ok();
  const std::uint64_t data_end_offset = offset_;
  const std::uint32_t data_end_crc = data_crc_;
  if (disk_full) {
    // Cut short by a full disk: the summary describes what reached the file, and goes into
    // the room the failed write left (a chunk is far larger than a summary).
    statistics_.message_count = written_messages_;
    statistics_.channel_message_counts = written_channel_counts_;
    statistics_.message_start_time = written_start_time_;
    statistics_.message_end_time = written_end_time_;
    statistics_.chunk_count = static_cast<std::uint32_t>(chunk_index_count_);
    statistics_.metadata_count = static_cast<std::uint32_t>(metadata_indexes_.size());
    statistics_.attachment_count = static_cast<std::uint32_t>(attachment_indexes_.size());
    disk_full_ = false;
    s = Status::ok();
  }
  if (s.is_ok()) {
    std::string end;
    RecordWriter(end).data_end({data_crc_});  // CRC of every byte before this record
    s = write_raw(end);
  }
  if (s.is_ok()) {
    // Summary: groups of one opcode each, then their offsets, then the footer.
    const std::uint64_t summary_start = offset_;
    std::string summary;
    RecordWriter w(summary);
    std::vector<SummaryOffset> groups;
    const auto group = [&](Op op, const auto& emit) {
      const std::size_t before = summary.size();
      emit();
      if (summary.size() > before) {
        groups.push_back({static_cast<std::uint8_t>(op), summary_start + before, summary.size() - before});
      }
    };
    group(Op::kSchema, [&] {
      for (const auto& x : schemas_) w.schema(x);
    });
    group(Op::kChannel, [&] {
      for (const auto& x : channels_) w.channel(x);
    });
    statistics_.schema_count = static_cast<std::uint16_t>(schemas_.size());
    statistics_.channel_count = static_cast<std::uint32_t>(channels_.size());
    group(Op::kStatistics, [&] { w.statistics(statistics_); });
    group(Op::kChunkIndex, [&] {
      summary += chunk_index_records_;
    });
    group(Op::kAttachmentIndex, [&] {
      for (const auto& x : attachment_indexes_) w.attachment_index(x);
    });
    group(Op::kMetadataIndex, [&] {
      for (const auto& x : metadata_indexes_) w.metadata_index(x);
    });
    const std::uint64_t summary_offset_start = summary_start + summary.size();
    for (const auto& g : groups) w.summary_offset(g);
    // The footer's CRC covers the summary through the footer's summary_offset_start field.
    w.u8(static_cast<std::uint8_t>(Op::kFooter));
    w.u64(20);
    w.u64(summary_start);
    w.u64(summary_offset_start);
    w.u32(crc32(as_bytes(summary)));
    summary.append(reinterpret_cast<const char*>(kMagic.data()), kMagic.size());
    s = write_raw(summary);
  }
  if (disk_full) {
    const std::string what = "bag '" + path_ + "': the disk filled up (or the file size limit was reached) after " +
                             std::to_string(data_end_offset) + " bytes, " + std::to_string(written_messages_) +
                             " message(s); the recording stopped there";
    if (s.is_ok()) {
      s = resource_exhausted(what + " and the bag is closed: complete and readable up to that point");
    } else {
      rewind_to(data_end_offset, data_end_crc, chunk_index_records_.size(), chunk_index_count_,
                metadata_indexes_.size(), attachment_indexes_.size());
      s = resource_exhausted(what + "; no room was left for its index, so it ends after its last whole chunk: "
                             "`edgevla bag recover` rewrites it with one");
    }
  }
  if (::close(fd_) != 0 && s.is_ok()) s = unavailable("closing bag '" + path_ + "': " + std::strerror(errno));
  std::lock_guard lock(io_mu_);
  if (failed_.is_ok()) failed_ = s;
  return s;
}

std::uint16_t copy_channel(McapWriter& w, const MessageView& v, std::map<std::uint16_t, std::uint16_t>& ids) {
  if (auto it = ids.find(v.channel->id); it != ids.end()) return it->second;
  const std::uint16_t schema = v.schema ? w.add_schema(v.schema->name, v.schema->encoding, v.schema->data) : 0;
  const std::uint16_t id = w.add_channel(v.channel->topic, v.channel->message_encoding, schema, v.channel->metadata);
  ids.emplace(v.channel->id, id);
  return id;
}

}  // namespace edgevla::mcap
