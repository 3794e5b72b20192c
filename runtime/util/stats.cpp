#include "runtime/util/stats.hpp"

#include <bit>

namespace edgevla {

int LatencyHistogram::bucket_of(std::int64_t ns) {
  if (ns < (std::int64_t{1} << kMinShift)) return 0;
  const auto u = static_cast<std::uint64_t>(ns);
  const int msb = 63 - std::countl_zero(u);  // >= kMinShift
  const int sub = static_cast<int>((u >> (msb - kSubBits)) & (kSub - 1));
  const int b = (msb - kMinShift) * kSub + sub;
  return b < kBuckets ? b : kBuckets - 1;
}

std::int64_t LatencyHistogram::upper_edge(int b) {
  const int msb = b / kSub + kMinShift;
  const int sub = b % kSub;
  return (std::int64_t{1} << msb) + (static_cast<std::int64_t>(sub + 1) << (msb - kSubBits));
}

void LatencyHistogram::record(std::int64_t ns) {
  if (ns < 0) ns = 0;
  buckets_[static_cast<std::size_t>(bucket_of(ns))].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(static_cast<std::uint64_t>(ns), std::memory_order_relaxed);
  std::int64_t prev = max_.load(std::memory_order_relaxed);
  while (ns > prev && !max_.compare_exchange_weak(prev, ns, std::memory_order_relaxed)) {
  }
}

std::int64_t LatencyHistogram::quantile_ns(double q) const {
  std::uint64_t total = 0;
  for (const auto& b : buckets_) total += b.load(std::memory_order_relaxed);
  if (total == 0) return 0;
  const auto rank = static_cast<std::uint64_t>(q * static_cast<double>(total - 1)) + 1;
  std::uint64_t seen = 0;
  for (int i = 0; i < kBuckets; ++i) {
    seen += buckets_[static_cast<std::size_t>(i)].load(std::memory_order_relaxed);
    if (seen >= rank) {
      const std::int64_t edge = upper_edge(i);
      const std::int64_t mx = max_ns();
      return edge < mx ? edge : mx;  // never report more than the largest sample
    }
  }
  return max_ns();
}

double LatencyHistogram::mean_ns() const {
  const auto n = count();
  return n ? static_cast<double>(sum_.load(std::memory_order_relaxed)) / static_cast<double>(n) : 0.0;
}

void LatencyHistogram::reset() {
  for (auto& b : buckets_) b.store(0, std::memory_order_relaxed);
  count_.store(0, std::memory_order_relaxed);
  sum_.store(0, std::memory_order_relaxed);
  max_.store(0, std::memory_order_relaxed);
}

}  // namespace edgevla
