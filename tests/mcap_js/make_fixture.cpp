// Writes MCAP bags with edgevla's McapWriter, one per chunk compression, and a JSON manifest
// of what each holds, for tests/mcap_js/conformance.mjs to check with an independent reader
// (@mcap/core).
//
//   make_fixture <out_dir>     writes <out_dir>/{none,lz4,zstd}.mcap and {none,lz4,zstd}.json
//
// Every bag holds: five channels on three schemas plus one schemaless channel of raw bytes
// (built-in Image and ActionChunk records, a custom "Blob" type via bag::append_record), one
// registered channel with no messages, a few hundred messages over many small chunks (log
// times > 2^53 with ties and some out of order, one u64-max publish time, one empty message),
// metadata records,
// attachments (one empty) and one ~6 MB message. Message, schema and attachment bytes are
// identified in the manifest by length and FNV-1a 64 (hex), which conformance.mjs recomputes.
// The manifest also lists cut points for truncated copies: how many whole messages a reader
// must still get from the first `bytes` bytes of the file.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "msgs/types.hpp"
#include "runtime/bag/bag_codec.hpp"
#include "runtime/bag/mcap_writer.hpp"

namespace {

using namespace edgevla;
namespace fs = std::filesystem;

std::uint64_t fnv1a64(std::string_view bytes) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const char c : bytes) {
    h ^= static_cast<std::uint8_t>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::string hex64(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string json_str(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
          out += buf;
        } else {
          out += c;  // UTF-8 passes through
        }
    }
  }
  return out + "\"";
}

// u64 values go into the manifest as decimal strings (JSON numbers lose precision past 2^53).
std::string json_u64(std::uint64_t v) { return "\"" + std::to_string(v) + "\""; }

std::string json_map(const mcap::StringMap& m) {
  std::string out = "{";
  for (const auto& [k, v] : m) out += (out.size() > 1 ? ", " : "") + json_str(k) + ": " + json_str(v);
  return out + "}";
}

std::string bytes_id(std::string_view data) {
  return "\"length\": " + std::to_string(data.size()) + ", \"fnv1a64\": \"" + hex64(fnv1a64(data)) + "\"";
}

// Deterministic pseudo-random bytes (xorshift64), so large payloads do not compress away.
void fill_noise(std::byte* p, std::size_t n, std::uint64_t seed) {
  std::uint64_t x = seed | 1;
  for (std::size_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    p[i] = static_cast<std::byte>(x >> 24);
  }
}

[[noreturn]] void die(const std::string& what, const Status& s) {
  std::cerr << "make_fixture: " << what << ": " << s.to_string() << "\n";
  std::exit(1);
}

template <class T>
T must(Expected<T> e, const std::string& what) {
  if (!e.has_value()) die(what, e.status());
  return std::move(*e);
}

void check(const Status& s, const std::string& what) {
  if (!s.is_ok()) die(what, s);
}

std::string record_of(const Message& m) {
  std::string out;
  check(bag::append_record(m, out), "encoding a " + m.type() + " record");
  return out;
}

Message image(std::uint64_t i, bool mono) {
  const int h = 4 + static_cast<int>(i % 13), w = 6 + static_cast<int>(i % 7), c = mono ? 1 : 3;
  Tensor px = must(Tensor::empty(DType::kU8, Shape{h, w, c}), "image tensor");
  for (std::int64_t k = 0; k < px.numel(); ++k) px.data<std::uint8_t>()[k] = static_cast<std::uint8_t>(i * 7 + k);
  Message m = must(msgs::Image::make(px, mono ? "mono8" : "rgb8", mono ? "wrist" : "front"), "Image::make");
  m.header().seq = i;
  return m;
}

Message action_chunk(std::uint64_t i) {
  Tensor a = must(Tensor::empty(DType::kF32, Shape{8, 7}), "action tensor");
  for (std::int64_t k = 0; k < a.numel(); ++k) a.data<float>()[k] = 0.25f * static_cast<float>(k) - static_cast<float>(i);
  Message m = must(msgs::ActionChunk::make(a, 0.02), "ActionChunk::make");
  m.set_field("observation_seq", static_cast<std::int64_t>(i));
  return m;
}

Message blob(std::uint64_t i, std::size_t bytes) {
  Message m("Blob", 1);
  Tensor t = must(Tensor::empty(DType::kU8, Shape{static_cast<std::int64_t>(bytes)}), "blob tensor");
  fill_noise(t.raw_data(), bytes, 0x9e3779b97f4a7c15ULL * (i + 1));
  m.set_tensor("payload", t);
  m.set_field("index", static_cast<std::int64_t>(i));
  m.set_field("label", std::string("blob #") + std::to_string(i) + " \xc3\xa9t\xc3\xa9");  // UTF-8
  m.set_field("ok", (i % 2) == 0);
  return m;
}

std::string raw_bytes(std::uint64_t i) {
  std::string s((i * 37) % 301, '\0');  // length 0 for i == 0
  fill_noise(reinterpret_cast<std::byte*>(s.data()), s.size(), i + 11);
  return s;
}

struct Written {
  std::string topic;
  std::uint16_t channel;
  std::uint32_t sequence;
  std::uint64_t log_time, publish_time;
  std::string data_id;
};

struct Cut {
  std::string what;
  std::uint64_t bytes, messages;
};

void write_bag(const fs::path& dir, const std::string& name, mcap::Compression compression) {
  const fs::path bag = dir / (name + ".mcap");
  mcap::McapWriterOptions opts;
  opts.compression = compression;
  opts.chunk_size = 16 << 10;  // many chunks
  opts.profile = "";
  opts.library = "edgevla make_fixture";
  auto writer = must(mcap::McapWriter::open(bag.string(), opts), "opening " + bag.string());
  mcap::McapWriter& w = *writer;

  struct SchemaInfo {
    std::string name, encoding, data;
  };
  std::map<std::uint16_t, SchemaInfo> schemas;
  const auto schema = [&](const std::string& type) {
    const std::string text = bag::schema_text(type, 1);
    const auto id = w.add_schema(type, bag::kSchemaEncoding, text);
    schemas[id] = {type, bag::kSchemaEncoding, text};
    return id;
  };
  struct ChannelInfo {
    std::string topic, encoding;
    std::uint16_t schema_id;
    mcap::StringMap metadata;
  };
  std::map<std::uint16_t, ChannelInfo> channels;
  const auto channel = [&](const std::string& topic, const std::string& encoding, std::uint16_t schema_id,
                           const mcap::StringMap& md) {
    const auto id = w.add_channel(topic, encoding, schema_id, md);
    channels[id] = {topic, encoding, schema_id, md};
    return id;
  };
  const auto typed_md = [](const std::string& type) {
    return mcap::StringMap{{"edgevla.type", type}, {"edgevla.type_version", "1"}};
  };
  const auto s_image = schema("Image");
  const auto s_action = schema("ActionChunk");
  const auto s_blob = schema("Blob");
  const auto c_front = channel("/cam/front", bag::kMessageEncoding, s_image, typed_md("Image"));
  const auto c_wrist = channel("/cam/wrist", bag::kMessageEncoding, s_image, typed_md("Image"));
  const auto c_action = channel("/policy/actions", bag::kMessageEncoding, s_action, typed_md("ActionChunk"));
  const auto c_blob = channel("/blob", bag::kMessageEncoding, s_blob,
                              {{"edgevla.type", "Blob"}, {"edgevla.type_version", "1"}, {"note", "k=v; \"quoted\""}});
  const auto c_raw = channel("/raw", "application/octet-stream", 0, {});
  channel("/never/written", bag::kMessageEncoding, s_blob, typed_md("Blob"));

  std::vector<Written> messages;
  std::map<std::uint16_t, std::uint32_t> seq;
  std::vector<Cut> boundaries;  // file size and messages whenever a chunk has just been written
  std::uint64_t chunks_seen = 0;
  const auto note_boundary = [&] {
    if (w.stats().chunks != chunks_seen) {
      chunks_seen = w.stats().chunks;
      // Chunks are written by the writer's I/O thread: wait for it (the chunk in progress is
      // empty right after one closed, so this adds no chunk boundary of its own).
      check(w.flush(), "flush");
      boundaries.push_back({"", w.stats().bytes_written, w.stats().messages});
    }
  };
  const auto put = [&](std::uint16_t ch, std::uint64_t log_time, std::uint64_t publish_time, const std::string& data,
                       bool use_fill, std::uint32_t sequence) {
    if (use_fill) {
      check(w.write_message_with(ch, sequence, log_time, publish_time,
                                 [&](std::string& out) {
                                   out += data;
                                   return Status::ok();
                                 }),
            "write_message_with");
    } else {
      check(w.write_message(ch, sequence, log_time, publish_time,
                            {reinterpret_cast<const std::byte*>(data.data()), data.size()}),
            "write_message");
    }
    messages.push_back({channels[ch].topic, ch, sequence, log_time, publish_time, bytes_id(data)});
    note_boundary();
  };

  struct MetaInfo {
    std::string name;
    mcap::StringMap values;
  };
  std::vector<MetaInfo> metadata;
  struct AttachInfo {
    std::string name, media_type;
    std::uint64_t log_time;
    std::string data_id;
  };
  std::vector<AttachInfo> attachments;

  // Log times past 2^53 (JS numbers would lose them), mostly increasing, with ties and a few
  // late (out-of-order) messages; the manifest lists messages in write order.
  const std::uint64_t base = 1'700'000'000'123'456'789ULL;
  std::uint64_t t = base;
  std::uint64_t large_before_bytes = 0, large_before_messages = 0;
  const std::uint16_t cycle[] = {c_front, c_action, c_wrist, c_raw, c_blob};
  for (std::uint64_t i = 0; i < 600; ++i) {
    if (i % 10 != 9) t += 1'000'000 + (i % 3) * 17;  // every tenth message ties with the previous one
    const std::uint16_t ch = cycle[i % 5];
    std::string data;
    if (ch == c_front) data = record_of(image(i, false));
    if (ch == c_wrist) data = record_of(image(i, true));
    if (ch == c_action) data = record_of(action_chunk(i));
    if (ch == c_blob) data = record_of(blob(i, 64 + (i % 50) * 9));
    if (ch == c_raw) data = raw_bytes(i / 5);
    // Every 23rd message arrives late: its log time is earlier than those written before it.
    const std::uint64_t log_time = i % 23 == 22 ? t - 3'500'000 : t;
    put(ch, log_time, log_time - (i % 7) * 1000, data, i % 4 == 1, ++seq[ch]);

    if (i == 150) {
      metadata.push_back({"session", {{"robot", "arm-7"}, {"operator", "Zo\xc3\xab"}, {"task", "pick & place"}}});
      check(w.write_metadata(metadata.back().name, metadata.back().values), "write_metadata");
      note_boundary();
    }
    if (i == 250) {
      std::string cal = "camera: front\nfx: 615.2\nfy: 615.9\n";
      attachments.push_back({"calibration.yaml", "application/yaml", t, bytes_id(cal)});
      check(w.write_attachment("calibration.yaml", "application/yaml", t,
                               {reinterpret_cast<const std::byte*>(cal.data()), cal.size()}),
            "write_attachment");
      note_boundary();
      std::string noise(100'000, '\0');
      fill_noise(reinterpret_cast<std::byte*>(noise.data()), noise.size(), 77);
      attachments.push_back({"noise.bin", "application/octet-stream", t + 1, bytes_id(noise)});
      check(w.write_attachment("noise.bin", "application/octet-stream", t + 1,
                               {reinterpret_cast<const std::byte*>(noise.data()), noise.size()}),
            "write_attachment");
      attachments.push_back({"empty.bin", "", 0, bytes_id("")});
      check(w.write_attachment("empty.bin", "", 0, {}), "write_attachment");
    }
    if (i == 400) {
      check(w.flush(), "flush");
      note_boundary();
      large_before_bytes = w.stats().bytes_written;
      large_before_messages = w.stats().messages;
      t += 1'000'000;
      put(c_blob, t, t, record_of(blob(1'000'000, 6'000'000)), true, ++seq[c_blob]);  // ~6 MB, own chunk
    }
    if (i == 450) {
      metadata.push_back({"empty", {}});
      check(w.write_metadata("empty", {}), "write_metadata");
      note_boundary();
    }
  }
  // Extremes: max sequence, max publish time, an empty message; far later log time.
  put(c_raw, t + 1'000'000'000'000ULL, UINT64_MAX, "", false, UINT32_MAX);
  metadata.push_back({"end", {{"reason", "done"}, {"", "empty key"}}});
  check(w.write_metadata("end", metadata.back().values), "write_metadata");
  check(w.close(), "close");
  const std::uint64_t file_size = fs::file_size(bag);
  if (file_size != w.stats().bytes_written) {
    std::cerr << "make_fixture: stats().bytes_written " << w.stats().bytes_written << " != file size " << file_size
              << "\n";
    std::exit(1);
  }
  if (boundaries.size() < 8) {
    std::cerr << "make_fixture: expected many chunks, got " << boundaries.size() << "\n";
    std::exit(1);
  }

  // Cut points for truncated copies.
  std::vector<Cut> cuts;
  cuts.push_back({"magic only", 8, 0});
  const Cut& b2 = boundaries[2];
  const Cut& b3 = boundaries[3];
  cuts.push_back({"middle of the 4th chunk", (b2.bytes + b3.bytes) / 2, b2.messages});
  cuts.push_back({"exactly after the 6th chunk's message indexes", boundaries[5].bytes, boundaries[5].messages});
  cuts.push_back({"inside a record's opcode/length prefix", boundaries[6].bytes + 4, boundaries[6].messages});
  cuts.push_back({"inside the ~6 MB chunk", large_before_bytes + 3'000'000, large_before_messages});
  cuts.push_back({"inside the footer", file_size - 12, messages.size()});

  // Statistics as the writer should have counted them.
  std::map<std::uint16_t, std::uint64_t> per_channel;
  std::map<std::string, std::uint64_t> per_topic;
  for (const auto& m : messages) {
    ++per_channel[m.channel];
    ++per_topic[m.topic];
  }
  std::ostringstream j;
  j << "{\n  \"file\": " << json_str(bag.filename().string()) << ",\n";
  j << "  \"compression\": " << json_str(mcap::compression_name(compression)) << ",\n";
  j << "  \"profile\": " << json_str(opts.profile) << ",\n  \"library\": " << json_str(opts.library) << ",\n";
  j << "  \"file_size\": " << json_u64(file_size) << ",\n";
  j << "  \"schemas\": [";
  bool first = true;
  for (const auto& [id, s] : schemas) {
    j << (first ? "\n" : ",\n") << "    {\"id\": " << id << ", \"name\": " << json_str(s.name)
      << ", \"encoding\": " << json_str(s.encoding) << ", \"data\": {" << bytes_id(s.data) << "}}";
    first = false;
  }
  j << "\n  ],\n  \"channels\": [";
  first = true;
  for (const auto& [id, c] : channels) {
    j << (first ? "\n" : ",\n") << "    {\"id\": " << id << ", \"topic\": " << json_str(c.topic)
      << ", \"message_encoding\": " << json_str(c.encoding) << ", \"schema_id\": " << c.schema_id
      << ", \"metadata\": " << json_map(c.metadata) << "}";
    first = false;
  }
  j << "\n  ],\n  \"total_messages\": " << messages.size() << ",\n  \"message_count_by_topic\": {";
  first = true;
  for (const auto& [topic, n] : per_topic) {
    j << (first ? "" : ", ") << json_str(topic) << ": " << n;
    first = false;
  }
  j << "},\n  \"messages\": [";
  first = true;
  for (const auto& m : messages) {
    j << (first ? "\n" : ",\n") << "    {\"topic\": " << json_str(m.topic) << ", \"channel_id\": " << m.channel
      << ", \"sequence\": " << m.sequence << ", \"log_time\": " << json_u64(m.log_time)
      << ", \"publish_time\": " << json_u64(m.publish_time) << ", " << m.data_id << "}";
    first = false;
  }
  j << "\n  ],\n  \"metadata\": [";
  first = true;
  for (const auto& m : metadata) {
    j << (first ? "\n" : ",\n") << "    {\"name\": " << json_str(m.name) << ", \"metadata\": " << json_map(m.values)
      << "}";
    first = false;
  }
  j << "\n  ],\n  \"attachments\": [";
  first = true;
  for (const auto& a : attachments) {
    j << (first ? "\n" : ",\n") << "    {\"name\": " << json_str(a.name) << ", \"media_type\": "
      << json_str(a.media_type) << ", \"log_time\": " << json_u64(a.log_time) << ", \"create_time\": "
      << json_u64(a.log_time) << ", " << a.data_id << "}";
    first = false;
  }
  std::uint64_t start = UINT64_MAX, end = 0;
  for (const auto& m : messages) {
    start = std::min(start, m.log_time);
    end = std::max(end, m.log_time);
  }
  j << "\n  ],\n  \"statistics\": {\"message_count\": " << json_u64(messages.size())
    << ", \"schema_count\": " << schemas.size() << ", \"channel_count\": " << channels.size()
    << ", \"attachment_count\": " << attachments.size() << ", \"metadata_count\": " << metadata.size()
    << ", \"chunk_count\": " << w.stats().chunks << ", \"message_start_time\": " << json_u64(start)
    << ", \"message_end_time\": " << json_u64(end) << ", \"channel_message_counts\": {";
  first = true;
  for (const auto& [ch, n] : per_channel) {
    j << (first ? "" : ", ") << "\"" << ch << "\": " << json_u64(n);
    first = false;
  }
  j << "}},\n  \"truncations\": [";
  first = true;
  for (const auto& c : cuts) {
    j << (first ? "\n" : ",\n") << "    {\"what\": " << json_str(c.what) << ", \"bytes\": " << c.bytes
      << ", \"messages\": " << c.messages << "}";
    first = false;
  }
  j << "\n  ]\n}\n";

  const fs::path manifest = dir / (name + ".json");
  std::ofstream out(manifest, std::ios::binary);
  out << j.str();
  out.close();
  if (!out) {
    std::cerr << "make_fixture: cannot write " << manifest << "\n";
    std::exit(1);
  }
  std::cout << "make_fixture: " << bag.string() << ": " << messages.size() << " messages, " << w.stats().chunks
            << " chunks, " << file_size << " bytes\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: make_fixture <out_dir>   (writes {none,lz4,zstd}.mcap and .json manifests)\n";
    return 2;
  }
  const fs::path dir = argv[1];
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    std::cerr << "make_fixture: cannot create " << dir << ": " << ec.message() << "\n";
    return 1;
  }
  write_bag(dir, "none", mcap::Compression::kNone);
  write_bag(dir, "lz4", mcap::Compression::kLz4);
  write_bag(dir, "zstd", mcap::Compression::kZstd);
  return 0;
}
