// The wire format (specified in msgs/README.md): a ZeroMQ multipart message of
//   frame 0: topic bytes followed by one NUL byte (so subscription prefixes match whole topics)
//   frame 1: msgpack envelope (header, fields, tensor descriptors)
//   frame 2..: the bytes of inline tensors, one frame each, in descriptor order
// A tensor's bytes travel either inline (a frame) or in shared memory (a descriptor naming
// segment, offset and generation). This file encodes and decodes envelopes; it never touches
// sockets or shared memory itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <variant>

#include "msgs/message.hpp"

namespace edgevla::wire {

inline constexpr std::uint32_t kWireVersion = 1;

// Bounds the decoder enforces, so a hostile envelope cannot make it allocate without limit.
inline constexpr std::size_t kMaxEnvelopeBytes = 1 << 20;
inline constexpr std::size_t kMaxTensors = 4096;
inline constexpr std::size_t kMaxFields = 4096;
inline constexpr std::size_t kMaxTraceHops = 256;
// Most input callbacks a header lists in `tk` (a node that takes more between two publishes
// keeps the newest and counts the rest in `tkl`).
inline constexpr std::size_t kMaxTaken = 1024;
inline constexpr std::size_t kMaxStringBytes = 64 * 1024;
inline constexpr std::int64_t kMaxTensorBytes = std::int64_t{1} << 40;

struct InlineFrame {
  std::uint32_t index = 0;  // 0 = the first frame after the envelope
};
// The tensor's bytes inside the envelope itself, as a msgpack bin ("data"): bag records.
struct InlineBytes {};
using TensorPlacement = std::variant<InlineFrame, ShmLocation, InlineBytes>;

// Frame 0 for a topic.
std::string topic_frame(std::string_view topic);
// The topic in a frame 0; data_loss when the NUL terminator is missing.
Expected<std::string_view> parse_topic_frame(std::span<const std::byte> frame);
// A subscription an observer adds beside topic_frame(topic): byte 0x01, the topic, NUL. No
// frame 0 starts with 0x01, so it matches no message; it tells the publisher how many of the
// topic's receiving processes only observe it.
std::string observer_frame(std::string_view topic);

// Publisher and sequence number of an envelope, read without binding its tensors (to account
// for a message whose shared memory could not be held).
struct SequenceId {
  std::string publisher;
  std::uint64_t seq = 0;
};
Expected<SequenceId> peek_sequence(std::span<const std::byte> envelope);

// Encodes `message`'s envelope into `out` (cleared first). placements[i] says where the bytes
// of message.tensors()[i] travel; the caller places them as contiguous row-major bytes (a
// strided view is copied first).
Status encode_envelope(const Message& message, std::span<const TensorPlacement> placements,
                       std::string& out);
// Like encode_envelope, but appends to `out` (a bag writer encodes straight into its chunk).
Status append_envelope(const Message& message, std::span<const TensorPlacement> placements,
                       std::string& out);

// A received frame and whatever keeps its bytes alive.
struct Frame {
  std::span<const std::byte> bytes;
  std::shared_ptr<void> owner;
};

// Maps a shared-memory descriptor to a buffer of exactly loc.size bytes, holding the block.
using ShmResolver = std::function<Expected<BufferPtr>(const ShmLocation& loc)>;

// Decodes an envelope and binds its tensors to `tensor_frames` (inline) or to `resolve`
// (shared memory; may be empty, then shm descriptors are an error). Never throws: every
// malformed input is a Status naming the offending part.
Expected<Message> decode(std::span<const std::byte> envelope, std::span<const Frame> tensor_frames,
                         const ShmResolver& resolve);

// Decodes a bag record: one envelope whose tensors carry their bytes inline ("data"). Tensors
// view `record` in place (kept alive by `owner`) when their alignment allows, else are copied.
Expected<Message> decode_record(std::span<const std::byte> record, std::shared_ptr<void> owner);

}  // namespace edgevla::wire
