// Plays a bag back onto the bus with the original timing (scaled by a rate) and the original
// headers and stamps, so downstream nodes see what they saw when it was recorded.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "runtime/bus/bus.hpp"

namespace edgevla::bag {

struct PlayOptions {
  double rate = 1.0;                   // 2.0 plays twice as fast
  bool loop = false;
  std::vector<std::string> topics;     // empty: every topic
  double start_offset_s = 0;           // skip this much of the bag's beginning
  double duration_s = 0;               // play this much (0: to the end)
  std::map<std::string, std::string> remaps;  // recorded topic -> published topic
};

struct PlayStats {
  std::uint64_t published = 0;
  std::uint64_t undecodable = 0;  // records that are not edgevla messages or fail to decode
  std::uint64_t loops = 0;
  std::vector<std::string> issues;  // damage found in the bag (it still plays what is intact)
};

// Plays until the end (or `stop` turns true).
Expected<PlayStats> play(Bus& bus, const std::string& path, const PlayOptions& options,
                         const std::atomic<bool>* stop = nullptr);

}  // namespace edgevla::bag
