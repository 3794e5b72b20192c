// Foxglove-decodable views of edgevla messages, written into a bag beside edgevla's own
// channels (which stay as they are: nothing recorded is lost).
//
// Every derived channel has message encoding "json" and a "jsonschema" schema, which Foxglove
// decodes with no plugin and whose numbers its Plot panel addresses by message path:
//  - camera frames as foxglove.CompressedImage (jpeg or png) or foxglove.RawImage, `data` in
//    base64 as Foxglove's JSON schemas require: an Image on T goes to T/compressed (T/raw), a
//    u8 [H, W, 3|1] image.<camera> tensor of a message on T to T/image.<camera>/compressed;
//  - every message's numbers on T/plot: its fields, its small tensors (rank 0 a number, rank 1
//    an array, rank 2 an array of {"values": [...]} rows: `/policy/actions/plot.actions[0].values[3]`
//    is dimension 3 of the chunk's first step), and latency_ms: capture to publish and capture
//    to each hop of the trace (the stages' compute times are fields already: preprocess_ms, ...).
// What cannot be shown (an image of a dtype or shape no Foxglove encoding takes, a tensor too
// large to plot) is skipped and counted per topic and reason, never an error.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "msgs/message.hpp"
#include "runtime/bag/mcap_writer.hpp"

namespace edgevla::bag {

inline constexpr const char* kFoxgloveMessageEncoding = "json";
inline constexpr const char* kFoxgloveSchemaEncoding = "jsonschema";
// Channel metadata key naming the edgevla topic a Foxglove channel was derived from; players
// and replay skip such channels.
inline constexpr const char* kDerivedFromKey = "edgevla.derived_from";

enum class FoxgloveImages { kJpeg, kPng, kRaw };
// "jpeg", "png" or "raw"; the error lists them.
Expected<FoxgloveImages> parse_foxglove_images(std::string_view name);

struct FoxgloveOptions {
  FoxgloveImages images = FoxgloveImages::kJpeg;  // mono16 frames go to png with jpeg (8-bit only)
  int jpeg_quality = 90;                           // 1..100
  std::int64_t max_plot_elements = 4096;           // larger tensors stay in the edgevla channel only
};

struct FoxgloveMessage {
  std::string topic;        // the derived channel
  std::string schema_name;  // foxglove.CompressedImage, foxglove.RawImage or edgevla.plot.<type>
  std::string data;         // the JSON message
};

// What was not converted: "<topic>: <reason>" -> count.
using FoxgloveSkips = std::map<std::string, std::uint64_t>;

// The Foxglove messages derived from `message`, recorded on `topic`. Appends to `out`; what is
// skipped is counted in `skips`.
void to_foxglove(const Message& message, const std::string& topic, const FoxgloveOptions& options,
                 std::vector<FoxgloveMessage>& out, FoxgloveSkips& skips);

// The JSON schema of a derived message: Foxglove's for the image types, else one describing
// the message's own JSON (properties, arrays, numbers), so Foxglove completes plot paths.
std::string foxglove_schema(const FoxgloveMessage& message);

// Encoders, u8 pixels [H, W, C] (mono16: u16 [H, W, 1]) in `encoding` (rgb8, bgr8, rgba8,
// mono8; png also mono16). The error says what the pixels are and what is accepted.
Expected<std::string> encode_jpeg(const Tensor& pixels, std::string_view encoding, int quality);
Expected<std::string> encode_png(const Tensor& pixels, std::string_view encoding);
std::string base64_encode(std::span<const std::byte> bytes);

// Writes the derived channels of messages into an open bag.
class FoxgloveWriter final {
 public:
  FoxgloveWriter(mcap::McapWriter& writer, FoxgloveOptions options) : writer_(writer), options_(options) {}
  // Bad input is skipped and counted (skips()); an error is the bag's (a write failed).
  Status write(const Message& message, const std::string& topic, std::uint32_t sequence, std::uint64_t log_time,
               std::uint64_t publish_time);
  std::uint64_t written() const { return written_; }
  const FoxgloveSkips& skips() const { return skips_; }
  // Derived topics written so far.
  std::vector<std::string> topics() const;

 private:
  mcap::McapWriter& writer_;
  FoxgloveOptions options_;
  std::map<std::string, std::uint16_t> channels_;
  std::vector<FoxgloveMessage> scratch_;
  FoxgloveSkips skips_;
  std::uint64_t written_ = 0;
};

struct ExportStats {
  std::uint64_t copied = 0;       // records copied as they were (every channel of the input)
  std::uint64_t derived = 0;      // Foxglove messages written
  std::uint64_t undecodable = 0;  // edgevla records that did not decode (copied, not converted)
  std::vector<std::string> image_topics;  // derived image channels
  FoxgloveSkips skips;
  std::vector<std::string> issues;  // damage the reader found in the input
};

// `edgevla bag export --foxglove`: copies every record, metadata and attachment of `in` to
// `out` and adds the Foxglove channels. Errors: `in` unreadable, `out` equal to `in` or not
// writable, no edgevla channel in `in` (nothing to convert).
Expected<ExportStats> export_foxglove(const std::string& in, const std::string& out, const FoxgloveOptions& options);

}  // namespace edgevla::bag
