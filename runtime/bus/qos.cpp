#include "runtime/bus/qos.hpp"

#include <charconv>

namespace edgevla {

std::string QoS::to_string() const {
  if (host_tensors) {
    QoS q = *this;
    q.host_tensors = false;
    return q.to_string() + ",device:cpu";
  }
  if (observer()) {
    QoS q = *this;
    q.role = SubscriptionRole::kPipeline;
    return "observer:" + q.to_string();
  }
  if (reliability == Reliability::kReliable) {
    return "reliable:" + std::to_string(depth) + ":" + std::to_string(max_block.count()) + "ms";
  }
  if (depth == 1) return "keep_latest";
  return "keep_last:" + std::to_string(depth);
}

namespace {

bool parse_size(std::string_view s, std::size_t& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && out > 0;
}

}  // namespace

Expected<QoS> parse_qos(std::string_view text) {
  const auto bad = [&] {
    return invalid_argument("bad QoS '" + std::string(text) +
                            "' (use keep_latest, keep_last:N, reliable:N or reliable:N:MSms, with "
                            "'observer:' in front for an observer and ',device:cpu' behind for host copies of "
                            "device tensors)");
  };
  if (const auto comma = text.find(','); comma != std::string_view::npos) {
    if (text.substr(comma + 1) != "device:cpu") return bad();
    auto inner = parse_qos(text.substr(0, comma));
    if (!inner) return bad();
    return inner->on_host();
  }
  if (text.starts_with("observer:")) {
    auto inner = parse_qos(text.substr(9));
    if (!inner || inner->observer()) return bad();
    return inner->as_observer();
  }
  if (text == "keep_latest") return QoS::keep_latest();
  if (text == "sensor_data") return QoS::sensor_data();
  std::size_t n = 0;
  if (text.starts_with("keep_last:")) {
    if (!parse_size(text.substr(10), n)) return bad();
    return QoS::keep_last(n);
  }
  if (text.starts_with("reliable:")) {
    auto rest = text.substr(9);
    std::chrono::milliseconds block{100};
    if (auto colon = rest.find(':'); colon != std::string_view::npos) {
      auto ms = rest.substr(colon + 1);
      if (!ms.ends_with("ms")) return bad();
      std::size_t v = 0;
      if (!parse_size(ms.substr(0, ms.size() - 2), v)) return bad();
      block = std::chrono::milliseconds(v);
      rest = rest.substr(0, colon);
    }
    if (!parse_size(rest, n)) return bad();
    return QoS::reliable(n, block);
  }
  return bad();
}

}  // namespace edgevla
