// Quality of service of one subscription: how deep its queue is and what happens when full.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

#include "runtime/core/status.hpp"

namespace edgevla {

enum class Reliability {
  kBestEffort,  // a full queue drops its oldest message (counted); publishers never wait
  kReliable,    // a full queue makes the publisher wait up to max_block, then drop (counted)
};

struct QoS {
  std::size_t depth = 10;
  Reliability reliability = Reliability::kBestEffort;
  std::chrono::milliseconds max_block{100};
  // Also bounds the tensor bytes queued (0: no bound); the oldest messages go first.
  std::size_t max_bytes = 0;

  static QoS keep_last(std::size_t depth) { return {depth, Reliability::kBestEffort, {}, 0}; }
  // Only the newest message matters (a controller reading the latest state).
  static QoS keep_latest() { return keep_last(1); }
  static QoS reliable(std::size_t depth, std::chrono::milliseconds max_block) {
    return {depth, Reliability::kReliable, max_block, 0};
  }
  static QoS sensor_data() { return keep_last(5); }

  // "keep_last:10", "keep_latest", "reliable:10" or "reliable:10:250ms".
  std::string to_string() const;
};

Expected<QoS> parse_qos(std::string_view text);

}  // namespace edgevla
