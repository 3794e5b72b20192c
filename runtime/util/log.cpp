#include "runtime/util/log.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <cstdlib>

#include "runtime/util/clock.hpp"

namespace edgevla {

spdlog::logger& logger() {
  static std::shared_ptr<spdlog::logger> instance = [] {
    auto l = spdlog::stderr_color_mt("edgevla");
    l->set_pattern("[%H:%M:%S.%e] [%^%l%$] %v");
    const char* level = std::getenv("EDGEVLA_LOG_LEVEL");
    l->set_level(level ? spdlog::level::from_str(level) : spdlog::level::info);
    // spdlog's free functions (spdlog::info, ...) log through it too: one stream (stderr), one
    // format and one level for every line of the process, plugins and backends included.
    spdlog::set_default_logger(l);
    return l;
  }();
  return *instance;
}

namespace {
// Made when the runtime library loads, before any line is logged.
const bool kLoggerReady = (logger(), true);
}  // namespace

void RateLimitedLog::warn(std::string_view key, std::string_view message) {
  emit(spdlog::level::warn, key, message);
}

void RateLimitedLog::error(std::string_view key, std::string_view message) {
  emit(spdlog::level::err, key, message);
}

void RateLimitedLog::emit(spdlog::level::level_enum level, std::string_view key,
                          std::string_view message) {
  const std::int64_t now = steady_now_ns();
  std::uint64_t suppressed = 0;
  {
    std::lock_guard lock(mu_);
    Entry& e = entries_[std::string(key)];
    if (e.last_ns != 0 && now - e.last_ns < interval_ns_) {
      ++e.suppressed;
      return;
    }
    e.last_ns = now;
    suppressed = e.suppressed;
    e.suppressed = 0;
  }
  if (suppressed > 0) {
    logger().log(level, "{} ({} more like this since the last report)", message, suppressed);
  } else {
    logger().log(level, "{}", message);
  }
}

}  // namespace edgevla
