#include "runtime/bus/peer_credentials.hpp"

#include <algorithm>
#include <charconv>

namespace edgevla {

std::optional<PeerCredentials> parse_zap_address(std::string_view address) {
  // Taken from the end: a host part may itself hold colons (an IPv6 address).
  std::uint32_t fields[3] = {};
  for (int i = 2; i >= 0; --i) {
    const std::size_t colon = address.rfind(':');
    if (colon == std::string_view::npos) return std::nullopt;
    const std::string_view digits = address.substr(colon + 1);
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), fields[i]);
    if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size())
      return std::nullopt;
    address = address.substr(0, colon);
  }
  return PeerCredentials{fields[0], fields[1], fields[2]};
}

bool peer_allowed(const PeerCredentials& peer, std::uint32_t own_uid,
                  std::span<const std::uint32_t> allowed_gids) {
  return peer.uid == own_uid || std::ranges::find(allowed_gids, peer.gid) != allowed_gids.end();
}

}  // namespace edgevla
