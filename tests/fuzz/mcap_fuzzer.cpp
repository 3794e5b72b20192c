// libFuzzer target for the MCAP reader (runtime/bag/mcap_reader.cpp, mcap_records.cpp,
// compression.cpp) and the bag record decoder (runtime/bag/bag_codec.cpp).
//
// Each input is a whole file, opened by McapReader as `edgevla bag` and replay do: summary or
// scan, every message decoded as an edgevla record with every tensor byte read, metadata and
// attachments. Properties: no crash, hang, leak or UB; open() fails only with a message; a
// message's data lies inside the buffer that owns it. Every record parser is also run on the
// input itself, as an exact-size heap copy, so a parser reading past its record is caught.
//
// Seeds (tests/fuzz/corpus/mcap/): bags written by McapWriter with no, lz4 and zstd chunk
// compression, with and without CRCs, cut short at several points.
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>

#include "msgs/message.hpp"
#include "runtime/bag/bag_codec.hpp"
#include "runtime/bag/mcap_reader.hpp"
#include "runtime/bag/mcap_records.hpp"
#include "runtime/core/tensor.hpp"
#include "tests/fuzz/fuzz_util.hpp"

namespace {

using namespace edgevla;
constexpr const char* kTarget = "mcap_fuzzer";

volatile std::uint8_t g_sink;

bool inside(std::span<const std::byte> part, const BufferPtr& owner) {
  if (part.empty()) return true;
  const auto all = owner->bytes();
  return part.data() >= all.data() && part.data() + part.size() <= all.data() + all.size();
}

void read_all(std::span<const std::byte> bytes) {
  std::uint8_t acc = 0;
  for (std::byte b : bytes) acc ^= static_cast<std::uint8_t>(b);
  g_sink = acc;
}

void parse_records(const std::uint8_t* data, std::size_t size) {
  std::unique_ptr<std::byte[]> copy(new std::byte[size]);
  if (size > 0) std::memcpy(copy.get(), data, size);
  const std::span<const std::byte> c(copy.get(), size);
  (void)mcap::parse_header(c);
  (void)mcap::parse_footer(c);
  (void)mcap::parse_schema(c);
  (void)mcap::parse_channel(c);
  if (auto m = mcap::parse_message(c)) read_all(m->data);
  if (auto ch = mcap::parse_chunk(c)) read_all(ch->records);
  (void)mcap::parse_message_index(c);
  (void)mcap::parse_chunk_index(c);
  if (auto a = mcap::parse_attachment(c)) read_all(a->data);
  (void)mcap::parse_attachment_index(c);
  (void)mcap::parse_statistics(c);
  (void)mcap::parse_metadata(c);
  (void)mcap::parse_metadata_index(c);
  (void)mcap::parse_summary_offset(c);
  (void)mcap::parse_data_end(c);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static fuzz::MemFile file("mcap_fuzzer");
  parse_records(data, size);

  auto reader = mcap::McapReader::open(file.write({data, size}));
  if (!reader) {
    FUZZ_CHECK(!reader.status().message().empty(), "");
    return 0;
  }
  mcap::McapReader& r = **reader;
  for (const auto& [id, ch] : r.summary().channels) g_sink = static_cast<std::uint8_t>(ch.topic.size() + id);
  const Status st = r.for_each_message([](const mcap::MessageView& view) -> Status {
    FUZZ_CHECK(view.channel != nullptr, "");
    FUZZ_CHECK(view.owner != nullptr, "");
    FUZZ_CHECK(inside(view.record.data, view.owner), "message data outside its owner");
    read_all(view.record.data);
    auto m = bag::decode_record(view);
    if (!m) {
      FUZZ_CHECK(!m.status().message().empty(), "");
      return Status::ok();
    }
    for (const NamedTensor& nt : m->tensors()) {
      FUZZ_CHECK(nt.tensor.defined(), nt.name);
      read_all(nt.tensor.bytes());
    }
    return Status::ok();
  });
  FUZZ_CHECK(st.is_ok(), st.to_string());
  for (const auto& md : r.metadata()) g_sink = static_cast<std::uint8_t>(md.name.size());
  for (const auto& a : r.attachments()) {
    FUZZ_CHECK(inside(a.record.data, a.owner), "attachment data outside its owner");
    read_all(a.record.data);
  }
  for (const auto& i : r.issues()) FUZZ_CHECK(!i.message.empty(), "");
  return 0;
}
