// Who is on the other end of a bus's ipc connection, and whether the bus lets them in.
// libzmq asks the bus (through ZAP, see BusIo::serve_zap) about every connection of a socket
// that has a ZAP domain; for ipc it passes the kernel's SO_PEERCRED of the other end in the
// request's address.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace edgevla {

struct PeerCredentials {
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;  // effective, primary gid: SO_PEERCRED has no supplementary groups
  std::uint32_t pid = 0;
};

// The credentials at the end of a ZAP request's address, "<host>:<uid>:<gid>:<pid>" (what
// libzmq 4.x writes for ipc); nullopt when the address has none. Only for requests from ipc
// sockets: a tcp peer's IPv6 address ("2001:db8::1:2:3") can end in three numbers too.
std::optional<PeerCredentials> parse_zap_address(std::string_view address);

// The bus's own uid always; another uid only when its gid is one of `allowed_gids`.
bool peer_allowed(const PeerCredentials& peer, std::uint32_t own_uid,
                  std::span<const std::uint32_t> allowed_gids);

}  // namespace edgevla
