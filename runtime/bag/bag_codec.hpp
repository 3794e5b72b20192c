// How edgevla messages are stored in MCAP bags:
//  - message encoding "msgpack": the record is the wire envelope (msgs/README.md) with every
//    tensor's bytes inline as a msgpack bin under "data", so one record decodes on its own;
//  - one channel per topic, with metadata edgevla.type and edgevla.type_version;
//  - one schema per message type: name = type, encoding "edgevla", data = a YAML description of
//    the type (version, tensors, fields) taken from its schema when it is a built-in type.
#pragma once

#include <span>
#include <string>

#include "msgs/message.hpp"
#include "runtime/bag/mcap_reader.hpp"

namespace edgevla::bag {

inline constexpr const char* kMessageEncoding = "msgpack";
inline constexpr const char* kSchemaEncoding = "edgevla";

// The schema data for a message type.
std::string schema_text(const std::string& type, std::uint32_t version);

// Appends the MCAP message data of `message`: strided tensors are copied contiguous first, device
// tensors to the host (counted in *device_copies when given).
Status append_record(const Message& message, std::string& out, std::uint64_t* device_copies = nullptr);

// Decodes a recorded message; tensors view the bag's bytes where alignment allows.
Expected<Message> decode_record(const mcap::MessageView& view);

}  // namespace edgevla::bag
