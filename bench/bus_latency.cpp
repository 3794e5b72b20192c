// Bus latency and throughput per transport and payload size, against baselines measured in
// the same run: a plain memcpy of the payload, and plain ZeroMQ sending a copy of it
// (inproc between threads, ipc between processes). tcp runs twice on loopback: encrypted and
// authenticated (CURVE, the default) and plaintext (insecure: true), for the cost of CURVE.
//
// Latency is one-way: publish stamp (wall clock, shared by processes on a host) to the start
// of the subscriber's callback on its executor thread, i.e. everything a node sees. Messages
// are spaced so each one measures latency, not queueing. Throughput sends a burst back to
// back and counts what the subscriber received per second.
//
//   edgevla_bench_bus [--sizes 1024,65536,...] [--only TRANSPORT] [--spin-us N] [--json F] [--markdown F]
//                     [--rounds N]   (repeats each transport N times per size, alternating; rows per round)
// EDGEVLA_BENCH_DEBUG=1 prints the publishing bus's statistics (pool, transport) after each run.
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <mutex>
#include <sstream>
#include <thread>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#if EDGEVLA_BENCH_SODIUM
#include <sodium.h>
#endif

#include "bench/bench_common.hpp"
#include "runtime/bus/bus.hpp"
#include "runtime/node/host.hpp"
#include "runtime/util/clock.hpp"

namespace edgevla::bench {
namespace {

struct Config {
  std::vector<std::size_t> sizes = {1024, 64 * 1024, 1 << 20, 16 << 20, 64 << 20};
  std::int64_t spin_us = 0;
  std::string json;
  std::string only;  // run only transports whose name contains this
  std::string markdown;
  int rounds = 1;
};

// Messages with a payload sequence number below this are warm-up and not measured.
constexpr std::uint64_t kWarmup = 30;

// Zero-copy transports cost the same at every size, so they get a long series everywhere; a
// short one at 64 MB would let a few ms of background noise decide the p50.
constexpr int kZeroCopyCount = 500;

int count_for(std::size_t size) {
  if (size <= 64 * 1024) return 2000;
  if (size <= (1 << 20)) return 500;
  if (size <= (16 << 20)) return 100;
  return 40;
}

// Records one-way latency of every message it receives.
class LatencySink final : public Node {
 public:
  // Queued messages hold their shared-memory blocks: the queue holds at most ~512 MB.
  LatencySink(const NodeOptions& o, std::size_t payload)
      : Node(o), depth_(std::clamp<std::size_t>((std::size_t{512} << 20) / payload, 8, 4096)) {}
  Status configure(NodeSpec& spec) override {
    return spec.subscribe_any("data", "", QoS::keep_last(depth_), [this](const MessagePtr& m) {
      const std::int64_t now = wall_now_ns();
      std::uint64_t seq = 0;
      std::memcpy(&seq, m->tensors()[0].tensor.raw_data(), sizeof seq);
      std::lock_guard lock(mu);
      ++seen;
      if (seq < kWarmup) return;  // warm-up: pool segments being created and mapped
      samples.push_back(now - m->header().publish_stamp_ns);
      last_ns = steady_now_ns();
      if (first_ns == 0) first_ns = last_ns;
      // Touch the payload the way a consumer would start reading it.
      volatile std::byte b = m->tensors()[0].tensor.raw_data()[0];
      (void)b;
    });
  }
  Status activate() override { return Status::ok(); }
  Status deactivate() override { return Status::ok(); }

  std::size_t received() {
    std::lock_guard lock(mu);
    return samples.size();
  }
  std::size_t depth_;
  std::size_t seen_any() {
    std::lock_guard lock(mu);
    return seen;
  }
  std::mutex mu;
  std::size_t seen = 0;
  std::vector<std::int64_t> samples;
  std::int64_t first_ns = 0;
  std::int64_t last_ns = 0;
};

struct Row {
  std::string transport;
  std::size_t size = 0;
  double p50_us = 0, p99_us = 0;
  double msgs_per_s = 0, gb_per_s = 0;
  std::size_t sent = 0, received = 0;
};

Message payload_message(Bus& bus, std::size_t size, std::uint64_t seq) {
  Tensor t = *bus.loan(DType::kU8, Shape{static_cast<std::int64_t>(size)});
  std::memcpy(t.raw_data(), &seq, sizeof seq);
  Message m("Blob", 1);
  m.set_tensor("data", std::move(t));
  return m;
}

void sleep_until(std::int64_t steady_ns) {
  while (steady_now_ns() < steady_ns) {
    const std::int64_t left = steady_ns - steady_now_ns();
    if (left > 200'000) std::this_thread::sleep_for(std::chrono::nanoseconds(left - 100'000));
  }
}

// Zero-copy transports: one spacing for every payload size, so "flat in size" is measured
// with the same idle time between messages.
constexpr std::int64_t kZeroCopyIntervalNs = 1'000'000;

// The spacing of the latency series of a copying transport: long enough that it finishes one
// message before the next starts, so latency is measured, not queueing. tcp (plain ZeroMQ,
// edgevla plaintext and CURVE alike) gets 0.125 GB/s: CURVE seals and opens every byte, which
// on a loaded 2-core VM runs at 0.3-0.6 GB/s, and at 0.5 GB/s its queue grew without bound.
std::int64_t interval_for(std::size_t size, bool tcp) {
  if (const char* e = std::getenv("BENCH_INTERVAL_NS")) return std::atoll(e);
  const std::int64_t ns_per_byte = tcp ? 8 : 2;
  return std::max<std::int64_t>(kZeroCopyIntervalNs, static_cast<std::int64_t>(size) * ns_per_byte);
}

// Publishes `count` spaced messages then a burst; returns nothing (the sink measures).
void publish_series(Bus& bus, TopicWriter& w, std::size_t size, int count, int burst, bool tcp) {
  const std::int64_t interval = tcp ? interval_for(size, true) : kZeroCopyIntervalNs;
  std::int64_t next = steady_now_ns();
  for (int i = 0; i < count; ++i) {
    sleep_until(next);
    // A late publisher skips the slots it missed instead of catching up in a burst, as a
    // camera does.
    next = std::max(next + interval, steady_now_ns());
    (void)bus.publish(w, payload_message(bus, size, static_cast<std::uint64_t>(i)));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  for (int i = 0; i < burst; ++i) (void)bus.publish(w, payload_message(bus, size, kWarmup + static_cast<std::uint64_t>(i)));
}

// --- edgevla, same process ------------------------------------------------------------------

// A bus with one active LatencySink on /bench.
struct SinkGraph {
  std::unique_ptr<Bus> bus;
  std::unique_ptr<NodeHost> host;
  LatencySink* sink = nullptr;

  SinkGraph(const Config& c, BusOptions bo, std::size_t payload) {
    bo.spin_ns = c.spin_us * 1000;
    bus = std::move(*Bus::create(bo));
    NodeHostOptions ho;
    ho.status_period = std::chrono::milliseconds(0);
    ho.spin_ns = c.spin_us * 1000;
    host = std::make_unique<NodeHost>(*bus, ho);
    NodeOptions no{"sink", "latency_sink"};
    no.remaps["data"] = "/bench";
    sink = static_cast<LatencySink*>(*host->add(std::make_unique<LatencySink>(no, payload)));
    (void)host->activate_all();
  }
  ~SinkGraph() { host->shutdown(); }
};

Row run_inprocess(const Config& c, std::size_t size) {
  BusOptions bo;
  bo.domain = "bench-inproc-" + std::to_string(::getpid());
  SinkGraph g(c, bo, size);
  Bus* bus = g.bus.get();
  LatencySink* sink = g.sink;
  auto w = *bus->advertise("/bench", "Blob", "bench");
  const int count = std::max(count_for(size), kZeroCopyCount);
  const int burst = count_for(size);
  publish_series(*bus, *w, size, count + static_cast<int>(kWarmup), 0, false);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  Row r{"edgevla same-process", size};
  {
    std::lock_guard lock(sink->mu);
    r.p50_us = percentile_us(sink->samples, 0.5);
    r.p99_us = percentile_us(sink->samples, 0.99);
    sink->samples.clear();
    sink->first_ns = 0;
  }
  publish_series(*bus, *w, size, 0, burst, false);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  {
    std::lock_guard lock(sink->mu);
    const double span = static_cast<double>(sink->last_ns - sink->first_ns) / 1e9;
    r.received = sink->samples.size();
    r.msgs_per_s = span > 0 && r.received > 1 ? static_cast<double>(r.received - 1) / span : 0;
  }
  r.sent = static_cast<std::size_t>(burst);
  r.gb_per_s = r.msgs_per_s * static_cast<double>(size) / 1e9;
  return r;
}

// --- edgevla, other process (ipc + shm) or tcp ---------------------------------------------

enum class CrossTransport { kIpc, kTcpPlaintext, kTcpCurve };

// Child: subscribes, waits for `expect` messages (or a timeout), writes samples to `fd`.
int child_sink(const Config& c, const std::string& domain, const TcpOptions& tcp, int fd, std::size_t size,
               int count, int burst) {
  BusOptions bo;
  bo.domain = domain;
  bo.tcp = tcp;
  SinkGraph g(c, bo, size);
  LatencySink* sink = g.sink;
  // Warm-up: the parent publishes until we have seen one message; tell it.
  while (sink->seen_any() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  {
    std::lock_guard lock(sink->mu);
    sink->samples.clear();
  }
  [[maybe_unused]] auto n = ::write(fd, "R", 1);
  auto wait_for = [&](std::size_t want, std::int64_t timeout_ns) {
    const std::int64_t until = steady_now_ns() + timeout_ns;
    while (sink->received() < want && steady_now_ns() < until) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  };
  wait_for(static_cast<std::size_t>(count), 120'000'000'000);
  std::vector<std::int64_t> lat;
  {
    std::lock_guard lock(sink->mu);
    lat.swap(sink->samples);
    sink->first_ns = 0;
  }
  [[maybe_unused]] auto m = ::write(fd, "B", 1);  // ready for the burst
  wait_for(static_cast<std::size_t>(burst), 5'000'000'000);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  std::ostringstream out;
  {
    std::lock_guard lock(sink->mu);
    out << percentile_us(lat, 0.5) << " " << percentile_us(lat, 0.99) << " " << lat.size() << " "
        << sink->samples.size() << " " << (sink->last_ns - sink->first_ns) << "\n";
  }
  const std::string s = out.str();
  [[maybe_unused]] auto k = ::write(fd, s.data(), s.size());
  return 0;
}

char read_char(int fd) {
  char ch = 0;
  [[maybe_unused]] auto n = ::read(fd, &ch, 1);
  return ch;
}

Row run_cross(const Config& c, std::size_t size, CrossTransport transport) {
  const bool tcp = transport != CrossTransport::kIpc;
  const bool curve = transport == CrossTransport::kTcpCurve;
  const std::string domain = "bench-x-" + std::to_string(::getpid()) + (tcp ? "-tcp" : "");
  BusOptions bo;
  bo.domain = tcp ? domain + "-pub" : domain;
  // Both ends' key pairs, made here (the child inherits them through fork).
  const CurveKeyPair server = curve ? *generate_curve_key_pair() : CurveKeyPair{};
  const CurveKeyPair client = curve ? *generate_curve_key_pair() : CurveKeyPair{};
  if (tcp) {
    bo.tcp = curve ? TcpOptions{.listen = "*", .key = server, .allowed_keys = {client.public_key}}
                   : TcpOptions{.listen = "*", .insecure = true};
  }
  bo.shm_pool_bytes = std::max<std::size_t>(std::size_t{1} << 30, size * 8);
  auto bus = std::move(*Bus::create(bo));
  TcpOptions peer;
  if (tcp) {
    peer = curve ? TcpOptions{.peers = {{bus->tcp_endpoint(), server.public_key}}, .key = client}
                 : TcpOptions{.peers = {{bus->tcp_endpoint(), ""}}, .insecure = true};
  }
  const int count = tcp ? count_for(size) : std::max(count_for(size), kZeroCopyCount);
  const int burst = count_for(size);
  int fds[2];
  if (::pipe(fds) != 0) return {};
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    _exit(child_sink(c, domain, peer, fds[1], size, count, burst));
  }
  ::close(fds[1]);
  auto w = *bus->advertise("/bench", "Blob", "bench");
  // Until the child has seen a message (the subscription has propagated).
  std::thread warm([&] {
    for (int i = 0; i < 1'000'000; ++i) {
      pollfd p{fds[0], POLLIN, 0};
      if (::poll(&p, 1, 0) > 0) break;
      (void)bus->publish(*w, payload_message(*bus, size, 0));
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  warm.join();
  read_char(fds[0]);  // 'R'
  publish_series(*bus, *w, size, count + static_cast<int>(kWarmup), 0, tcp);
  read_char(fds[0]);  // 'B'
  publish_series(*bus, *w, size, 0, burst, tcp);
  std::string line;
  for (char ch; (ch = read_char(fds[0])) != '\n' && ch != 0;) line.push_back(ch);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::close(fds[0]);
  if (std::getenv("EDGEVLA_BENCH_DEBUG")) std::fprintf(stderr, "%s\n", bus->stats_yaml().c_str());
  Row r{curve ? "edgevla tcp curve" : tcp ? "edgevla tcp plaintext" : "edgevla cross-process", size};
  std::istringstream in(line);
  std::int64_t span_ns = 0;
  in >> r.p50_us >> r.p99_us >> r.received >> r.received >> span_ns;
  r.sent = static_cast<std::size_t>(burst);
  r.msgs_per_s = span_ns > 0 && r.received > 1
                     ? static_cast<double>(r.received - 1) / (static_cast<double>(span_ns) / 1e9)
                     : 0;
  r.gb_per_s = r.msgs_per_s * static_cast<double>(size) / 1e9;
  return r;
}

// --- baselines ---------------------------------------------------------------------------------

Row run_memcpy(std::size_t size) {
  std::vector<std::byte> a(size, std::byte{1}), b(size, std::byte{2});
  std::vector<std::int64_t> ns;
  const int count = count_for(size);
  for (int i = 0; i < count; ++i) {
    const std::int64_t t0 = steady_now_ns();
    std::memcpy(b.data(), a.data(), size);
    ns.push_back(steady_now_ns() - t0);
    a[0] = b[size - 1];
  }
  Row r{"baseline memcpy", size};
  r.p50_us = percentile_us(ns, 0.5);
  r.p99_us = percentile_us(ns, 0.99);
  r.msgs_per_s = 1e6 / std::max(r.p50_us, 1e-3);
  r.gb_per_s = r.msgs_per_s * static_cast<double>(size) / 1e9;
  r.sent = r.received = static_cast<std::size_t>(count);
  return r;
}

// The floor under CURVE: sealing and opening the payload once with the crypto_box libzmq
// uses (XSalsa20-Poly1305 on a precomputed key), one after the other, in this process.
Row run_sodium(std::size_t size) {
  Row r{"baseline sodium seal+open", size};
#if EDGEVLA_BENCH_SODIUM
  if (sodium_init() < 0) return r;
  unsigned char pk[crypto_box_PUBLICKEYBYTES], sk[crypto_box_SECRETKEYBYTES], k[crypto_box_BEFORENMBYTES];
  crypto_box_keypair(pk, sk);
  if (crypto_box_beforenm(k, pk, sk) != 0) return r;
  std::vector<unsigned char> m(size, 7), c(size + crypto_box_MACBYTES), o(size);
  unsigned char nonce[crypto_box_NONCEBYTES] = {};
  std::vector<std::int64_t> ns;
  const int count = std::min(count_for(size), 200);
  for (int i = 0; i < count; ++i) {
    const std::int64_t t0 = steady_now_ns();
    crypto_box_easy_afternm(c.data(), m.data(), size, nonce, k);
    if (crypto_box_open_easy_afternm(o.data(), c.data(), c.size(), nonce, k) != 0) return r;
    ns.push_back(steady_now_ns() - t0);
    sodium_increment(nonce, sizeof nonce);
  }
  r.p50_us = percentile_us(ns, 0.5);
  r.p99_us = percentile_us(ns, 0.99);
  r.msgs_per_s = 1e6 / std::max(r.p50_us, 1e-3);
  r.gb_per_s = r.msgs_per_s * static_cast<double>(size) / 1e9;
  r.sent = r.received = static_cast<std::size_t>(count);
#endif
  return r;
}

enum class ZmqTransport { kInproc, kIpc, kTcp };

// Plain ZeroMQ PUB/SUB with the payload copied into each message; the receiver thread (inproc)
// or process (ipc, tcp loopback) measures one-way latency from a stamp in the first 8 bytes.
Row run_zmq(std::size_t size, ZmqTransport transport) {
  const int count = count_for(size);
  const bool ipc = transport != ZmqTransport::kInproc;  // receiver in another process
  zmq::context_t ctx(1);
  zmq::socket_t pub(ctx, zmq::socket_type::pub);
  pub.set(zmq::sockopt::sndhwm, 0);
  switch (transport) {
    case ZmqTransport::kInproc: pub.bind("inproc://edgevla-bench"); break;
    case ZmqTransport::kIpc: pub.bind("ipc:///tmp/edgevla-bench-zmq-" + std::to_string(::getpid())); break;
    case ZmqTransport::kTcp: pub.bind("tcp://127.0.0.1:*"); break;
  }
  const std::string ep = pub.get(zmq::sockopt::last_endpoint);
  auto receiver = [size, count](zmq::context_t& c, const std::string& endpoint, int fd) {
    zmq::socket_t sub(c, zmq::socket_type::sub);
    sub.set(zmq::sockopt::rcvhwm, 0);
    sub.connect(endpoint);
    sub.set(zmq::sockopt::subscribe, "");
    std::vector<std::int64_t> lat;
    zmq::message_t m;
    std::int64_t first = 0, last = 0;
    std::size_t got = 0;
    bool warm = false;
    while (true) {
      if (!sub.recv(m)) continue;
      std::int64_t stamp;
      std::memcpy(&stamp, m.data(), sizeof stamp);
      if (stamp == -1) {  // end of latency series
        [[maybe_unused]] auto n = ::write(fd, "B", 1);
        continue;
      }
      if (stamp == -2) break;
      if (stamp == 0) {  // warm-up probe
        if (!warm) {
          warm = true;
          [[maybe_unused]] auto n = ::write(fd, "R", 1);
        }
        continue;
      }
      if (stamp > 0) {
        lat.push_back(wall_now_ns() - stamp);
      } else {  // burst message
        last = steady_now_ns();
        if (first == 0) first = last;
        ++got;
      }
    }
    std::ostringstream out;
    out << percentile_us(lat, 0.5) << " " << percentile_us(lat, 0.99) << " " << got << " " << (last - first)
        << "\n";
    const std::string s = out.str();
    [[maybe_unused]] auto n = ::write(fd, s.data(), s.size());
    (void)size;
    (void)count;
  };
  int fds[2];
  if (::pipe(fds) != 0) return {};
  pid_t pid = -1;
  std::thread th;
  if (ipc) {
    pid = ::fork();
    if (pid == 0) {
      ::close(fds[0]);
      zmq::context_t c2(1);
      receiver(c2, ep, fds[1]);
      _exit(0);
    }
    ::close(fds[1]);
  } else {
    th = std::thread([&] { receiver(ctx, ep, fds[1]); });
  }
  std::vector<std::byte> payload(size, std::byte{3});
  auto send_stamp = [&](std::int64_t stamp) {
    std::memcpy(payload.data(), &stamp, sizeof stamp);
    zmq::message_t m(payload.data(), payload.size());  // the copy a plain transport makes
    pub.send(m, zmq::send_flags::none);
  };
  for (;;) {
    pollfd p{fds[0], POLLIN, 0};
    if (::poll(&p, 1, 0) > 0) break;
    send_stamp(0);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  read_char(fds[0]);
  const std::int64_t interval = interval_for(size, transport == ZmqTransport::kTcp);
  std::int64_t next = steady_now_ns();
  for (int i = 0; i < count; ++i) {
    sleep_until(next);
    next += interval;
    send_stamp(wall_now_ns());
  }
  send_stamp(-1);
  read_char(fds[0]);
  for (int i = 0; i < count; ++i) send_stamp(-3);
  send_stamp(-2);
  std::string line;
  for (char ch; (ch = read_char(fds[0])) != '\n' && ch != 0;) line.push_back(ch);
  if (ipc) {
    int status;
    ::waitpid(pid, &status, 0);
  } else {
    th.join();
  }
  if (!ipc) ::close(fds[1]);
  ::close(fds[0]);
  Row r{transport == ZmqTransport::kInproc ? "baseline zmq inproc copy"
         : transport == ZmqTransport::kIpc  ? "baseline zmq ipc copy"
                                            : "baseline zmq tcp copy",
        size};
  std::istringstream in(line);
  std::int64_t span = 0;
  in >> r.p50_us >> r.p99_us >> r.received >> span;
  r.sent = static_cast<std::size_t>(count);
  r.msgs_per_s = span > 0 && r.received > 1
                     ? static_cast<double>(r.received - 1) / (static_cast<double>(span) / 1e9)
                     : 0;
  r.gb_per_s = r.msgs_per_s * static_cast<double>(size) / 1e9;
  return r;
}

std::string human(std::size_t s) {
  if (s >= (1 << 20)) return std::to_string(s >> 20) + " MB";
  if (s >= 1024) return std::to_string(s >> 10) + " KB";
  return std::to_string(s) + " B";
}

}  // namespace
}  // namespace edgevla::bench

int main(int argc, char** argv) {
  using namespace edgevla::bench;
  Config c;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--spin-us" && i + 1 < argc) c.spin_us = std::atoll(argv[++i]);
    if (a == "--json" && i + 1 < argc) c.json = argv[++i];
    if (a == "--only" && i + 1 < argc) c.only = argv[++i];
    if (a == "--markdown" && i + 1 < argc) c.markdown = argv[++i];
    if (a == "--rounds" && i + 1 < argc) c.rounds = std::max(1, std::atoi(argv[++i]));
    if (a == "--sizes" && i + 1 < argc) {
      c.sizes.clear();
      std::stringstream ss(argv[++i]);
      for (std::string tok; std::getline(ss, tok, ',');) c.sizes.push_back(std::stoull(tok));
    }
  }
  edgevla::logger().set_level(spdlog::level::warn);
  std::vector<Row> rows;
  std::printf("machine: %s\nexecutor spin: %lld us\n\n", machine_description().c_str(), static_cast<long long>(c.spin_us));
  std::printf("%-26s %8s %10s %10s %12s %10s %9s\n", "transport", "payload", "p50 us", "p99 us", "msgs/s", "GB/s", "burst rx/tx");
  for (std::size_t size : c.sizes) {
    static const char* kNames[] = {"memcpy",        "zmq inproc",    "zmq ipc",   "zmq tcp",          "same-process",
                                   "cross-process", "tcp plaintext", "tcp curve", "tcp curve floor"};
    for (int round = 0; round < c.rounds; ++round) {
      for (int k = 0; k < 9; ++k) {
        if (!c.only.empty() && std::string(kNames[k]).find(c.only) == std::string::npos) continue;
        Row r;
        switch (k) {
          case 0: r = run_memcpy(size); break;
          case 1: r = run_zmq(size, ZmqTransport::kInproc); break;
          case 2: r = run_zmq(size, ZmqTransport::kIpc); break;
          case 3: r = run_zmq(size, ZmqTransport::kTcp); break;
          case 4: r = run_inprocess(c, size); break;
          case 5: r = run_cross(c, size, CrossTransport::kIpc); break;
          case 6: r = run_cross(c, size, CrossTransport::kTcpPlaintext); break;
          case 7: r = run_cross(c, size, CrossTransport::kTcpCurve); break;
          case 8: r = run_sodium(size); break;
        }
        if (r.sent == 0) continue;  // not measurable in this build (no libsodium headers)
        std::printf("%-26s %8s %10.1f %10.1f %12.0f %10.2f %4zu/%-4zu\n", r.transport.c_str(), human(size).c_str(), r.p50_us,
                    r.p99_us, r.msgs_per_s, r.gb_per_s, r.received, r.sent);
        std::fflush(stdout);
        rows.push_back(r);
      }
    }
    std::printf("\n");
  }
  // Ratios against the baselines of the same run, and flatness in payload size.
  auto find = [&](const std::string& t, std::size_t size) -> const Row* {
    for (const auto& r : rows) {
      if (r.transport == t && r.size == size) return &r;
    }
    return nullptr;
  };
  auto num = [](const char* format, double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, format, v);
    return std::string(buf);
  };
  std::ostringstream md;
  md << "| payload | same-process p50 / p99 (us) | zmq inproc copy p50 / same-process p50 | memcpy / same-process | cross-process p50 / p99 (us) | zmq ipc copy p50 / cross-process p50 | tcp plaintext p50 (us) | zmq tcp copy p50 / tcp plaintext p50 |\n";
  md << "|---|---|---|---|---|---|---|---|\n";
  for (std::size_t size : c.sizes) {
    const Row* sp = find("edgevla same-process", size);
    const Row* cp = find("edgevla cross-process", size);
    const Row* tcp = find("edgevla tcp plaintext", size);
    const Row* zi = find("baseline zmq inproc copy", size);
    const Row* zc = find("baseline zmq ipc copy", size);
    const Row* zt = find("baseline zmq tcp copy", size);
    const Row* mc = find("baseline memcpy", size);
    md << "| " << human(size) << " | "
       << (sp ? num("%.1f", sp->p50_us) + " / " + num("%.1f", sp->p99_us) : "-") << " | "
       << (sp && zi ? num("%.2f", zi->p50_us / sp->p50_us) : "-") << " | "
       << (sp && mc ? num("%.2f", mc->p50_us / sp->p50_us) : "-") << " | "
       << (cp ? num("%.1f", cp->p50_us) + " / " + num("%.1f", cp->p99_us) : "-") << " | "
       << (cp && zc ? num("%.2f", zc->p50_us / cp->p50_us) : "-") << " | "
       << (tcp ? num("%.0f", tcp->p50_us) : "-") << " | "
       << (tcp && zt ? num("%.2f", zt->p50_us / tcp->p50_us) : "-") << " |\n";
  }
  // The cost of CURVE: the same tcp loopback path encrypted and in plaintext, each round's
  // pair taken one after the other; medians over the rounds.
  bool curve_rows = false;
  for (const Row& r : rows) curve_rows = curve_rows || r.transport == "edgevla tcp curve";
  if (curve_rows) {
    auto median = [](std::vector<double> v) {
      if (v.empty()) return 0.0;
      std::sort(v.begin(), v.end());
      return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
    };
    md << "\ntcp loopback, CURVE (encrypted, authenticated) against plaintext (insecure: true); " << c.rounds
       << " round(s), medians; ratios are medians of each round's pair:\n\n"
       << "| payload | plaintext p50 / p99 (us) | curve p50 / p99 (us) | curve / plaintext p50 | plaintext burst GB/s "
          "| curve burst GB/s | plaintext / curve throughput | sodium seal+open p50 (us) | (curve - plaintext) / "
          "sodium |\n|---|---|---|---|---|---|---|---|---|\n";
    for (std::size_t size : c.sizes) {
      std::vector<const Row*> plain, curve, floor;
      for (const Row& r : rows) {
        if (r.size != size) continue;
        if (r.transport == "edgevla tcp plaintext") plain.push_back(&r);
        if (r.transport == "edgevla tcp curve") curve.push_back(&r);
        if (r.transport == "baseline sodium seal+open") floor.push_back(&r);
      }
      if (plain.empty() || curve.empty()) continue;
      auto field = [&](const std::vector<const Row*>& v, double Row::*f) {
        std::vector<double> out;
        for (const Row* r : v) out.push_back(r->*f);
        return median(out);
      };
      std::vector<double> lat_ratio, tput_ratio;
      for (std::size_t i = 0; i < std::min(plain.size(), curve.size()); ++i) {
        if (plain[i]->p50_us > 0) lat_ratio.push_back(curve[i]->p50_us / plain[i]->p50_us);
        if (curve[i]->gb_per_s > 0) tput_ratio.push_back(plain[i]->gb_per_s / curve[i]->gb_per_s);
      }
      md << "| " << human(size) << " | " << num("%.1f", field(plain, &Row::p50_us)) << " / "
         << num("%.1f", field(plain, &Row::p99_us)) << " | " << num("%.1f", field(curve, &Row::p50_us)) << " / "
         << num("%.1f", field(curve, &Row::p99_us)) << " | " << num("%.2f", median(lat_ratio)) << " | "
         << num("%.3f", field(plain, &Row::gb_per_s)) << " | " << num("%.3f", field(curve, &Row::gb_per_s)) << " | "
         << num("%.2f", median(tput_ratio)) << " | ";
      if (floor.empty()) {
        md << "- | - |\n";
      } else {
        const double sodium = field(floor, &Row::p50_us);
        md << num("%.1f", sodium) << " | "
           << num("%.2f", (field(curve, &Row::p50_us) - field(plain, &Row::p50_us)) / sodium) << " |\n";
      }
    }
  }
  for (const char* t : {"edgevla same-process", "edgevla cross-process"}) {
    const Row* small = find(t, c.sizes.front());
    const Row* large = find(t, c.sizes.back());
    if (small && large) {
      char line[256];
      std::snprintf(line, sizeof line, "\n%s: p50 at %s is %.2fx the p50 at %s (flat means <= 2x).\n", t,
                    human(c.sizes.back()).c_str(), large->p50_us / small->p50_us, human(c.sizes.front()).c_str());
      md << line;
    }
  }
  std::printf("\n%s\n", md.str().c_str());
  if (!c.markdown.empty()) {
    std::FILE* f = std::fopen(c.markdown.c_str(), "w");
    std::fprintf(f, "machine: %s  \nexecutor/bus spin: %lld us\n\n%s", machine_description().c_str(),
                 static_cast<long long>(c.spin_us), md.str().c_str());
    std::fclose(f);
  }
  if (!c.json.empty()) {
    std::FILE* f = std::fopen(c.json.c_str(), "w");
    std::fprintf(f, "{\n  \"machine\": \"%s\",\n  \"spin_us\": %lld,\n  \"rows\": [\n", machine_description().c_str(),
                 static_cast<long long>(c.spin_us));
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      std::fprintf(f, "    {\"transport\": \"%s\", \"bytes\": %zu, \"p50_us\": %.2f, \"p99_us\": %.2f, \"msgs_per_s\": %.1f, \"gb_per_s\": %.3f, \"received\": %zu, \"sent\": %zu}%s\n",
                   r.transport.c_str(), r.size, r.p50_us, r.p99_us, r.msgs_per_s, r.gb_per_s, r.received, r.sent,
                   i + 1 < rows.size() ? "," : "");
    }
    std::fprintf(f, "  ]\n}\n");
    std::fclose(f);
  }
  return 0;
}
