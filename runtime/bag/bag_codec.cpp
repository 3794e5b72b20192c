#include "runtime/bag/bag_codec.hpp"

#include <yaml-cpp/yaml.h>

#include "msgs/schema.hpp"
#include "msgs/wire.hpp"

namespace edgevla::bag {

std::string schema_text(const std::string& type, std::uint32_t version) {
  YAML::Emitter out;
  out << YAML::BeginMap << YAML::Key << "type" << YAML::Value << type << YAML::Key << "version" << YAML::Value
      << version;
  if (const MessageSchema* s = find_schema(type); s != nullptr && s->version == version) {
    out << YAML::Key << "tensors" << YAML::Value << YAML::BeginSeq;
    for (const auto& t : s->tensors) {
      out << YAML::BeginMap << YAML::Key << "name" << YAML::Value << (std::string(t.name) + (t.is_prefix ? "*" : ""))
          << YAML::Key << "dtypes" << YAML::Value << dtype_mask_names(t.dtypes) << YAML::Key << "rank"
          << YAML::Value
          << (t.min_rank == t.max_rank ? std::to_string(t.min_rank)
                                       : std::to_string(t.min_rank) + ".." + std::to_string(t.max_rank))
          << YAML::Key << "required" << YAML::Value << t.required << YAML::Key << "meaning" << YAML::Value
          << std::string(t.meaning) << YAML::EndMap;
    }
    out << YAML::EndSeq << YAML::Key << "fields" << YAML::Value << YAML::BeginSeq;
    for (const auto& f : s->fields) {
      out << YAML::Flow << YAML::BeginMap << YAML::Key << "name" << YAML::Value << std::string(f.name) << YAML::Key
          << "required" << YAML::Value << f.required << YAML::EndMap;
    }
    out << YAML::EndSeq;
  }
  out << YAML::Key << "encoding" << YAML::Value
      << "msgpack envelope (msgs/README.md) with tensor bytes inline under 'data'" << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

Status append_record(const Message& message, std::string& out, std::uint64_t* device_copies) {
  bool as_is = true;
  for (const auto& t : message.tensors()) as_is = as_is && t.tensor.is_contiguous() && t.tensor.device().is_cpu();
  std::vector<wire::TensorPlacement> placements(message.tensors().size(), wire::InlineBytes{});
  if (as_is) return wire::append_envelope(message, placements, out);
  // Strided views become contiguous copies; device tensors host copies (bags hold host bytes).
  Message copy = message;
  copy.clear_tensors();
  for (const auto& t : message.tensors()) {
    const bool device = !t.tensor.device().is_cpu();
    auto c = device ? t.tensor.to(Device::cpu()) : t.tensor.contiguous();
    if (!c) return c.status().with_context("recording tensor '" + t.name + "'");
    if (device && device_copies != nullptr) ++*device_copies;
    copy.set_tensor(t.name, std::move(*c));
  }
  return wire::append_envelope(copy, placements, out);
}

Expected<Message> decode_record(const mcap::MessageView& view) {
  if (view.channel->message_encoding != kMessageEncoding) {
    return invalid_argument("channel '" + view.channel->topic + "' uses message encoding '" +
                            view.channel->message_encoding + "', not edgevla's '" + kMessageEncoding + "'");
  }
  auto m = wire::decode_record(view.record.data, view.owner);
  if (!m) return m.status().with_context("message on '" + view.channel->topic + "'");
  return m;
}

}  // namespace edgevla::bag
