// The bus's tcp side: where it listens, ZeroMQ CURVE on every tcp socket, the allow list of
// client keys (answered through the bus's ZAP handler) and the handshake and authentication
// failures libzmq reports through socket monitors.
//
// CURVE in one paragraph: the listener (our XPUB) is a CURVE server with this process's secret
// key; a connecting process (our SUB) must know the listener's public key (`server_key`) and
// shows its own, which the listener's ZAP handler looks up in `allowed_keys`. Every frame after
// the handshake is encrypted and authenticated; one that fails authentication makes libzmq
// drop the connection, so a tampered message is never delivered. libzmq does not reconnect
// after a protocol error (it would after a network error), so the bus does: 100 ms after a
// rejected frame, 2 s after a refused or failed handshake (the other side may be fixed and
// restarted meanwhile), twice as long after each further failure in a row, at most 30 s.
#include <zmq.h>

#include <algorithm>
#include <cstring>
#include <zmq_addon.hpp>

#include "runtime/bus/bus_io.hpp"
#include "runtime/util/clock.hpp"

namespace edgevla {
namespace {

// The monitor endpoints of the two tcp sockets (inproc: names are per ZeroMQ context, and
// every bus has its own context).
constexpr const char* kListenMonitor = "inproc://edgevla.tcp.listen.monitor";
constexpr const char* kPeersMonitor = "inproc://edgevla.tcp.peers.monitor";
constexpr int kMonitorEvents = ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                               ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                               ZMQ_EVENT_HANDSHAKE_FAILED_AUTH | ZMQ_EVENT_HANDSHAKE_SUCCEEDED;

// Reconnecting after a protocol error: the first time after these, then twice as long after
// each further failure in a row (a peer that stays wrong is retried, and logged, every 30 s).
constexpr std::int64_t kReconnectAfterRejectNs = 100'000'000;
constexpr std::int64_t kReconnectAfterRefusalNs = 2'000'000'000;
constexpr std::int64_t kReconnectMaxNs = 30'000'000'000;

constexpr std::string_view kListenForms =
    "give a port (7447, or * for any free port), which listens on 127.0.0.1 only, or "
    "tcp://HOST:PORT to listen on HOST (e.g. tcp://192.168.1.20:7447)";

bool all_digits(std::string_view s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string_view::npos;
}

bool valid_port(std::string_view s) {
  if (s == "*") return true;
  if (!all_digits(s) || s.size() > 5) return false;
  const int port = std::stoi(std::string(s));
  return port >= 1 && port <= 65535;
}

std::string z85_to_binary(const std::string& z85) {
  std::string out(32, '\0');
  if (zmq_z85_decode(reinterpret_cast<std::uint8_t*>(out.data()), z85.c_str()) == nullptr)
    return {};
  return out;
}

std::string binary_to_z85(std::string_view bin) {
  if (bin.size() != 32) return "(" + std::to_string(bin.size()) + "-byte credential)";
  char z85[kCurveKeyZ85Chars + 1] = {};
  zmq_z85_encode(z85, reinterpret_cast<const std::uint8_t*>(bin.data()), bin.size());
  return z85;
}

// Attaches a PAIR socket that receives `socket`'s handshake events.
zmq::socket_t monitor(zmq::context_t& ctx, zmq::socket_t& socket, const char* endpoint) {
  if (zmq_socket_monitor(socket.handle(), endpoint, kMonitorEvents) != 0) throw zmq::error_t();
  zmq::socket_t pair(ctx, zmq::socket_type::pair);
  pair.set(zmq::sockopt::linger, 0);
  pair.connect(endpoint);
  return pair;
}

}  // namespace

Expected<std::string> tcp_bind_endpoint(std::string_view listen) {
  if (listen == "*" || all_digits(listen)) {
    if (!valid_port(listen)) {
      return invalid_argument("tcp listen '" + std::string(listen) +
                              "': port out of range 1-65535; " + std::string(kListenForms));
    }
    return "tcp://127.0.0.1:" + std::string(listen);
  }
  if (!listen.starts_with("tcp://")) {
    return invalid_argument("tcp listen '" + std::string(listen) +
                            "': " + std::string(kListenForms));
  }
  const std::string_view rest = listen.substr(6);
  const auto colon = rest.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || !valid_port(rest.substr(colon + 1))) {
    return invalid_argument("tcp listen '" + std::string(listen) + "' names no host and port; " +
                            std::string(kListenForms));
  }
  return std::string(listen);
}

Status check_tcp_options(const TcpOptions& o) {
  if (!o.listen.empty()) EDGEVLA_RETURN_IF_ERROR(tcp_bind_endpoint(o.listen).status());
  for (const TcpPeer& p : o.peers) {
    const auto colon = p.endpoint.rfind(':');
    if (!p.endpoint.starts_with("tcp://") || colon == std::string::npos || colon < 7 ||
        !all_digits(p.endpoint.substr(colon + 1))) {
      return invalid_argument("tcp peer '" + p.endpoint +
                              "' is not an endpoint: write tcp://HOST:PORT");
    }
  }
  if (!o.enabled()) return Status::ok();
  bool any_key = !o.key.empty() || !o.allowed_keys.empty();
  for (const TcpPeer& p : o.peers) any_key = any_key || !p.server_key.empty();
  if (o.insecure) {
    if (any_key) {
      return invalid_argument(
          "tcp has both 'insecure: true' and keys: drop 'insecure' to encrypt with the keys, or "
          "drop the keys for plaintext");
    }
    return Status::ok();
  }
  EDGEVLA_RETURN_IF_ERROR(check_curve_available());
  if (o.key.secret_key.empty()) {
    return invalid_argument(
        "tcp is encrypted and needs this process's key pair: set the tcp section's 'secret_key' to "
        "a file written by `edgevla keys generate --out keys/NAME` (or, for plaintext tcp, "
        "'insecure: true')");
  }
  if (!is_curve_key(o.key.secret_key) || !is_curve_key(o.key.public_key)) {
    return invalid_argument(
        "tcp key pair is not two z85 CURVE keys; write one with `edgevla keys generate`");
  }
  if (!o.listen.empty() && o.allowed_keys.empty()) {
    return invalid_argument(
        "tcp listen '" + o.listen +
        "' has no 'allowed_keys': no process could subscribe; list the public key files "
        "of the processes that may (allowed_keys: [keys/laptop.public])");
  }
  for (std::size_t i = 0; i < o.allowed_keys.size(); ++i) {
    if (!is_curve_key(o.allowed_keys[i])) {
      return invalid_argument("tcp allowed key #" + std::to_string(i + 1) +
                              " is not a z85 CURVE public key; name a .public file written by "
                              "`edgevla keys generate`");
    }
  }
  for (const TcpPeer& p : o.peers) {
    if (p.server_key.empty()) {
      return invalid_argument(
          "tcp peer '" + p.endpoint +
          "' has no 'server_key': name the public key file of the process listening there "
          "(peers: [{endpoint: " +
          p.endpoint + ", server_key: keys/NAME.public}])");
    }
    if (!is_curve_key(p.server_key)) {
      return invalid_argument("tcp peer '" + p.endpoint +
                              "': server_key is not a z85 CURVE public key");
    }
  }
  return Status::ok();
}

Status BusIo::open_tcp() {
  const TcpOptions& t = options_.tcp;
  EDGEVLA_RETURN_IF_ERROR(check_tcp_options(t));
  std::string bind;
  if (!t.listen.empty()) {
    EDGEVLA_ASSIGN_OR_RETURN(bind, tcp_bind_endpoint(t.listen));
  }
  for (const std::string& k : t.allowed_keys) tcp_allowed_.insert(z85_to_binary(k));
  const bool curve = t.enabled() && !t.insecure;
  try {
    sub_tcp_ = zmq::socket_t(ctx_, zmq::socket_type::sub);
    sub_tcp_.set(zmq::sockopt::linger, 0);
    if (!t.enabled()) return Status::ok();
    if (!bind.empty()) {
      pub_tcp_ = zmq::socket_t(ctx_, zmq::socket_type::xpub);
      pub_tcp_.set(zmq::sockopt::linger, 0);
      pub_tcp_.set(zmq::sockopt::xpub_verboser, 1);
      if (curve) {
        pub_tcp_.set(zmq::sockopt::curve_server, 1);
        pub_tcp_.set(zmq::sockopt::curve_secretkey, t.key.secret_key);
        pub_tcp_.set(zmq::sockopt::zap_domain, std::string(kZapTcp));
      }
      listen_monitor_ = monitor(ctx_, pub_tcp_, kListenMonitor);
      pub_tcp_.bind(bind);
      tcp_endpoint_ = pub_tcp_.get(zmq::sockopt::last_endpoint);
      self_.tcp_endpoint = tcp_endpoint_;
    }
    if (curve) {
      sub_tcp_.set(zmq::sockopt::curve_publickey, t.key.public_key);
      sub_tcp_.set(zmq::sockopt::curve_secretkey, t.key.secret_key);
    }
    peers_monitor_ = monitor(ctx_, sub_tcp_, kPeersMonitor);
    for (const TcpPeer& p : t.peers) {
      // Read when the connection is made: each peer is held to its own server key.
      if (curve) sub_tcp_.set(zmq::sockopt::curve_serverkey, p.server_key);
      sub_tcp_.connect(p.endpoint);
    }
  } catch (const zmq::error_t& e) {
    return unavailable(std::string("tcp: ") + e.what() +
                       (bind.empty() ? "" : " (listening on '" + bind + "')"));
  }
  if (t.insecure) {
    std::string exposure;
    if (!tcp_endpoint_.empty())
      exposure = "anyone who reaches " + tcp_endpoint_ + " reads every topic it publishes";
    if (!t.peers.empty()) {
      exposure += std::string(exposure.empty() ? "" : "; ") + "whoever is on the path to its " +
                  std::to_string(t.peers.size()) +
                  " tcp peer(s) reads and can alter what it receives";
    }
    logger().warn(
        "bus {}: tcp is plaintext and unauthenticated (insecure: true): {}; give the group's tcp "
        "section keys (`edgevla keys generate`) to encrypt it",
        bus_id_, exposure);
  }
  return Status::ok();
}

bool BusIo::admit_tcp_client(std::string_view mechanism, std::string_view credential,
                             std::string_view address) {
  if (mechanism == "CURVE" && tcp_allowed_.contains(std::string(credential))) return true;
  counters_.tcp_keys_refused.add();
  const std::string key = binary_to_z85(credential);
  // One rate-limit key for all: a client trying key after key must not grow the limiter's map.
  rate_log_.warn("tcp-key-refused",
                 "refused a tcp client from " + std::string(address) + " on " + tcp_endpoint_ +
                     ": its key " + key +
                     " is not in allowed_keys; add that process's .public file to the tcp "
                     "section's allowed_keys if it may subscribe");
  return false;
}

void BusIo::serve_tcp_monitor(zmq::socket_t& socket, bool listener) {
  for (int i = 0; i < 64; ++i) {  // bounded, like receive()
    std::vector<zmq::message_t> ev;
    try {
      if (!zmq::recv_multipart(socket, std::back_inserter(ev), zmq::recv_flags::dontwait)) return;
    } catch (const zmq::error_t&) {
      return;
    }
    if (ev.size() < 2 || ev[0].size() < 6) continue;
    std::uint16_t event = 0;
    std::uint32_t value = 0;
    std::memcpy(&event, ev[0].data(), sizeof event);
    std::memcpy(&value, static_cast<const char*>(ev[0].data()) + 2, sizeof value);
    const std::string endpoint = ev[1].to_string();
    const std::string where = listener ? "a client of " + endpoint : "the tcp peer at " + endpoint;
    if (event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {
      if (!listener) tcp_failures_.erase(endpoint);
      continue;
    }
    // Protocol errors end a connecting session for good; NO_DETAIL ones libzmq retries itself.
    if (!listener && event != ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL) {
      const bool rejected_frame = event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL &&
                                  (value == ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC ||
                                   value == ZMQ_PROTOCOL_ERROR_ZMTP_INVALID_SEQUENCE);
      const int failures = std::min(++tcp_failures_[endpoint], 16);
      const std::int64_t base = rejected_frame ? kReconnectAfterRejectNs : kReconnectAfterRefusalNs;
      schedule_tcp_reconnect(endpoint, std::min(base << (failures - 1), kReconnectMaxNs));
    }
    const std::string ours = options_.tcp.insecure ? "plaintext (insecure: true)" : "CURVE (keys)";
    if (event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) {
      if (listener) continue;  // our own ZAP refusal, counted there
      counters_.tcp_handshakes_failed.add();
      rate_log_.warn("tcp-refused:" + endpoint,
                     "the tcp peer at " + endpoint + " refused this process's key " +
                         options_.tcp.key.public_key + " (status " + std::to_string(value) +
                         "): add this process's .public file to that process's allowed_keys");
    } else if (event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL &&
               (value == ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC ||
                value == ZMQ_PROTOCOL_ERROR_ZMTP_INVALID_SEQUENCE)) {
      counters_.tcp_frames_rejected.add();
      rate_log_.warn(
          "tcp-frame:" + endpoint,
          "a frame from " + where +
              " failed CURVE authentication (tampered or corrupted in transit" +
              (listener ? std::string(", or sealed for another server key: check that process's "
                                      "server_key")
                        : std::string()) +
              "); dropped with its connection, which is re-established");
    } else if (event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL &&
               value == ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH) {
      counters_.tcp_handshakes_failed.add();
      rate_log_.warn(
          "tcp-mechanism:" + endpoint,
          "refused " + where + ": it speaks " +
              (options_.tcp.insecure ? std::string("CURVE") : std::string("plaintext (no key)")) +
              ", this process " + ours + "; give both ends the same kind of tcp section");
    } else if (event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL ||
               event == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL) {
      counters_.tcp_handshakes_failed.add();
      const std::string detail = event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL
                                     ? "ZeroMQ protocol error " + std::to_string(value)
                                     : std::string(zmq_strerror(static_cast<int>(value)));
      rate_log_.warn(
          "tcp-handshake:" + endpoint,
          "tcp handshake with " + where + " failed (" + detail + "); " +
              (listener
                   ? std::string("it may hold another server key than this process's public key")
                   : std::string("check that its server_key is the public key of the process "
                                 "listening there, and that it lists this process's key")));
    }
  }
}

void BusIo::schedule_tcp_reconnect(const std::string& endpoint, std::int64_t delay_ns) {
  // The monitor names the address it connected to, which is the configured endpoint unless a
  // host name was resolved: then every peer is reconnected (a rare, brief interruption).
  std::vector<std::string> targets;
  for (const TcpPeer& p : options_.tcp.peers) {
    if (p.endpoint == endpoint) targets = {p.endpoint};
  }
  if (targets.empty()) {
    for (const TcpPeer& p : options_.tcp.peers) targets.push_back(p.endpoint);
  }
  const std::int64_t due = steady_now_ns() + delay_ns;
  for (const std::string& t : targets) {
    auto [it, inserted] = tcp_reconnects_.emplace(t, due);
    if (!inserted) it->second = std::min(it->second, due);
  }
}

void BusIo::reconnect_tcp_peers() {
  if (tcp_reconnects_.empty()) return;
  const std::int64_t now = steady_now_ns();
  for (auto it = tcp_reconnects_.begin(); it != tcp_reconnects_.end();) {
    if (it->second > now) {
      ++it;
      continue;
    }
    for (const TcpPeer& p : options_.tcp.peers) {
      if (p.endpoint != it->first) continue;
      try {
        sub_tcp_.disconnect(p.endpoint);
      } catch (const zmq::error_t&) {
        // Already gone with its session.
      }
      try {
        if (!options_.tcp.insecure) sub_tcp_.set(zmq::sockopt::curve_serverkey, p.server_key);
        sub_tcp_.connect(p.endpoint);
      } catch (const zmq::error_t& e) {
        rate_log_.warn("tcp-reconnect:" + p.endpoint,
                       "cannot reconnect to tcp peer " + p.endpoint + ": " + e.what());
      }
    }
    it = tcp_reconnects_.erase(it);
  }
}

void BusIo::emit_tcp_stats(YAML::Emitter& out) const {
  auto kv = [&out](const char* k, std::uint64_t v) { out << YAML::Key << k << YAML::Value << v; };
  kv("tcp_keys_refused", counters_.tcp_keys_refused.get());
  kv("tcp_handshakes_failed", counters_.tcp_handshakes_failed.get());
  kv("tcp_frames_rejected", counters_.tcp_frames_rejected.get());
}

}  // namespace edgevla
