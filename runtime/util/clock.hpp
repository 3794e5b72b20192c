// Time sources. Header stamps use the wall clock (CLOCK_REALTIME, ns since the epoch) so they
// compare across processes and hosts; durations and deadlines use the steady clock.
#pragma once

#include <cstdint>
#include <ctime>

namespace edgevla {

inline std::int64_t wall_now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

inline std::int64_t steady_now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// A node's notion of "now" for stamps. The system clock in a running graph; replay drives
// it from recorded stamps so a replayed node sees the times it saw when recorded.
class Clock {
 public:
  virtual ~Clock() = default;
  // Current time in ns since the epoch.
  virtual std::int64_t now_ns() const = 0;
  // True for the running system's clock, which can be stepped (NTP, an operator): a node
  // measuring a duration on it can tell a step from elapsed time by the steady clock. False
  // for clocks driven from recorded stamps (replay), where the steady clock means nothing.
  virtual bool live() const { return false; }
};

class SystemClock final : public Clock {
 public:
  std::int64_t now_ns() const override { return wall_now_ns(); }
  bool live() const override { return true; }
};

}  // namespace edgevla
