// Lock-free latency histogram and counters for per-callback and per-topic statistics.
// Recording is a few relaxed atomic adds; percentiles are computed when someone asks.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

namespace edgevla {

// Log-linear histogram of durations in ns: 8 sub-buckets per power of two, from 64 ns to
// ~17 minutes. Relative error of a percentile is at most 1/8 of its value.
class LatencyHistogram {
 public:
  static constexpr int kSubBits = 3;
  static constexpr int kSub = 1 << kSubBits;
  static constexpr int kMinShift = 6;  // 64 ns
  static constexpr int kBuckets = (40 - kMinShift) * kSub;

  void record(std::int64_t ns);
  std::uint64_t count() const { return count_.load(std::memory_order_relaxed); }
  // q in [0, 1]; 0 when empty. Returns the upper edge of the bucket holding the quantile.
  std::int64_t quantile_ns(double q) const;
  std::int64_t max_ns() const { return max_.load(std::memory_order_relaxed); }
  double mean_ns() const;
  void reset();

 private:
  static int bucket_of(std::int64_t ns);
  static std::int64_t upper_edge(int bucket);

  std::array<std::atomic<std::uint64_t>, kBuckets> buckets_{};
  std::atomic<std::uint64_t> count_{0};
  std::atomic<std::uint64_t> sum_{0};
  std::atomic<std::int64_t> max_{0};
};

// A monotonically increasing event count.
class Counter {
 public:
  void add(std::uint64_t n = 1) { v_.fetch_add(n, std::memory_order_relaxed); }
  std::uint64_t get() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::uint64_t> v_{0};
};

}  // namespace edgevla
