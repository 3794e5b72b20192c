#include <gtest/gtest.h>
#include <unistd.h>
#include <sstream>
#include <csignal>
#include <sys/wait.h>
#include <sys/resource.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "runtime/bag/compression.hpp"
#include "runtime/bag/mcap_reader.hpp"
#include "runtime/bag/mcap_writer.hpp"
#include "tests/support/test_util.hpp"

namespace edgevla::mcap {
namespace {

namespace fs = std::filesystem;

std::span<const std::byte> as_bytes(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

std::string temp_path(const std::string& name) {
  return (fs::path(::testing::TempDir()) / (std::to_string(::getpid()) + "_" + name)).string();
}

std::string payload(int channel, int i, std::size_t size) {
  std::string s(size, '\0');
  for (std::size_t k = 0; k < size; ++k) s[k] = static_cast<char>((channel * 31 + i * 7 + static_cast<int>(k)) & 0xff);
  return s;
}

struct Written {
  int messages = 0;
  std::vector<std::string> data;
};

// Two channels on two schemas, interleaved, plus metadata and an attachment.
Written write_bag(const std::string& path, Compression c, std::size_t chunk_size, int n, std::size_t size = 100) {
  McapWriterOptions o;
  o.compression = c;
  o.chunk_size = chunk_size;
  auto w = std::move(*McapWriter::open(path, o));
  const auto s1 = w->add_schema("Image", "edgevla", "type: Image\nversion: 1\n");
  const auto s2 = w->add_schema("ActionChunk", "edgevla", "type: ActionChunk\nversion: 1\n");
  const auto c1 = w->add_channel("/cam", "msgpack", s1, {{"edgevla.type", "Image"}});
  const auto c2 = w->add_channel("/act", "msgpack", s2, {});
  EXPECT_TRUE(w->write_metadata("edgevla.recording", {{"domain", "test"}, {"host", "h"}}).is_ok());
  Written out;
  for (int i = 0; i < n; ++i) {
    const int ch = i % 2;
    out.data.push_back(payload(ch, i, size));
    EXPECT_TRUE(w->write_message(ch ? c2 : c1, static_cast<std::uint32_t>(i), 1000 + static_cast<std::uint64_t>(i),
                                 900 + static_cast<std::uint64_t>(i), as_bytes(out.data.back()))
                    .is_ok());
    ++out.messages;
  }
  const std::string att = "launch: file\n";
  EXPECT_TRUE(w->write_attachment("launch.yaml", "text/yaml", 5, as_bytes(att)).is_ok());
  EXPECT_TRUE(w->close().is_ok());
  return out;
}

std::vector<std::string> read_all(McapReader& r, std::vector<std::string>* topics = nullptr) {
  std::vector<std::string> got;
  EXPECT_TRUE(r.for_each_message([&](const MessageView& m) {
                 got.emplace_back(reinterpret_cast<const char*>(m.record.data.data()), m.record.data.size());
                 if (topics) topics->push_back(m.channel->topic);
                 return Status::ok();
               }).is_ok());
  return got;
}

class Compressions : public ::testing::TestWithParam<Compression> {};

TEST_P(Compressions, RoundTripWithSummary) {
  const auto path = temp_path("rt.mcap");
  const Written w = write_bag(path, GetParam(), 4096, 200);
  auto r = McapReader::open(path);
  ASSERT_TRUE(r.has_value()) << r.status().to_string();
  const BagSummary& s = (*r)->summary();
  EXPECT_TRUE(s.has_summary);
  EXPECT_TRUE(s.complete);
  EXPECT_EQ(s.statistics.message_count, 200u);
  EXPECT_EQ(s.statistics.channel_message_counts.at(0), 100u);
  EXPECT_EQ(s.statistics.message_start_time, 1000u);
  EXPECT_EQ(s.statistics.message_end_time, 1199u);
  EXPECT_EQ(s.statistics.metadata_count, 1u);
  EXPECT_EQ(s.statistics.attachment_count, 1u);
  EXPECT_GT(s.statistics.chunk_count, 3u);
  EXPECT_EQ(s.chunk_indexes.size(), s.statistics.chunk_count);
  EXPECT_EQ(s.schemas.size(), 2u);
  EXPECT_EQ(s.channels.at(0).metadata.at("edgevla.type"), "Image");
  EXPECT_EQ(s.header.library, "edgevla");
  std::vector<std::string> topics;
  EXPECT_EQ(read_all(**r, &topics), w.data);
  EXPECT_EQ(topics[0], "/cam");
  EXPECT_EQ(topics[1], "/act");
  EXPECT_TRUE((*r)->issues().empty()) << (*r)->issues()[0].message;
  auto md = (*r)->metadata();
  ASSERT_EQ(md.size(), 1u);
  EXPECT_EQ(md[0].metadata.at("domain"), "test");
  auto att = (*r)->attachments();
  ASSERT_EQ(att.size(), 1u);
  EXPECT_EQ(att[0].record.name, "launch.yaml");
  EXPECT_EQ(att[0].record.data.size(), 13u);
  fs::remove(path);
}

// Fault injection: the disk fills up while recording (a file size limit makes write() fail
// as a full disk does, without a filesystem to fill). The bag is closed cleanly: the failed
// chunk is cut off again, the summary describes what reached the file, and close() says what
// happened.
TEST(McapWriter, AFullDiskClosesTheBagCleanlyAndSaysSo) {
  const auto path = temp_path("full.mcap");
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(fds[0]);
    ::signal(SIGXFSZ, SIG_IGN);  // the limit then fails the write with EFBIG, as ENOSPC would
    const rlimit limit{200 << 10, 200 << 10};
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) ::_exit(2);
    McapWriterOptions o;
    o.compression = Compression::kNone;
    o.chunk_size = 16 << 10;
    auto w = McapWriter::open(path, o);
    if (!w) ::_exit(3);
    const auto sch = (*w)->add_schema("Image", "edgevla", "type: Image\nversion: 1\n");
    const auto ch = (*w)->add_channel("/cam", "msgpack", sch, {});
    int accepted = 0;
    Status first_error;
    for (int i = 0; i < 200 && first_error.is_ok(); ++i) {
      const std::string data = payload(0, i, 4000);
      first_error = (*w)->write_message(ch, static_cast<std::uint32_t>(i), 1000 + static_cast<std::uint64_t>(i), 0,
                                        as_bytes(data));
      if (first_error.is_ok()) ++accepted;
      if (i % 4 == 3 && first_error.is_ok()) first_error = (*w)->flush();
    }
    const Status closed = (*w)->close();
    const std::string report = std::to_string(accepted) + "\n" + first_error.message() + "\n" + closed.message() +
                               "\n" + std::to_string(static_cast<int>(closed.code())) + "\n";
    [[maybe_unused]] auto n = ::write(fds[1], report.data(), report.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string report;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) report.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  std::istringstream in(report);
  std::string accepted, first_error, closed, code;
  std::getline(in, accepted);
  std::getline(in, first_error);
  std::getline(in, closed);
  std::getline(in, code);
  EXPECT_LT(std::stoi(accepted), 200) << "the limit was never reached";
  EXPECT_NE(first_error.find("file size limit"), std::string::npos) << first_error;
  EXPECT_EQ(std::stoi(code), static_cast<int>(StatusCode::kResourceExhausted)) << closed;
  EXPECT_NE(closed.find("the bag is closed: complete and readable"), std::string::npos) << closed;
  EXPECT_LE(fs::file_size(path), std::uintmax_t{200} << 10);
  auto r = McapReader::open(path);
  ASSERT_TRUE(r.has_value()) << r.status().to_string();
  const BagSummary& s = (*r)->summary();
  EXPECT_TRUE(s.has_summary);
  EXPECT_TRUE(s.complete);
  EXPECT_TRUE((*r)->issues().empty()) << (*r)->issues()[0].message;
  const std::vector<std::string> got = read_all(**r, nullptr);
  EXPECT_EQ(s.statistics.message_count, got.size());
  EXPECT_GT(got.size(), 20u);
  EXPECT_LT(got.size(), static_cast<std::size_t>(std::stoi(accepted)) + 1);
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], payload(0, static_cast<int>(i), 4000)) << i;
  fs::remove(path);
}

// A bag in a run directory that does not exist yet: the writer makes the folder. A folder that
// cannot be made (its parent is a file) is one error naming the bag and the folder.
TEST(McapWriter, MakesTheBagsFolderAndNamesOneItCannotMake) {
  const fs::path dir = fs::path(temp_path("new_run")) / "nested";
  fs::remove_all(dir.parent_path());
  const std::string path = (dir / "run.mcap").string();
  {
    auto w = McapWriter::open(path);
    ASSERT_TRUE(w.has_value()) << w.status().to_string();
    ASSERT_TRUE((*w)->close().is_ok());
  }
  EXPECT_TRUE(fs::is_directory(dir));
  auto r = McapReader::open(path);
  ASSERT_TRUE(r.has_value()) << r.status().to_string();
  EXPECT_TRUE((*r)->summary().complete);

  const fs::path file = fs::path(temp_path("a_file"));
  std::ofstream(file) << "x";
  const std::string under_file = (file / "sub" / "run.mcap").string();
  auto bad = McapWriter::open(under_file);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.status().message().find(under_file), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find("cannot be made"), std::string::npos) << bad.status().message();
  fs::remove(file);
  fs::remove_all(dir.parent_path());
}

INSTANTIATE_TEST_SUITE_P(All, Compressions,
                         ::testing::Values(Compression::kNone, Compression::kLz4, Compression::kZstd),
                         [](const auto& info) {
                           return std::string(info.param == Compression::kNone ? "none" : compression_name(info.param));
                         });

TEST(McapRecords, EveryRecordTypeRoundTrips) {
  std::string buf;
  RecordWriter w(buf);
  const std::string data = "abc";
  w.header({"prof", "lib"});
  w.schema({3, "S", "enc", "xyz"});
  w.channel({4, 3, "/t", "msgpack", {{"k", "v"}}});
  w.message({4, 7, 11, 12, as_bytes(data)});
  w.message_index({4, {{11, 0}, {13, 40}}});
  ChunkIndex ci{1, 2, 3, 4, {{4, 99}}, 5, "zstd", 6, 7};
  w.chunk_index(ci);
  w.attachment({1, 2, "a.txt", "text/plain", as_bytes(data), 0});
  w.attachment_index({10, 20, 1, 2, 3, "a.txt", "text/plain"});
  Statistics st;
  st.message_count = 9;
  st.schema_count = 1;
  st.channel_count = 1;
  st.chunk_count = 2;
  st.channel_message_counts[4] = 9;
  w.statistics(st);
  w.metadata({"m", {{"a", "b"}}});
  w.metadata_index({30, 40, "m"});
  w.summary_offset({3, 100, 200});
  w.data_end({0xdeadbeef});
  w.footer({1, 2, 3});

  const auto b = as_bytes(buf);
  std::size_t pos = 0;
  std::vector<std::pair<std::uint8_t, std::span<const std::byte>>> recs;
  while (pos < b.size()) {
    std::uint64_t len = 0;
    std::memcpy(&len, b.data() + pos + 1, 8);
    recs.emplace_back(static_cast<std::uint8_t>(b[pos]), b.subspan(pos + 9, len));
    pos += 9 + len;
  }
  ASSERT_EQ(recs.size(), 14u);
  EXPECT_EQ(parse_header(recs[0].second)->library, "lib");
  EXPECT_EQ(*parse_schema(recs[1].second), (Schema{3, "S", "enc", "xyz"}));
  EXPECT_EQ(*parse_channel(recs[2].second), (Channel{4, 3, "/t", "msgpack", {{"k", "v"}}}));
  auto msg = *parse_message(recs[3].second);
  EXPECT_EQ(msg.sequence, 7u);
  EXPECT_EQ(msg.publish_time, 12u);
  EXPECT_EQ(msg.data.size(), 3u);
  EXPECT_EQ(parse_message_index(recs[4].second)->records[1].second, 40u);
  auto pci = *parse_chunk_index(recs[5].second);
  EXPECT_EQ(pci.message_index_offsets.at(4), 99u);
  EXPECT_EQ(pci.compression, "zstd");
  EXPECT_EQ(pci.uncompressed_size, 7u);
  auto att = parse_attachment(recs[6].second);
  ASSERT_TRUE(att.has_value()) << att.status().to_string();  // CRC written and checked
  EXPECT_NE(att->crc, 0u);
  EXPECT_EQ(parse_attachment_index(recs[7].second)->name, "a.txt");
  EXPECT_EQ(parse_statistics(recs[8].second)->channel_message_counts.at(4), 9u);
  EXPECT_EQ(parse_metadata(recs[9].second)->metadata.at("a"), "b");
  EXPECT_EQ(parse_metadata_index(recs[10].second)->length, 40u);
  EXPECT_EQ(parse_summary_offset(recs[11].second)->group_length, 200u);
  EXPECT_EQ(parse_data_end(recs[12].second)->data_section_crc, 0xdeadbeefu);
  EXPECT_EQ(parse_footer(recs[13].second)->summary_crc, 3u);
  // Truncated records are errors that name the record.
  auto bad = parse_channel(recs[2].second.first(5));
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.status().message().find("Channel"), std::string::npos);
}

TEST(McapReader, LargeMessages) {
  for (Compression c : {Compression::kNone, Compression::kZstd}) {
    const auto path = temp_path("large.mcap");
    const std::string big = payload(1, 3, std::size_t{64} << 20);
    {
      auto w = std::move(*McapWriter::open(path, {{}, "edgevla", c, 0, 4 << 20}));
      const auto ch = w->add_channel("/big", "msgpack", 0);
      ASSERT_TRUE(w->write_message(ch, 1, 10, 10, as_bytes(big)).is_ok());
      ASSERT_TRUE(w->close().is_ok());
    }
    auto r = std::move(*McapReader::open(path));
    int n = 0;
    ASSERT_TRUE(r->for_each_message([&](const MessageView& m) {
                   ++n;
                   EXPECT_EQ(m.record.data.size(), big.size());
                   EXPECT_EQ(std::memcmp(m.record.data.data(), big.data(), big.size()), 0);
                   return Status::ok();
                 }).is_ok());
    EXPECT_EQ(n, 1);
    fs::remove(path);
  }
}

TEST(McapReader, WrongMagicIsAnError) {
  const auto path = temp_path("magic.mcap");
  std::ofstream(path) << "PK\x03\x04 not an mcap file at all";
  auto r = McapReader::open(path);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.status().message().find("not an MCAP file"), std::string::npos);
  EXPECT_FALSE(McapReader::open(path + ".missing").has_value());
  fs::remove(path);
}

TEST(McapReader, TruncatedFileKeepsEveryCompleteChunk) {
  const auto path = temp_path("trunc.mcap");
  const Written w = write_bag(path, Compression::kZstd, 2048, 300);
  const auto full = fs::file_size(path);
  {
    // Cut inside the footer: the data section is whole, only the summary is lost.
    fs::resize_file(path, full - 10);
    auto r = std::move(*McapReader::open(path));
    EXPECT_FALSE(r->summary().has_summary);
    EXPECT_TRUE(r->summary().complete);
    EXPECT_EQ(read_all(*r), w.data);
    ASSERT_FALSE(r->issues().empty());
    EXPECT_NE(r->issues()[0].message.find("no footer"), std::string::npos);
  }
  for (double cut : {0.5, 0.2}) {
    fs::resize_file(path, static_cast<std::uintmax_t>(static_cast<double>(full) * cut));
    auto r = McapReader::open(path);
    ASSERT_TRUE(r.has_value()) << r.status().to_string();
    EXPECT_FALSE((*r)->summary().has_summary);
    EXPECT_FALSE((*r)->summary().complete);
    const auto got = read_all(**r);
    ASSERT_FALSE((*r)->issues().empty());
    EXPECT_NE((*r)->issues().back().message.find("truncated"), std::string::npos);
    // Whatever was read is an exact prefix of what was written.
    ASSERT_LE(got.size(), w.data.size());
    for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], w.data[i]) << i;
    EXPECT_GT(got.size(), 0u);
    EXPECT_EQ((*r)->summary().statistics.message_count, got.size());
  }
  fs::remove(path);
}

TEST(McapReader, CorruptedChunkIsSkippedTheRestIsRead) {
  const auto path = temp_path("crc.mcap");
  const Written w = write_bag(path, Compression::kNone, 2048, 200);
  std::uint64_t second_chunk = 0;
  {
    auto r = std::move(*McapReader::open(path));
    ASSERT_GT(r->summary().chunk_indexes.size(), 3u);
    second_chunk = r->summary().chunk_indexes[1].chunk_start_offset;
  }
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(second_chunk + 200));
    f.put('\x5a');
  }
  auto r = std::move(*McapReader::open(path));
  const auto got = read_all(*r);
  EXPECT_LT(got.size(), w.data.size());
  EXPECT_GT(got.size(), w.data.size() / 2);
  bool crc_issue = false;
  for (const auto& i : r->issues()) crc_issue = crc_issue || i.message.find("CRC") != std::string::npos;
  EXPECT_TRUE(crc_issue);
  fs::remove(path);
}

TEST(McapReader, RecordLengthPastTheEndIsReported) {
  const auto path = temp_path("len.mcap");
  std::string file(reinterpret_cast<const char*>(kMagic.data()), kMagic.size());
  RecordWriter w(file);
  w.header({"", "test"});
  w.channel({0, 0, "/t", "msgpack", {}});
  w.message({0, 1, 5, 5, as_bytes(std::string("ok"))});
  w.u8(static_cast<std::uint8_t>(Op::kMessage));
  w.u64(1'000'000);  // claims far more than follows
  w.u32(7);
  std::ofstream(path, std::ios::binary) << file;
  auto r = std::move(*McapReader::open(path));
  EXPECT_EQ(read_all(*r).size(), 1u);
  ASSERT_FALSE(r->issues().empty());
  EXPECT_NE(r->issues().back().message.find("past the end of the file"), std::string::npos);
  fs::remove(path);
}

// Found by tests/fuzz/mcap_fuzzer (corpus/mcap/oom-chunk-size): a chunk header claiming 4 GiB
// of uncompressed records for a few compressed bytes made the reader allocate the 4 GiB before
// decompressing. Such a chunk is now skipped as corrupted, and the chunks around it are read.
TEST(McapReader, ChunkClaimingMoreThanItsCompressionCanHoldIsSkipped) {
  const auto path = temp_path("claim.mcap");
  std::string file(reinterpret_cast<const char*>(kMagic.data()), kMagic.size());
  RecordWriter w(file);
  w.header({"", "test"});
  w.channel({0, 0, "/t", "msgpack", {}});
  const std::string tiny(40, '\x11');
  // corpus/mcap/oom-unknown-compression: the same claim under a compression name no reader
  // knows was allocated before the name was looked at.
  for (const char* compression : {"zstd", "lz4", "tzsd"}) {
    ChunkHeader c;
    c.uncompressed_size = std::uint64_t{4} << 30;
    c.compression = compression;
    c.records = as_bytes(tiny);
    w.chunk(c);
  }
  w.message({0, 1, 5, 5, as_bytes(std::string("after"))});
  w.data_end({0});
  std::ofstream(path, std::ios::binary) << file;
  auto r = std::move(*McapReader::open(path));
  EXPECT_EQ(read_all(*r), std::vector<std::string>{"after"});
  int refused = 0, unknown = 0;
  for (const auto& i : r->issues()) {
    refused += i.message.find("more than") != std::string::npos;
    unknown += i.message.find("unknown compression 'tzsd'") != std::string::npos;
  }
  // Once by open()'s scan (the file has no summary), once by for_each_message's.
  EXPECT_EQ(refused, 4);
  EXPECT_EQ(unknown, 2);
  EXPECT_EQ(max_decompressed_size("zstd", 40), 40u * 32768u);
  EXPECT_EQ(max_decompressed_size("", 40), 40u);
  EXPECT_EQ(max_decompressed_size("brotli", 40), 0u);
  fs::remove(path);
}

// Found by tests/fuzz/mcap_fuzzer (corpus/mcap/crash-summary-offset): a footer whose
// summary_offset_start pointed past the end of the file (summary CRC 0, so unchecked) made the
// summary reader walk past the mapping. Now the summary is refused and the file scanned.
TEST(McapReader, FooterPointingPastTheFileIsScannedInstead) {
  const auto path = temp_path("footer.mcap");
  const Written w = write_bag(path, Compression::kZstd, 4096, 20);
  std::ifstream in(path, std::ios::binary);
  std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  const std::size_t footer = file.size() - kMagic.size() - 20;  // summary_start, offsets, crc
  for (int i = 0; i < 8; ++i) file[footer + 8 + i] = static_cast<char>(i == 5 ? 0x10 : 0);  // 2^44
  for (int i = 0; i < 4; ++i) file[footer + 16 + i] = 0;  // no summary CRC
  std::ofstream(path, std::ios::binary | std::ios::trunc) << file;
  auto r = std::move(*McapReader::open(path));
  EXPECT_FALSE(r->summary().has_summary);
  EXPECT_EQ(read_all(*r), w.data);
  bool said = false;
  for (const auto& i : r->issues()) said = said || i.message.find("summary offsets outside") != std::string::npos;
  EXPECT_TRUE(said);
  fs::remove(path);
}

TEST(McapReader, UnknownOpcodesAreSkipped) {
  const auto path = temp_path("unknown.mcap");
  std::string file(reinterpret_cast<const char*>(kMagic.data()), kMagic.size());
  RecordWriter w(file);
  w.header({"", "test"});
  w.u8(0x80);  // an application extension record
  w.u64(3);
  w.bytes(as_bytes(std::string("xyz")));
  w.schema({1, "S", "e", ""});
  w.channel({0, 1, "/t", "msgpack", {}});
  w.u8(0x42);  // an opcode from a future spec revision
  w.u64(0);
  w.message({0, 1, 5, 5, as_bytes(std::string("hello"))});
  w.data_end({0});
  w.footer({0, 0, 0});
  file.append(reinterpret_cast<const char*>(kMagic.data()), kMagic.size());
  std::ofstream(path, std::ios::binary) << file;
  auto r = std::move(*McapReader::open(path));
  const auto got = read_all(*r);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], "hello");
  EXPECT_TRUE(r->issues().empty()) << r->issues()[0].message;
  EXPECT_TRUE(r->summary().complete);
  fs::remove(path);
}

}  // namespace
}  // namespace edgevla::mcap
