// One-way latency of handing a small record (a message descriptor) to another process on the
// same host: edgevla's shared-memory ring with a futex wake-up (runtime/shm/ring.hpp) against
// plain ZeroMQ ipc (PUSH/PULL) in the same run. A child process sends; the parent receives,
// blocked (futex wait / zmq recv), and takes the difference of CLOCK_MONOTONIC stamps. Sends
// are spaced so each one finds the receiver asleep: this measures the wake-up path.
//
//   edgevla_bench_ipc_wakeup [--count 2000] [--gap-us 300] [--json F] [--markdown F]
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "runtime/shm/ring.hpp"

namespace {

std::int64_t mono_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

void sleep_until(std::int64_t t) {
  const std::int64_t left = t - mono_ns();
  if (left > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(left));
}

struct Result {
  std::string transport;
  std::size_t bytes = 0;
  std::size_t n = 0;
  double p50_us = 0, p90_us = 0, p99_us = 0;
};

Result summarize(const std::string& transport, std::size_t bytes, std::vector<double> us) {
  std::sort(us.begin(), us.end());
  Result r{transport, bytes, us.size()};
  if (us.empty()) return r;
  r.p50_us = us[us.size() / 2];
  r.p90_us = us[std::min(us.size() - 1, us.size() * 9 / 10)];
  r.p99_us = us[std::min(us.size() - 1, us.size() * 99 / 100)];
  return r;
}

constexpr int kWarmup = 50;

Result run_ring(std::size_t bytes, int count, int gap_us) {
  const std::string name = edgevla::shm::ring_name(::getpid(), "bench");
  auto ring = edgevla::shm::Ring::create(name, {.slots = 64, .slot_bytes = 8192});
  if (!ring) {
    std::fprintf(stderr, "%s\n", ring.status().to_string().c_str());
    std::exit(1);
  }
  const pid_t child = ::fork();
  if (child == 0) {
    auto r = edgevla::shm::Ring::open(name);
    if (!r) ::_exit(2);
    std::string rec(bytes, 'x');
    std::int64_t t = mono_ns() + 20'000'000;
    for (int i = 0; i < count + kWarmup; ++i) {
      sleep_until(t);
      const std::int64_t now = mono_ns();
      std::memcpy(rec.data(), &now, sizeof now);
      while (!(*r)->push(std::as_bytes(std::span(rec.data(), rec.size()))).is_ok()) std::this_thread::yield();
      t += gap_us * 1000;
    }
    ::_exit(0);
  }
  std::vector<double> us;
  std::string got;
  for (int i = 0; i < count + kWarmup; ++i) {
    if (!(*ring)->pop(got, 5'000'000'000)) break;
    const std::int64_t now = mono_ns();
    std::int64_t sent = 0;
    std::memcpy(&sent, got.data(), sizeof sent);
    if (i >= kWarmup) us.push_back(static_cast<double>(now - sent) / 1e3);
  }
  ::waitpid(child, nullptr, 0);
  return summarize("shm ring + futex", bytes, std::move(us));
}

Result run_zmq(std::size_t bytes, int count, int gap_us) {
  const std::string endpoint = "ipc:///tmp/edgevla-bench-wakeup-" + std::to_string(::getpid());
  zmq::context_t ctx(1);
  zmq::socket_t pull(ctx, zmq::socket_type::pull);
  pull.bind(endpoint);
  const pid_t child = ::fork();
  if (child == 0) {
    zmq::context_t c(1);
    zmq::socket_t push(c, zmq::socket_type::push);
    push.set(zmq::sockopt::linger, 1000);
    push.connect(endpoint);
    std::string rec(bytes, 'x');
    std::int64_t t = mono_ns() + 50'000'000;
    for (int i = 0; i < count + kWarmup; ++i) {
      sleep_until(t);
      const std::int64_t now = mono_ns();
      std::memcpy(rec.data(), &now, sizeof now);
      push.send(zmq::buffer(rec), zmq::send_flags::none);
      t += gap_us * 1000;
    }
    push.close();
    c.close();
    ::_exit(0);
  }
  std::vector<double> us;
  zmq::message_t msg;
  pull.set(zmq::sockopt::rcvtimeo, 5000);
  for (int i = 0; i < count + kWarmup; ++i) {
    if (!pull.recv(msg, zmq::recv_flags::none)) break;
    const std::int64_t now = mono_ns();
    std::int64_t sent = 0;
    std::memcpy(&sent, msg.data(), sizeof sent);
    if (i >= kWarmup) us.push_back(static_cast<double>(now - sent) / 1e3);
  }
  ::waitpid(child, nullptr, 0);
  ::unlink(endpoint.substr(6).c_str());
  return summarize("plain ZeroMQ ipc (push/pull)", bytes, std::move(us));
}

}  // namespace

int main(int argc, char** argv) {
  int count = 2000, gap_us = 300;
  std::string json, markdown;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--count") count = std::max(10, std::atoi(v.c_str()));
    else if (k == "--gap-us") gap_us = std::max(10, std::atoi(v.c_str()));
    else if (k == "--json") json = v;
    else if (k == "--markdown") markdown = v;
  }
  std::vector<Result> results;
  for (const std::size_t bytes : {std::size_t{64}, std::size_t{1024}, std::size_t{4096}}) {
    results.push_back(run_zmq(bytes, count, gap_us));
    results.push_back(run_ring(bytes, count, gap_us));
  }
  std::string js = "[\n", md;
  md += "| transport | record bytes | n | p50 µs | p90 µs | p99 µs |\n|---|---|---|---|---|---|\n";
  for (std::size_t i = 0; i < results.size(); ++i) {
    const Result& r = results[i];
    char line[256];
    std::snprintf(line, sizeof line,
                  "  {\"transport\": \"%s\", \"bytes\": %zu, \"n\": %zu, \"p50_us\": %.1f, \"p90_us\": %.1f, "
                  "\"p99_us\": %.1f}%s\n",
                  r.transport.c_str(), r.bytes, r.n, r.p50_us, r.p90_us, r.p99_us, i + 1 < results.size() ? "," : "");
    js += line;
    std::snprintf(line, sizeof line, "| %s | %zu | %zu | %.1f | %.1f | %.1f |\n", r.transport.c_str(), r.bytes, r.n,
                  r.p50_us, r.p90_us, r.p99_us);
    md += line;
  }
  js += "]\n";
  std::fputs(md.c_str(), stdout);
  for (std::size_t i = 0; i + 1 < results.size(); i += 2) {
    std::printf("%zu bytes: ring p50 is %.2fx faster than plain ZeroMQ ipc\n", results[i].bytes,
                results[i + 1].p50_us > 0 ? results[i].p50_us / results[i + 1].p50_us : 0.0);
  }
  if (!json.empty()) std::ofstream(json) << js;
  if (!markdown.empty()) std::ofstream(markdown) << md;
  return 0;
}
