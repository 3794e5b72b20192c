// Logging through spdlog, plus the rate limiter every bad-input path uses: the first
// occurrence of a problem is logged at once, repeats at most once per interval with a count.
#pragma once

#include <spdlog/spdlog.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace edgevla {

// The process-wide logger ("edgevla"); level from EDGEVLA_LOG_LEVEL (trace..off), default info.
spdlog::logger& logger();

class RateLimitedLog {
 public:
  explicit RateLimitedLog(std::int64_t interval_ns = 1'000'000'000) : interval_ns_(interval_ns) {}

  // Logs `message` at warn level unless `key` was logged less than one interval ago; then
  // counts it and reports the count with the next line for that key.
  void warn(std::string_view key, std::string_view message);
  void error(std::string_view key, std::string_view message);

 private:
  void emit(spdlog::level::level_enum level, std::string_view key, std::string_view message);

  struct Entry {
    std::int64_t last_ns = 0;
    std::uint64_t suppressed = 0;
  };
  std::int64_t interval_ns_;
  std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_;
};

}  // namespace edgevla
