// Who may exchange data with the bus: ZAP answers for its ZeroMQ ipc sockets, and the same
// credential check for peers that deliver into its ring (see bus_io.hpp).
#include <sys/stat.h>
#include <unistd.h>

#include <zmq_addon.hpp>

#include "runtime/bus/bus_io.hpp"
#include "runtime/bus/peer_credentials.hpp"

namespace edgevla {
namespace {

// Refused peers are each warned about once; past this many, further ones share one
// rate-limited line (a flood of short-lived processes must not grow the set for ever).
constexpr std::size_t kMaxRefusedPeersNamed = 256;

}  // namespace

bool BusIo::ring_peer_allowed(const RegistryEntry& e) {
  struct stat st {};
  if (::stat(("/proc/" + std::to_string(e.pid)).c_str(), &st) != 0) return false;  // gone
  const PeerCredentials peer{static_cast<std::uint32_t>(st.st_uid), static_cast<std::uint32_t>(st.st_gid), e.pid};
  const auto own_uid = static_cast<std::uint32_t>(::geteuid());
  if (peer_allowed(peer, own_uid, options_.allowed_gids)) return true;
  counters_.peers_refused.add();
  const std::string key = "ring-peer:" + std::to_string(peer.uid) + ":" + std::to_string(e.pid);
  if (refused_peers_.size() < kMaxRefusedPeersNamed && refused_peers_.insert(key).second) {
    rate_log_.warn(key, "refused to take data from " + e.bus_id + ": it is served by uid " + std::to_string(peer.uid) +
                            " gid " + std::to_string(peer.gid) + " pid " + std::to_string(e.pid) + " (allowed: uid " +
                            std::to_string(own_uid) + "); run it as uid " + std::to_string(own_uid));
  }
  return false;
}
// Who is on the other end of an ipc connection is checked through ZAP: with a ZAP domain set
// on a socket, libzmq (4.3) asks the context's handler about every connection of it, on the
// binding and on the connecting side alike, for the NULL mechanism too, and for ipc it ends
// the request's address with ":<uid>:<gid>:<pid>" from SO_PEERCRED of that connection. A
// refused connection is closed before the handshake completes: no subscription, request or
// message crosses it. (ZMQ_IPC_FILTER_UID/GID would refuse silently, only on the binding side,
// and look groups up with getgrgid from libzmq's own thread; it is also deprecated.)
void BusIo::serve_zap() {
  for (int i = 0; i < 64; ++i) {  // bounded, like receive()
    std::vector<zmq::message_t> req;
    try {
      if (!zmq::recv_multipart(zap_, std::back_inserter(req), zmq::recv_flags::dontwait)) return;
    } catch (const zmq::error_t& e) {
      rate_log_.warn("zap", std::string("ZAP request could not be read: ") + e.what());
      return;
    }
    // ZAP 1.0 (RFC 27): version, request id, domain, address, routing id, mechanism,
    // credentials. Every request is answered, or the peer's handshake hangs.
    const bool tcp = req.size() >= 6 && req[2].to_string_view() == kZapTcp;
    const bool ok =
        req.size() >= 6 && req[0].to_string_view() == "1.0" &&
        (tcp ? admit_tcp_client(req[5].to_string_view(), req.size() > 6 ? req[6].to_string_view() : std::string_view(),
                                req[3].to_string_view())
             : admit_peer(req[2].to_string_view(), req[3].to_string_view()));
    const std::string_view request_id =
        req.size() > 1 ? req[1].to_string_view() : std::string_view();
    constexpr auto kMore = zmq::send_flags::sndmore;
    try {
      zap_.send(zmq::str_buffer("1.0"), kMore);
      zap_.send(zmq::buffer(request_id), kMore);
      zap_.send(ok ? zmq::str_buffer("200") : zmq::str_buffer("400"), kMore);
      zap_.send(ok    ? zmq::str_buffer("OK")
                : tcp ? zmq::str_buffer("client key not allowed")
                      : zmq::str_buffer("uid and gid not allowed"),
                kMore);
      zap_.send(zmq::str_buffer(""), kMore);                  // user id
      zap_.send(zmq::str_buffer(""), zmq::send_flags::none);  // metadata
    } catch (const zmq::error_t& e) {
      rate_log_.warn("zap", std::string("ZAP reply could not be sent: ") + e.what());
      return;
    }
  }
}
bool BusIo::admit_peer(std::string_view domain, std::string_view address) {
  const bool ours_listening = domain == kZapData || domain == kZapControl;
  if (!ours_listening && domain != kZapSubscribe) return true;  // not one of our ipc sockets
  const auto own_uid = static_cast<std::uint32_t>(::geteuid());
  const auto peer = parse_zap_address(address);
  if (peer && peer_allowed(*peer, own_uid, options_.allowed_gids)) return true;
  counters_.peers_refused.add();
  if (!peer) {
    rate_log_.warn("peer-unknown",
                   "refused an ipc connection whose credentials the kernel did not report (peer '" +
                       std::string(address) + "')");
    return false;
  }
  const std::string uid = std::to_string(peer->uid), gid = std::to_string(peer->gid);
  const std::string who = "uid " + uid + " gid " + gid + " pid " + std::to_string(peer->pid);
  const std::string key =
      std::string(domain) + ":" + uid + ":" + gid + ":" + std::to_string(peer->pid);
  const bool named = refused_peers_.size() < kMaxRefusedPeersNamed || refused_peers_.contains(key);
  // Said once already: the peer is retrying.
  if (named && !refused_peers_.insert(key).second) return false;
  std::string allowed = "uid " + std::to_string(own_uid);
  for (std::uint32_t g : options_.allowed_gids) allowed += ", gid " + std::to_string(g);
  const std::string fix = "run it as uid " + std::to_string(own_uid) + " or add its group (" + gid +
                          ") to allowed_groups";
  std::string message;
  if (ours_listening) {
    const std::string& endpoint = domain == kZapData ? self_.data_endpoint : self_.control_endpoint;
    message = "refused a connection to " + endpoint + " from " + who + " (allowed: " + allowed +
              "); " + fix;
  } else {
    // The SO_PEERCRED of a connecting socket is the listener's: the publishing process.
    std::string endpoint = "an ipc data endpoint";
    for (const auto& [id, ep] : connected_) {
      if (ep.second == peer->pid) endpoint = ep.first;
    }
    message = "refused to take data from " + endpoint + ": it is served by " + who +
              " (allowed: " + allowed + "); " + fix;
  }
  rate_log_.warn(named ? "peer:" + key : std::string("peers-refused"), message);
  return false;
}

}  // namespace edgevla
