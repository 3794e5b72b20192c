// The layout of one fuzz input, shared by the harness (envelope_fuzzer.cpp) and the seed
// corpus generator (make_corpus.cpp) so that generated seeds split the way the harness reads
// them:
//
//   byte 0         flags: bits 0-2  number of tensor frames N (0..7)
//                         bits 3-4  shm resolver mode (see ResolverMode)
//                         bit  5    place every inline frame one byte off alignment
//   bytes 1..2N    N little-endian u16 frame lengths (fewer when the input is short)
//   the rest       the envelope, then the N frames back to back at the end
//
// Lengths that do not fit are clamped, first frame first, so every input splits somehow.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace edgevla::fuzz {

inline constexpr std::size_t kMaxFrames = 7;

enum class ResolverMode : std::uint8_t {
  kNone = 0,       // no resolver: shm descriptors must fail with failed_precondition
  kError = 1,      // the resolver fails (segment gone, generation recycled)
  kExact = 2,      // a heap buffer of exactly loc.size bytes (up to a cap)
  kMisbehave = 3,  // a buffer one byte short or long, or a null buffer
};

struct Split {
  ResolverMode resolver = ResolverMode::kNone;
  bool misalign = false;
  std::span<const std::uint8_t> envelope;
  std::vector<std::span<const std::uint8_t>> frames;
};

inline Split split_input(std::span<const std::uint8_t> in) {
  Split s;
  if (in.empty()) return s;
  const std::uint8_t flags = in[0];
  s.resolver = static_cast<ResolverMode>((flags >> 3) & 3u);
  s.misalign = (flags & 0x20u) != 0;
  in = in.subspan(1);
  const std::size_t n = std::min<std::size_t>(flags & 7u, in.size() / 2);
  std::vector<std::size_t> lengths(n);
  for (std::size_t i = 0; i < n; ++i) {
    lengths[i] = static_cast<std::size_t>(in[2 * i]) | (static_cast<std::size_t>(in[2 * i + 1]) << 8);
  }
  in = in.subspan(2 * n);
  std::size_t left = in.size();
  for (auto& len : lengths) {
    len = std::min(len, left);
    left -= len;
  }
  s.envelope = in.first(left);
  std::size_t pos = left;
  for (auto len : lengths) {
    s.frames.push_back(in.subspan(pos, len));
    pos += len;
  }
  return s;
}

// The inverse of split_input, for seeds. Frames longer than 65535 bytes or more than
// kMaxFrames frames cannot be expressed; the caller keeps seeds small.
inline std::vector<std::uint8_t> join_input(ResolverMode resolver, bool misalign,
                                            std::string_view envelope,
                                            const std::vector<std::vector<std::uint8_t>>& frames) {
  std::vector<std::uint8_t> out;
  out.push_back(static_cast<std::uint8_t>((frames.size() & 7u) |
                                          (static_cast<unsigned>(resolver) << 3) |
                                          (misalign ? 0x20u : 0u)));
  for (const auto& f : frames) {
    out.push_back(static_cast<std::uint8_t>(f.size() & 0xffu));
    out.push_back(static_cast<std::uint8_t>((f.size() >> 8) & 0xffu));
  }
  out.insert(out.end(), envelope.begin(), envelope.end());
  for (const auto& f : frames) out.insert(out.end(), f.begin(), f.end());
  return out;
}

}  // namespace edgevla::fuzz
