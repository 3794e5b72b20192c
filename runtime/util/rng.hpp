// A counter-based random generator: every draw is a pure function of (seed, counter), so a
// node's draws can be replayed from any point by restoring those two numbers (which travel in
// the header of every message the node publishes). Specified exactly, so other
// implementations (NumPy references) reproduce it:
//   draw(seed, c)  = mix(seed + (c + 1) * 0x9E3779B97F4A7C15), counter incremented per draw
//   mix(z)         = z ^= z >> 30; z *= 0xBF58476D1CE4E5B9; z ^= z >> 27; z *= 0x94D049BB133111EB;
//                    z ^= z >> 31   (all mod 2^64)
//   uniform()      = (draw >> 11) * 2^-53                 in [0, 1)
//   normal()       = sqrt(-2 ln(1 - u1)) * cos(2 pi u2)    two draws, u1 first
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>
#include <span>

#include "msgs/message.hpp"

namespace edgevla {

class Rng {
 public:
  Rng() = default;
  Rng(std::uint64_t seed, std::uint64_t counter) : seed_(seed), counter_(counter) {}

  std::uint64_t next_u64() {
    std::uint64_t z = seed_ + (++counter_) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }
  double normal() {
    const double u1 = uniform();
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log1p(-u1)) * std::cos(2.0 * std::numbers::pi * u2);
  }
  void fill_normal(std::span<float> out) {
    for (float& v : out) v = static_cast<float>(normal());
  }

  RngState state() const { return {seed_, counter_}; }
  void set_state(const RngState& s) {
    seed_ = s.seed;
    counter_ = s.counter;
  }

 private:
  std::uint64_t seed_ = 0;
  std::uint64_t counter_ = 0;
};

}  // namespace edgevla
