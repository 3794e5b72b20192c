// Image resampling passes along rows, shared by the families' image code (pi0's resize with
// padding, image_ops.cpp; GR00T's frame pipeline, groot/image_pipeline.cpp).
//
// A pass along rows: output pixel x sums, channel by channel, the source pixels start[x] ..
// start[x] + count[x] - 1 weighted by k[x][q], onto `init`, in that order: in 32-bit integers
// (PIL / Pillow's fixed-point resamplers, OpenCV's enlarging INTER_AREA) or in f32, each product
// rounded and then added (OpenCV's float area path; a file that instantiates the f32 form is
// compiled without fused multiply-add). Weights past an output's own count are 0, which adds
// nothing to an integer sum and +0 to a float one, so a pass may run every output over `taps`.
// The source has `channels` bytes a pixel; output channel c reads source channel map[c] (an RGB
// row out of RGB, BGR, RGBA or mono); the output is 3 values a pixel.
//
// Where the CPU has AVX2 (and on every aarch64 CPU, by NEON), 8 output values (elements) at a time: for each tap, one 16-byte load
// (two, one per half of 4, where the 8 do not fit one) at the block's first source pixel shifted
// by the tap, and one byte shuffle that puts each element's source byte in place (the same for
// every tap, as every element's tap q lies q pixels after its tap 0), widened to 32 bits and
// multiplied by the block's weights of that tap; the usual tap counts unrolled. A block whose
// sources do not fit (a downscale past about 4x) or whose loads would pass the end of the
// source's bytes goes one pixel at a time, as a whole pass does where a quarter of its blocks or
// more do not fit, and everything on other CPUs. Compilers do not
// gather bytes on their own: the pixel-at-a-time loops this replaces were most of the resizers'
// time. The bytes are the same either way (integer sums; f32 in the same order).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define EDGEVLA_ROW_PASS_SHUFFLE 1
#elif defined(__aarch64__)
#include <arm_neon.h>
#define EDGEVLA_ROW_PASS_NEON 1
#endif

namespace edgevla::model {

// For tests and benchmarks: which form the passes run (process-wide; the shuffle form is the
// default where the CPU has one: AVX2, or NEON on aarch64). Returns whether the shuffle form is
// now on (never where the CPU has none).
bool use_shuffle_passes(bool on);
bool shuffle_passes_on();

template <class W>
struct RowTaps {
  int out_width = 0, taps = 0;
  int channels = 3;                // source bytes a pixel
  std::array<int, 3> map{0, 1, 2};  // source channel of output channel c
  std::vector<int> start, count;   // [out_width]
  std::vector<W> k;                // [out_width][taps], 0 past count
  // Blocks of 8 elements, per half h (elements 4h .. 4h + 3): the byte offset in a source row
  // of the half's first element's tap-0 pixel, and the shuffle that moves each element's byte
  // (relative to that offset) to its place 4h + j (0x80 elsewhere); the bytes the block's
  // loads reach from the row's start; the weights [taps][8]; `fits`: 2 when the whole block
  // fits one load (shuffle[0] then places all 8), 1 when each half fits one, 0 otherwise.
  std::vector<std::array<int, 2>> base;
  std::vector<int> reach;
  std::vector<std::array<std::array<std::uint8_t, 16>, 2>> shuffle;
  std::vector<W> block_k;
  std::vector<std::uint8_t> fits;
  bool pays = false;  // most blocks fit: the shuffle form pays (else the whole pass goes scalar)
};

// Sized for out_width outputs of `taps` taps, weights 0.
template <class W>
RowTaps<W> row_taps(int out_width, int taps, int channels = 3, std::array<int, 3> map = {0, 1, 2}) {
  RowTaps<W> t;
  t.out_width = out_width;
  t.taps = taps;
  t.channels = channels;
  t.map = map;
  t.start.assign(static_cast<std::size_t>(out_width), 0);
  t.count.assign(static_cast<std::size_t>(out_width), 0);
  t.k.assign(static_cast<std::size_t>(out_width) * static_cast<std::size_t>(taps), W{});
  return t;
}

// Fills the blocks of a pass whose start / count / k are set.
template <class W>
void plan_blocks(RowTaps<W>& h) {
  const auto nb = static_cast<std::size_t>(h.out_width) * 3 / 8, taps = static_cast<std::size_t>(h.taps);
  h.base.assign(nb, {});
  h.reach.assign(nb, 0);
  h.shuffle.assign(nb, {});
  h.block_k.assign(nb * taps * 8, W{});
  h.fits.assign(nb, 0);
  const auto source_byte = [&](std::size_t e) { return h.start[e / 3] * h.channels + h.map[e % 3]; };
  for (std::size_t b = 0; b < nb; ++b) {
    bool fits = true;
    for (std::size_t half = 0; half < 2; ++half) {
      const int first = h.start[(b * 8 + 4 * half) / 3] * h.channels;
      h.base[b][half] = first;
      h.shuffle[b][half].fill(0x80);
      for (std::size_t j = 4 * half; j < 4 * half + 4; ++j) {
        const std::size_t e = b * 8 + j, x = e / 3;
        const int rel = source_byte(e) - first;
        if (rel < 0 || rel > 15) fits = false;
        h.shuffle[b][half][j] = static_cast<std::uint8_t>(std::clamp(rel, 0, 15));
        for (std::size_t q = 0; q < taps; ++q) h.block_k[(b * taps + q) * 8 + j] = h.k[x * taps + q];
      }
    }
    // The whole block within one load from the first half's offset: one load a tap.
    bool one = fits;
    std::array<std::uint8_t, 16> both;
    both.fill(0x80);
    for (std::size_t j = 0; j < 8 && one; ++j) {
      const int rel = source_byte(b * 8 + j) - h.base[b][0];
      one = rel >= 0 && rel <= 15;
      both[j] = static_cast<std::uint8_t>(std::clamp(rel, 0, 15));
    }
    if (one) {
      h.shuffle[b][0] = both;
      h.base[b][1] = h.base[b][0];
    }
    h.reach[b] = std::max(h.base[b][0], h.base[b][1]) + h.channels * (h.taps - 1) + 16;
    h.fits[b] = one ? 2 : fits ? 1 : 0;
  }
  const auto fitting = static_cast<std::size_t>(std::count_if(h.fits.begin(), h.fits.end(), [](std::uint8_t f) { return f != 0; }));
  h.pays = nb > 0 && fitting * 4 >= nb * 3;
}

// Output elements [e0, e1) of one row, a pixel's three at a time (those of the pixels at the
// ends that fall outside are computed and not stored). Step: source bytes a pixel, fixed for
// the usual counts (0: h.channels).
template <int Step, class W>
void row_pass_pixels(const RowTaps<W>& h, const std::uint8_t* src, W init, int e0, int e1, W* out) {
  const int c0 = h.map[0], c1 = h.map[1], c2 = h.map[2], step = Step > 0 ? Step : h.channels;
  for (int x = e0 / 3; x * 3 < e1; ++x) {
    const auto xi = static_cast<std::size_t>(x);
    const std::uint8_t* p = src + static_cast<std::size_t>(h.start[xi]) * static_cast<std::size_t>(step);
    const W* k = h.k.data() + xi * static_cast<std::size_t>(h.taps);
    W a0 = init, a1 = init, a2 = init;
    for (int q = 0; q < h.count[xi]; ++q, p += step) {
      a0 = a0 + static_cast<W>(p[c0]) * k[q];
      a1 = a1 + static_cast<W>(p[c1]) * k[q];
      a2 = a2 + static_cast<W>(p[c2]) * k[q];
    }
    const int e = 3 * x;
    if (e >= e0 && e + 2 < e1) {
      out[e] = a0;
      out[e + 1] = a1;
      out[e + 2] = a2;
      continue;
    }
    if (e >= e0) out[e] = a0;
    if (e + 1 >= e0 && e + 1 < e1) out[e + 1] = a1;
    if (e + 2 < e1) out[e + 2] = a2;
  }
}

template <class W>
void row_pass_scalar(const RowTaps<W>& h, const std::uint8_t* src, W init, int e0, int e1, W* out) {
  switch (h.channels) {
    case 1: return row_pass_pixels<1>(h, src, init, e0, e1, out);
    case 3: return row_pass_pixels<3>(h, src, init, e0, e1, out);
    case 4: return row_pass_pixels<4>(h, src, init, e0, e1, out);
    default: return row_pass_pixels<0>(h, src, init, e0, e1, out);
  }
}

// The shuffle form's parts for the CPU at hand, one set a build: Loads (a block's loads and
// shuffles), loads(), and block_sum<T, One>() storing a block's 8 sums; the block loop and the
// tap-count dispatch below are written once for both.
#if defined(EDGEVLA_ROW_PASS_SHUFFLE)
#define EDGEVLA_ROW_PASS_SIMD __attribute__((target("avx2")))
namespace row_pass_simd {

// A block's two loads (the same one when fits == 2) and their shuffles.
struct Loads {
  const std::uint8_t* lo;
  const std::uint8_t* hi;
  __m128i shuffle_lo, shuffle_hi;
  int stride;  // source bytes a pixel: the step from tap to tap
};

EDGEVLA_ROW_PASS_SIMD inline Loads loads(const std::array<int, 2>& base,
                                         const std::array<std::array<std::uint8_t, 16>, 2>& shuffle,
                                         const std::uint8_t* row, int stride) {
  return {row + base[0], row + base[1], _mm_loadu_si128(reinterpret_cast<const __m128i*>(shuffle[0].data())),
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(shuffle[1].data())), stride};
}

// The block's 8 source bytes of tap q, widened to 32 bits. One: the whole block from one load.
template <bool One>
EDGEVLA_ROW_PASS_SIMD inline __m256i tap_bytes(const Loads& l, int q) {
  const int at = l.stride * q;
  const __m128i lo = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(l.lo + at)), l.shuffle_lo);
  if constexpr (One) return _mm256_cvtepu8_epi32(lo);
  const __m128i hi = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(l.hi + at)), l.shuffle_hi);
  return _mm256_cvtepu8_epi32(_mm_or_si128(lo, hi));
}

// One block's sums of tap products from `init` into out[0, 8). T > 0: that many taps, unrolled.
template <int T, bool One>
EDGEVLA_ROW_PASS_SIMD inline void block_sum(const Loads& l, const std::int32_t* k, int taps, std::int32_t init,
                                            std::int32_t* out) {
  __m256i acc = _mm256_set1_epi32(init);
  const int n = T > 0 ? T : taps;
  for (int q = 0; q < n; ++q) {
    const __m256i kq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(k + 8 * q));
    acc = _mm256_add_epi32(acc, _mm256_mullo_epi32(tap_bytes<One>(l, q), kq));
  }
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), acc);
}

// f32: each product rounded, then added (no fused multiply-add), in tap order.
template <int T, bool One>
EDGEVLA_ROW_PASS_SIMD inline void block_sum(const Loads& l, const float* k, int taps, float init, float* out) {
  __m256 acc = _mm256_set1_ps(init);
  const int n = T > 0 ? T : taps;
  for (int q = 0; q < n; ++q) {
    const __m256 v = _mm256_cvtepi32_ps(tap_bytes<One>(l, q));
    acc = _mm256_add_ps(acc, _mm256_mul_ps(v, _mm256_loadu_ps(k + 8 * q)));
  }
  _mm256_storeu_ps(out, acc);
}

}  // namespace row_pass_simd
#elif defined(EDGEVLA_ROW_PASS_NEON)
// Arm (Jetson): NEON's table lookup (vqtbl1) is the byte shuffle (an index past 15 gives 0, as
// 0x80 does for pshufb), widened to 32 bits in two groups of 4. f32: each product rounded, then
// added; a file that instantiates it is compiled without contraction, which would fuse them.
#define EDGEVLA_ROW_PASS_SIMD
namespace row_pass_simd {

struct Loads {
  const std::uint8_t* lo;
  const std::uint8_t* hi;
  uint8x8_t shuffle_lo, shuffle_hi;
  int stride;
};

inline Loads loads(const std::array<int, 2>& base, const std::array<std::array<std::uint8_t, 16>, 2>& shuffle,
                   const std::uint8_t* row, int stride) {
  return {row + base[0], row + base[1], vld1_u8(shuffle[0].data()), vld1_u8(shuffle[1].data()), stride};
}

// The block's 8 source bytes of tap q, widened to 16 bits.
template <bool One>
inline uint16x8_t tap_bytes(const Loads& l, int q) {
  const int at = l.stride * q;
  const uint8x8_t lo = vqtbl1_u8(vld1q_u8(l.lo + at), l.shuffle_lo);
  if constexpr (One) return vmovl_u8(lo);
  const uint8x8_t hi = vqtbl1_u8(vld1q_u8(l.hi + at), l.shuffle_hi);
  return vmovl_u8(vorr_u8(lo, hi));
}

inline int32x4_t low4(uint16x8_t v) { return vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(v))); }
inline int32x4_t high4(uint16x8_t v) { return vreinterpretq_s32_u32(vmovl_high_u16(v)); }

template <int T, bool One>
inline void block_sum(const Loads& l, const std::int32_t* k, int taps, std::int32_t init, std::int32_t* out) {
  int32x4_t a = vdupq_n_s32(init), b = vdupq_n_s32(init);
  const int n = T > 0 ? T : taps;
  for (int q = 0; q < n; ++q) {
    const uint16x8_t v = tap_bytes<One>(l, q);
    a = vmlaq_s32(a, low4(v), vld1q_s32(k + 8 * q));
    b = vmlaq_s32(b, high4(v), vld1q_s32(k + 8 * q + 4));
  }
  vst1q_s32(out, a);
  vst1q_s32(out + 4, b);
}

template <int T, bool One>
inline void block_sum(const Loads& l, const float* k, int taps, float init, float* out) {
  float32x4_t a = vdupq_n_f32(init), b = vdupq_n_f32(init);
  const int n = T > 0 ? T : taps;
  for (int q = 0; q < n; ++q) {
    const uint16x8_t v = tap_bytes<One>(l, q);
    a = vaddq_f32(a, vmulq_f32(vcvtq_f32_s32(low4(v)), vld1q_f32(k + 8 * q)));
    b = vaddq_f32(b, vmulq_f32(vcvtq_f32_s32(high4(v)), vld1q_f32(k + 8 * q + 4)));
  }
  vst1q_f32(out, a);
  vst1q_f32(out + 4, b);
}

}  // namespace row_pass_simd
#endif

#ifdef EDGEVLA_ROW_PASS_SIMD
namespace row_pass_simd {

template <int T, class W>
EDGEVLA_ROW_PASS_SIMD void run(const RowTaps<W>& h, const std::uint8_t* src, std::size_t avail, W init, W* out) {
  const auto blocks = h.base.size();
  for (std::size_t b = 0; b < blocks; ++b) {
    const int e = static_cast<int>(b) * 8;
    if (!h.fits[b] || static_cast<std::size_t>(h.reach[b]) > avail) {
      row_pass_scalar(h, src, init, e, e + 8, out);
      continue;
    }
    const Loads l = loads(h.base[b], h.shuffle[b], src, h.channels);
    const W* k = h.block_k.data() + b * static_cast<std::size_t>(h.taps) * 8;
    if (h.fits[b] == 2) {
      block_sum<T, true>(l, k, h.taps, init, out + e);
    } else {
      block_sum<T, false>(l, k, h.taps, init, out + e);
    }
  }
  row_pass_scalar(h, src, init, static_cast<int>(blocks) * 8, h.out_width * 3, out);
}

// The usual tap counts unrolled (enlarging INTER_AREA: 2; Pillow's bicubic near scale 1: 4-5;
// PIL's bilinear at pi0's downscales: 3-5; the float area path: 2-5), any other in a loop.
template <class W>
EDGEVLA_ROW_PASS_SIMD void row(const RowTaps<W>& h, const std::uint8_t* src, std::size_t avail, W init, W* out) {
  switch (h.taps) {
    case 2: return run<2>(h, src, avail, init, out);
    case 3: return run<3>(h, src, avail, init, out);
    case 4: return run<4>(h, src, avail, init, out);
    case 5: return run<5>(h, src, avail, init, out);
    case 6: return run<6>(h, src, avail, init, out);
    default: return run<0>(h, src, avail, init, out);
  }
}

}  // namespace row_pass_simd
#endif

// One source row `src` through the pass into out[0, 3 * out_width); `avail`: the bytes readable
// from `src` on (to the end of the source).
template <class W>
void row_pass(const RowTaps<W>& h, const std::uint8_t* src, std::size_t avail, W init, W* out) {
#ifdef EDGEVLA_ROW_PASS_SIMD
  if (h.pays && shuffle_passes_on()) {
    row_pass_simd::row(h, src, avail, init, out);
    return;
  }
#endif
  (void)avail;
  row_pass_scalar(h, src, init, 0, h.out_width * 3, out);
}

}  // namespace edgevla::model
