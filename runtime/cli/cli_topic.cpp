// `edgevla topic echo|hz|bw`: subscribe to a topic of a running graph from the terminal.
#include <signal.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <deque>

#include "runtime/bus/bus.hpp"
#include "runtime/cli/cli.hpp"
#include "runtime/util/clock.hpp"

namespace edgevla::cli {
namespace {

std::atomic<bool> g_interrupted{false};

void on_sigint(int) { g_interrupted.store(true); }

// A terminal-side subscriber: its own bus and queue.
struct Tap {
  std::unique_ptr<Bus> bus;
  std::shared_ptr<Waker> waker = std::make_shared<Waker>();
  std::shared_ptr<SubscriptionQueue> queue;

  // `depth` is small: every queued message from another process holds one of its
  // publisher's shared-memory blocks.
  static Expected<Tap> open(const std::string& topic, const std::string& purpose, std::size_t depth) {
    ::signal(SIGINT, on_sigint);
    ::signal(SIGTERM, on_sigint);
    BusOptions o;
    o.process_name = "cli:" + purpose;
    auto bus = Bus::create(o);
    if (!bus) return bus.status();
    Tap t;
    t.bus = std::move(*bus);
    t.queue = std::make_shared<SubscriptionQueue>(topic, "", QoS::keep_last(depth).as_observer(), "cli-" + purpose,
                                                      t.waker);
    EDGEVLA_RETURN_IF_ERROR(t.bus->attach(t.queue));
    return t;
  }
  // Next message, or nullptr after `timeout_ns` (<= 0: 100 ms) or on Ctrl-C.
  MessagePtr next(std::int64_t timeout_ns) {
    const std::int64_t deadline = steady_now_ns() + (timeout_ns > 0 ? timeout_ns : 100'000'000);
    while (!g_interrupted.load()) {
      const std::uint32_t seen = waker->epoch();
      if (MessagePtr m = queue->pop()) return m;
      if (steady_now_ns() >= deadline) return nullptr;
      waker->wait(seen, std::min(deadline, steady_now_ns() + 100'000'000));
    }
    return nullptr;
  }
};

std::uint64_t message_bytes(const Message& m) {
  std::uint64_t n = 0;
  for (const auto& t : m.tensors()) n += t.tensor.nbytes();
  return n;
}

void print_message(const Message& m, bool full) {
  const Header& h = m.header();
  const std::int64_t now = wall_now_ns();
  std::printf("---\ntopic: %s\ntype: %s v%u\nseq: %llu\npublisher: %s\n", h.topic.c_str(), m.type().c_str(),
              m.version(), static_cast<unsigned long long>(h.seq), h.publisher.c_str());
  std::printf("source_stamp_ns: %lld  (age %.3f ms)\npublish_stamp_ns: %lld\n",
              static_cast<long long>(h.source_stamp_ns), (now - h.source_stamp_ns) / 1e6,
              static_cast<long long>(h.publish_stamp_ns));
  std::printf("trace:");
  for (const auto& hop : h.trace) {
    std::printf(" %s@+%.3fms", hop.node.c_str(), (hop.stamp_ns - h.source_stamp_ns) / 1e6);
  }
  std::printf("\nfields:");
  for (const auto& [k, v] : m.fields()) std::printf(" %s=%s", k.c_str(), field_to_string(v).c_str());
  std::printf("\ntensors:\n");
  for (const auto& nt : m.tensors()) {
    const Tensor& t = nt.tensor;
    std::printf("  %-16s %-22s", nt.name.c_str(), t.describe().c_str());
    if (auto s = summarize(t)) {
      std::printf(" min %.6g max %.6g mean %.6g", s->min, s->max, s->mean);
      if (s->non_finite) std::printf(" non_finite %lld", static_cast<long long>(s->non_finite));
    }
    std::printf("\n");
    if (full && t.numel() <= 64 && t.device().is_cpu()) {
      auto c = t.contiguous();
      std::printf("    [");
      for (std::int64_t i = 0; c && i < c->numel(); ++i) {
        std::printf("%s%.6g", i ? ", " : "",
                    element_as_double(c->dtype(), c->raw_data() + static_cast<std::size_t>(i) * dtype_size(c->dtype())));
      }
      std::printf("]\n");
    }
  }
  std::fflush(stdout);
}

}  // namespace

int topic_echo(const EchoOptions& o) {
  auto tap = Tap::open(o.topic, "echo", 2);
  if (!tap) {
    std::fprintf(stderr, "%s\n", tap.status().message().c_str());
    return 1;
  }
  int seen = 0;
  const std::int64_t timeout = static_cast<std::int64_t>(o.timeout_s * 1e9);
  std::int64_t last = steady_now_ns();
  while (!g_interrupted.load() && (o.count == 0 || seen < o.count)) {
    MessagePtr m = tap->next(100'000'000);
    if (!m) {
      if (timeout > 0 && steady_now_ns() - last > timeout) {
        std::fprintf(stderr, "no message on '%s' within %.1f s\n", o.topic.c_str(), o.timeout_s);
        return 1;
      }
      continue;
    }
    last = steady_now_ns();
    print_message(*m, o.full);
    ++seen;
  }
  return 0;
}

namespace {

// What this observer did not get, by cause (see SubscriptionCounters).
std::string drop_summary(const SubscriptionCounters& c) {
  return "dropped: queue " + std::to_string(c.dropped_overflow.get() + c.dropped_timeout.get()) + ", transport " +
         std::to_string(c.dropped_transport.get()) + ", lost " + std::to_string(c.lost.get()) + ", rejected " +
         std::to_string(c.rejected.get());
}

template <class Report>
int rate_loop(const RateOptions& o, const char* purpose, Report report) {
  auto tap = Tap::open(o.topic, purpose, 16);
  if (!tap) {
    std::fprintf(stderr, "%s\n", tap.status().message().c_str());
    return 1;
  }
  std::deque<std::pair<std::int64_t, std::uint64_t>> window;  // arrival ns, bytes
  const std::int64_t start = steady_now_ns();
  std::int64_t next_report = start + 1'000'000'000;
  std::uint64_t total = 0;
  while (!g_interrupted.load()) {
    const std::int64_t now = steady_now_ns();
    if (o.duration_s > 0 && now - start > static_cast<std::int64_t>(o.duration_s * 1e9)) break;
    if (MessagePtr m = tap->next(50'000'000)) {
      window.emplace_back(steady_now_ns(), message_bytes(*m));
      ++total;
      while (window.size() > static_cast<std::size_t>(std::max(o.window, 2))) window.pop_front();
    }
    if (steady_now_ns() >= next_report) {
      next_report += 1'000'000'000;
      if (window.size() < 2) {
        std::printf("no new messages on %s\n", o.topic.c_str());
      } else {
        report(window);
      }
      std::printf("  %s\n", drop_summary(tap->queue->counters()).c_str());
      std::fflush(stdout);
    }
  }
  std::printf("received %llu message(s) on %s; %s\n", static_cast<unsigned long long>(total), o.topic.c_str(),
              drop_summary(tap->queue->counters()).c_str());
  return 0;
}

}  // namespace

int topic_hz(const RateOptions& o) {
  return rate_loop(o, "hz", [](const auto& w) {
    const double span = static_cast<double>(w.back().first - w.front().first) / 1e9;
    double mn = 1e300, mx = 0, sum = 0, sq = 0;
    for (std::size_t i = 1; i < w.size(); ++i) {
      const double d = static_cast<double>(w[i].first - w[i - 1].first) / 1e9;
      mn = std::min(mn, d);
      mx = std::max(mx, d);
      sum += d;
      sq += d * d;
    }
    const double n = static_cast<double>(w.size() - 1);
    const double mean = sum / n;
    std::printf("average rate: %.3f Hz  min %.3f ms  max %.3f ms  std %.3f ms  window %zu\n", n / span,
                mn * 1e3, mx * 1e3, std::sqrt(std::max(0.0, sq / n - mean * mean)) * 1e3, w.size());
  });
}

int topic_bw(const RateOptions& o) {
  return rate_loop(o, "bw", [](const auto& w) {
    const double span = static_cast<double>(w.back().first - w.front().first) / 1e9;
    std::uint64_t bytes = 0;
    for (std::size_t i = 1; i < w.size(); ++i) bytes += w[i].second;
    std::printf("bandwidth: %.3f MB/s  mean size %.1f KB  window %zu\n", static_cast<double>(bytes) / span / 1e6,
                static_cast<double>(bytes) / static_cast<double>(w.size() - 1) / 1e3, w.size());
  });
}

}  // namespace edgevla::cli
