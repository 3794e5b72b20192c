// runtime/model/row_pass.hpp: the AVX2 shuffle form of a pass along rows against its pixel form
// on random passes (tap counts 1-9, up- and downscales, 1 / 3 / 4 source bytes a pixel, every
// channel map, integer and f32 weights), over source rows allocated to their exact size, so a
// load past the end shows under AddressSanitizer (scripts/sanitize) and a wrong byte here.
#include "runtime/model/row_pass.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <vector>

namespace edgevla::model {
namespace {

// A pass of `out` outputs over a row of `in` pixels: output x starts at floor(x * in / out)
// shifted by up to `jitter` (clamped into the row), count random in [1, taps], weights random.
template <class W>
RowTaps<W> random_pass(std::mt19937& rng, int in, int out, int taps, int channels, std::array<int, 3> map) {
  RowTaps<W> t = row_taps<W>(out, taps, channels, map);
  std::uniform_int_distribution<int> count(1, taps), jitter(-1, 1);
  for (int x = 0; x < out; ++x) {
    const auto xi = static_cast<std::size_t>(x);
    t.count[xi] = count(rng);
    const int s = static_cast<int>(static_cast<long>(x) * in / out) + jitter(rng);
    t.start[xi] = std::clamp(s, 0, in - t.count[xi]);
    for (int q = 0; q < t.count[xi]; ++q) {
      const auto at = xi * static_cast<std::size_t>(taps) + static_cast<std::size_t>(q);
      if constexpr (std::is_same_v<W, float>) {
        t.k[at] = std::uniform_real_distribution<float>(-0.5f, 1.0f)(rng);
      } else {
        // |sum| < 2^31 at 9 taps of 255: no overflow in either form.
        t.k[at] = std::uniform_int_distribution<std::int32_t>(-(1 << 18), 1 << 19)(rng);
      }
    }
  }
  plan_blocks(t);
  return t;
}

template <class W>
void check_random_passes(std::uint32_t seed) {
  std::mt19937 rng(seed);
  int shuffled = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const int channels = std::array<int, 3>{1, 3, 4}[static_cast<std::size_t>(trial % 3)];
    std::uniform_int_distribution<int> channel(0, channels - 1);
    const std::array<int, 3> map{channel(rng), channel(rng), channel(rng)};
    const int taps = std::uniform_int_distribution<int>(1, 9)(rng);
    const int in = std::uniform_int_distribution<int>(taps, 400)(rng);
    const int out = std::uniform_int_distribution<int>(1, 2 * in)(rng);
    const RowTaps<W> t = random_pass<W>(rng, in, out, taps, channels, map);
    // The row alone in an allocation of its exact size: the last blocks' loads must stop there.
    const auto bytes = static_cast<std::size_t>(in) * static_cast<std::size_t>(channels);
    auto row = std::make_unique<std::uint8_t[]>(bytes);
    for (std::size_t i = 0; i < bytes; ++i) row[i] = static_cast<std::uint8_t>(rng());
    const W init = static_cast<W>(trial);
    std::vector<W> pixel(static_cast<std::size_t>(out) * 3), shuffle(pixel.size());
    const bool was = use_shuffle_passes(false);
    row_pass(t, row.get(), bytes, init, pixel.data());
    if (use_shuffle_passes(true)) {
      row_pass(t, row.get(), bytes, init, shuffle.data());
      shuffled += t.pays ? 1 : 0;
      ASSERT_EQ(std::memcmp(pixel.data(), shuffle.data(), pixel.size() * sizeof(W)), 0)
          << "trial " << trial << ": " << in << " -> " << out << " pixels, " << taps << " taps, " << channels
          << " bytes a pixel, map " << map[0] << map[1] << map[2];
    }
    use_shuffle_passes(was);
    // The pixel form against the definition, for one output value in three.
    for (std::size_t e = 0; e < pixel.size(); e += 3) {
      const std::size_t x = e / 3;
      W want = init;
      for (int q = 0; q < t.count[x]; ++q) {
        const std::size_t at = (static_cast<std::size_t>(t.start[x]) + static_cast<std::size_t>(q)) *
                                   static_cast<std::size_t>(channels) + static_cast<std::size_t>(map[e % 3]);
        want = want + static_cast<W>(row[at]) * t.k[x * static_cast<std::size_t>(taps) + static_cast<std::size_t>(q)];
      }
      ASSERT_EQ(pixel[e], want) << "trial " << trial << " element " << e;
    }
  }
  // Where the CPU has a shuffle form the trials must have run it, not only its fallback.
  if (use_shuffle_passes(true)) {
    EXPECT_GT(shuffled, 100);
  }
}

TEST(RowPass, ShuffleAndPixelFormsAgreeOnIntegerPasses) { check_random_passes<std::int32_t>(11); }

TEST(RowPass, ShuffleAndPixelFormsAgreeOnFloatPasses) { check_random_passes<float>(12); }

}  // namespace
}  // namespace edgevla::model
