// GR00T's frame pipeline (image_pipeline.hpp). Float steps are written as the libraries do them
// on x86-64 without fused multiply-add (this file is compiled with -ffp-contract=off): f32
// products and sums in the same order, doubles where they use doubles.
#include "runtime/model/groot/image_pipeline.hpp"

#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <string>


#include "runtime/model/row_pass.hpp"
#include "runtime/util/thread_pool.hpp"

// The hot loops are built twice on x86-64, for the baseline and for AVX2 (the loader picks one
// by the CPU): the baseline's SSE2 has no 32-bit vector multiply, so the integer sums of the
// resamplers stay scalar there. Integer arithmetic and element-wise float steps only: both
// builds give the same bytes.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define EDGEVLA_PIPELINE_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define EDGEVLA_PIPELINE_CLONES
#endif

namespace edgevla::model::groot {

namespace {

// Python's round() and NumPy's rint: ties to even (the default rounding mode).
long round_even(double x) { return std::lrint(x); }
float rint_f(float x) { return std::nearbyint(x); }
std::uint8_t sat_u8(long v) { return static_cast<std::uint8_t>(std::clamp<long>(v, 0, 255)); }

// A frame of h × w whose bytes the caller writes, every one (`zero`: black, for a caller that
// writes only part of it).
Frame blank(int h, int w, bool zero = false) {
  Frame f;
  f.height = h;
  f.width = w;
  const std::size_t n = static_cast<std::size_t>(h) * static_cast<std::size_t>(w) * 3;
  if (zero) {
    f.rgb.assign(n, 0);
  } else {
    f.rgb.resize(n);
  }
  return f;
}

// fn(begin, end) over rows [0, n): in slices over the pool's threads when there is a pool and
// the pass is large enough to pay for the hand-over (16 KB of output a slice at least), else in
// one call. Every row is computed the same way whichever slice holds it, so the bytes never
// depend on the split.
template <class F>
void for_rows(ThreadPool* pool, int n, std::size_t row_bytes, F&& fn) {
  constexpr std::size_t kMinSliceBytes = 16 * 1024;
  if (n <= 0) return;
  const auto grain = static_cast<std::int64_t>(std::max<std::size_t>(1, kMinSliceBytes / std::max<std::size_t>(row_bytes, 1)));
  if (pool == nullptr || pool->size() == 1 || n <= grain) {
    fn(0, n);
    return;
  }
  pool->parallel_for(n, grain, [&](std::int64_t b, std::int64_t e) { fn(static_cast<int>(b), static_cast<int>(e)); });
}

// ---- OpenCV INTER_AREA ---------------------------------------------------------------------------

struct AreaTap {
  int dst, src;
  float weight;
};

// computeResizeAreaTab, in OpenCV's order.
std::vector<AreaTap> area_tab(int ssize, int dsize, double scale) {
  std::vector<AreaTap> tab;
  for (int dx = 0; dx < dsize; ++dx) {
    const double fsx1 = dx * scale;
    const double fsx2 = fsx1 + scale;
    const double cell = std::min(scale, ssize - fsx1);
    int sx1 = static_cast<int>(std::ceil(fsx1)), sx2 = static_cast<int>(std::floor(fsx2));
    sx2 = std::min(sx2, ssize - 1);
    sx1 = std::min(sx1, sx2);
    if (sx1 - fsx1 > 1e-3) tab.push_back({dx, sx1 - 1, static_cast<float>((sx1 - fsx1) / cell)});
    for (int sx = sx1; sx < sx2; ++sx) tab.push_back({dx, sx, static_cast<float>(1.0 / cell)});
    if (fsx2 - sx2 > 1e-3) tab.push_back({dx, sx2, static_cast<float>(std::min(std::min(fsx2 - sx2, 1.0), cell) / cell)});
  }
  return tab;
}

// ResizeArea_Invoker: f32 sums per source row horizontally, then vertically, rounded. The
// vertical taps come in destination order with ascending sources, so each source row's
// horizontal sums are made once per slice of output rows, when first needed, into one reused
// row (the sums, and the order each output adds them in, are those of the two-pass form).
// Taps [t0, t1) start and end at a destination row's first tap.
// The horizontal taps as a pass along rows: each destination's taps read consecutive sources in
// ascending order (a partial first, whole ones, a partial last), so tap q is source start + q.
RowTaps<float> area_row_taps(const std::vector<AreaTap>& xt, int nw) {
  std::vector<int> first(static_cast<std::size_t>(nw), -1), last(static_cast<std::size_t>(nw), -1);
  for (const AreaTap& t : xt) {
    const auto d = static_cast<std::size_t>(t.dst);
    if (first[d] < 0) first[d] = t.src;
    last[d] = t.src;
  }
  int most = 1;
  for (std::size_t d = 0; d < first.size(); ++d) most = std::max(most, last[d] - first[d] + 1);
  RowTaps<float> r = row_taps<float>(nw, most);
  for (std::size_t d = 0; d < first.size(); ++d) {
    r.start[d] = std::max(first[d], 0);
    r.count[d] = first[d] < 0 ? 0 : last[d] - first[d] + 1;
  }
  // A destination's sources strictly ascend (sx1 - 1, sx1 .. sx2 - 1, sx2 in area_tab), so each
  // weight has a slot of its own.
  for (const AreaTap& t : xt) {
    const auto d = static_cast<std::size_t>(t.dst);
    r.k[d * static_cast<std::size_t>(most) + static_cast<std::size_t>(t.src - first[d])] = t.weight;
  }
  plan_blocks(r);
  return r;
}

EDGEVLA_PIPELINE_CLONES void area_float_rows(FrameView in, const RowTaps<float>& xt, const std::vector<AreaTap>& yt,
                                             std::size_t t0, std::size_t t1, std::size_t row_len, float* out) {
  const int w = in.width;
  std::vector<float> row(row_len);
  int have = -1;
  for (std::size_t ti = t0; ti < t1; ++ti) {
    const AreaTap& t = yt[ti];
    if (t.src != have) {
      have = t.src;
      const std::size_t at = static_cast<std::size_t>(t.src) * static_cast<std::size_t>(w) * 3;
      row_pass(xt, in.rgb.data() + at, in.rgb.size() - at, 0.0f, row.data());
    }
    float* o = out + static_cast<std::size_t>(t.dst) * row_len;
    const bool first = ti == t0 || yt[ti - 1].dst != t.dst;
    const float wt = t.weight;
    if (first) {
      for (std::size_t i = 0; i < row_len; ++i) o[i] = wt * row[i];
    } else {
      for (std::size_t i = 0; i < row_len; ++i) o[i] = o[i] + wt * row[i];
    }
  }
}

EDGEVLA_PIPELINE_CLONES void round_rows(const float* in, std::size_t n, std::uint8_t* out) {
  for (std::size_t i = 0; i < n; ++i) out[i] = sat_u8(static_cast<long>(rint_f(in[i])));
}

Frame area_float(FrameView in, int nh, int nw, double scale_x, double scale_y, ThreadPool* pool) {
  const std::vector<AreaTap> yt = area_tab(in.height, nh, scale_y);
  const RowTaps<float> xt = area_row_taps(area_tab(in.width, nw, scale_x), nw);
  const std::size_t row_len = static_cast<std::size_t>(nw) * 3;
  // Each destination row's first tap: a slice of rows [b, e) takes taps [first[b], first[e]).
  std::vector<std::size_t> first(static_cast<std::size_t>(nh) + 1, yt.size());
  for (std::size_t i = yt.size(); i-- > 0;) first[static_cast<std::size_t>(yt[i].dst)] = i;
  for (std::size_t d = static_cast<std::size_t>(nh); d-- > 0;) first[d] = std::min(first[d], first[d + 1]);
  // Each destination row's first tap writes it (every row has one), the others add into it.
  std::vector<float, UninitAllocator<float>> out(static_cast<std::size_t>(nh) * row_len);
  Frame f = blank(nh, nw);
  for_rows(pool, nh, row_len * 4, [&](int b, int e) {
    area_float_rows(in, xt, yt, first[static_cast<std::size_t>(b)], first[static_cast<std::size_t>(e)], row_len, out.data());
    const std::size_t o = static_cast<std::size_t>(b) * row_len;
    round_rows(out.data() + o, static_cast<std::size_t>(e - b) * row_len, f.rgb.data() + o);
  });
  return f;
}

// resizeAreaFast for integer factors, output rows [y0, y1).
void area_fast_rows(FrameView in, int sx, int sy, int y0, int y1, Frame& f) {
  const int nw = f.width;
  const float inv = 1.0f / static_cast<float>(sx * sy);
  for (int y = y0; y < y1; ++y) {
    for (int x = 0; x < nw; ++x) {
      for (int c = 0; c < 3; ++c) {
        long total = 0;
        for (int dy = 0; dy < sy; ++dy) {
          for (int dx = 0; dx < sx; ++dx) {
            total += in.rgb[(static_cast<std::size_t>(y * sy + dy) * in.width + (x * sx + dx)) * 3 + c];
          }
        }
        const std::size_t o = (static_cast<std::size_t>(y) * nw + x) * 3 + c;
        if (sx == 2 && sy == 2) {
          f.rgb[o] = static_cast<std::uint8_t>((total + 2) >> 2);
        } else {
          f.rgb[o] = sat_u8(static_cast<long>(rint_f(static_cast<float>(total) * inv)));
        }
      }
    }
  }
}

Frame area_fast(FrameView in, int sx, int sy, ThreadPool* pool) {
  Frame f = blank(in.height / sy, in.width / sx);
  for_rows(pool, f.height, static_cast<std::size_t>(f.width) * 3, [&](int y0, int y1) { area_fast_rows(in, sx, sy, y0, y1, f); });
  return f;
}

// INTER_AREA when enlarging: the bilinear fixed-point path with area coefficients.
struct LinearCoeffs {
  std::vector<long> idx, w0, w1;
  int xmax;
};

LinearCoeffs linear_area_coeffs(int ssize, int dsize, bool clamp_border) {
  const double inv_scale = static_cast<double>(dsize) / ssize;
  const double scale = 1.0 / inv_scale;
  LinearCoeffs k{std::vector<long>(static_cast<std::size_t>(dsize)), std::vector<long>(static_cast<std::size_t>(dsize)),
                 std::vector<long>(static_cast<std::size_t>(dsize)), dsize};
  for (int d = 0; d < dsize; ++d) {
    long s = static_cast<long>(std::floor(d * scale));
    float f = static_cast<float>((d + 1) - (s + 1) * inv_scale);
    f = f <= 0 ? 0.0f : f - static_cast<float>(std::floor(f));
    if (clamp_border && s + 1 >= ssize) {
      k.xmax = std::min(k.xmax, d);
      if (s >= ssize - 1) f = 0.0f, s = ssize - 1;
    }
    k.idx[static_cast<std::size_t>(d)] = s;
    k.w0[static_cast<std::size_t>(d)] = static_cast<long>(rint_f((1.0f - f) * 2048.0f));
    k.w1[static_cast<std::size_t>(d)] = static_cast<long>(rint_f(f * 2048.0f));
  }
  return k;
}

// Integer arithmetic as OpenCV's fixed-point path does it; every intermediate fits 32 bits
// (|row| <= 255 * 2048, weights <= 2048). Output rows [y0, y1): the horizontal sums of the
// source rows they read, then the vertical blend.
// The horizontal step as a two-tap pass: pixel x blends idx[x] and idx[x] + 1 by w0, w1; past
// xmax the source's last pixel alone times 2048 (there w0 is 2048 and w1 0).
RowTaps<std::int32_t> linear_area_taps(const LinearCoeffs& xc, int out_width) {
  RowTaps<std::int32_t> t = row_taps<std::int32_t>(out_width, 2);
  for (int x = 0; x < out_width; ++x) {
    const auto xi = static_cast<std::size_t>(x);
    t.start[xi] = static_cast<int>(xc.idx[xi]);
    if (x >= xc.xmax) {
      t.count[xi] = 1;
      t.k[2 * xi] = 2048;
    } else {
      t.count[xi] = 2;
      t.k[2 * xi] = static_cast<std::int32_t>(xc.w0[xi]);
      t.k[2 * xi + 1] = static_cast<std::int32_t>(xc.w1[xi]);
    }
  }
  plan_blocks(t);
  return t;
}

EDGEVLA_PIPELINE_CLONES void linear_area_rows(FrameView in, const RowTaps<std::int32_t>& xt, const LinearCoeffs& yc, int y0, int y1,
                                              Frame& f) {
  const int h = in.height, w = in.width, nw = f.width;
  const std::size_t row_len = static_cast<std::size_t>(nw) * 3;
  const auto src_row = [&](int y, int dy) { return std::clamp<long>(yc.idx[static_cast<std::size_t>(y)] + dy, 0, h - 1); };
  const long s0 = src_row(y0, 0), s1 = src_row(y1 - 1, 1);
  std::vector<std::int32_t> rows(static_cast<std::size_t>(s1 - s0 + 1) * row_len);
  for (long y = s0; y <= s1; ++y) {
    const std::size_t at = static_cast<std::size_t>(y) * static_cast<std::size_t>(w) * 3;
    row_pass(xt, in.rgb.data() + at, in.rgb.size() - at, 0, rows.data() + static_cast<std::size_t>(y - s0) * row_len);
  }
  for (int y = y0; y < y1; ++y) {
    const auto b0 = static_cast<std::int32_t>(yc.w0[static_cast<std::size_t>(y)]);
    const auto b1 = static_cast<std::int32_t>(yc.w1[static_cast<std::size_t>(y)]);
    const std::int32_t* v0 = rows.data() + static_cast<std::size_t>(src_row(y, 0) - s0) * row_len;
    const std::int32_t* v1 = rows.data() + static_cast<std::size_t>(src_row(y, 1) - s0) * row_len;
    std::uint8_t* o = f.rgb.data() + static_cast<std::size_t>(y) * row_len;
    for (std::size_t i = 0; i < row_len; ++i) {
      const std::int32_t v = (((b0 * (v0[i] >> 4)) >> 16) + ((b1 * (v1[i] >> 4)) >> 16) + 2) >> 2;
      o[i] = static_cast<std::uint8_t>(std::clamp<std::int32_t>(v, 0, 255));
    }
  }
}

Frame linear_area(FrameView in, int nh, int nw, ThreadPool* pool) {
  const LinearCoeffs xc = linear_area_coeffs(in.width, nw, true), yc = linear_area_coeffs(in.height, nh, false);
  const RowTaps<std::int32_t> xt = linear_area_taps(xc, nw);
  Frame f = blank(nh, nw);
  for_rows(pool, nh, static_cast<std::size_t>(nw) * 3, [&](int y0, int y1) { linear_area_rows(in, xt, yc, y0, y1, f); });
  return f;
}

// ---- Pillow's bicubic ------------------------------------------------------------------------------

constexpr int kPrecisionBits = 32 - 8 - 2;

double bicubic(double x) {
  const double a = -0.5;
  x = std::fabs(x);
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

struct PilTaps {
  int xmin;
  std::vector<std::int32_t> k;
};

std::vector<PilTaps> pil_coeffs(int in_size, int out_size) {
  const double scale = static_cast<double>(in_size) / out_size;
  const double filterscale = std::max(scale, 1.0);
  const double support = 2.0 * filterscale;
  std::vector<PilTaps> out;
  out.reserve(static_cast<std::size_t>(out_size));
  std::vector<double> ws;
  for (int xx = 0; xx < out_size; ++xx) {
    const double center = (xx + 0.5) * scale;
    const double ss = 1.0 / filterscale;
    const int xmin = std::max(static_cast<int>(center - support + 0.5), 0);
    const int xmax = std::min(static_cast<int>(center + support + 0.5), in_size) - xmin;
    ws.assign(static_cast<std::size_t>(std::max(xmax, 0)), 0.0);
    double total = 0.0;
    for (int x = 0; x < xmax; ++x) ws[static_cast<std::size_t>(x)] = bicubic((x + xmin - center + 0.5) * ss);
    for (const double wv : ws) total += wv;
    PilTaps t{xmin, {}};
    t.k.reserve(ws.size());
    for (double wv : ws) {
      if (total != 0.0) wv /= total;
      const double scaled = wv * static_cast<double>(1L << kPrecisionBits);
      t.k.push_back(static_cast<std::int32_t>(wv < 0 ? -0.5 + scaled : 0.5 + scaled));
    }
    out.push_back(std::move(t));
  }
  return out;
}

// Pillow's 8-bit clip of a fixed-point sum.
std::uint8_t pil_clip(std::int32_t acc) {
  return acc <= 0 ? 0 : static_cast<std::uint8_t>(std::min<std::int32_t>(acc >> kPrecisionBits, 255));
}

// Pillow's vertical pass, in 32-bit integers as Pillow does (normalised weights of 2^22, |sum|
// < 2^31 for 8-bit input): whole input rows are weighed into a row of sums, so the inner loop
// runs along memory and vectorises. Output rows [o0, o1).
EDGEVLA_PIPELINE_CLONES void pil_vertical_rows(FrameView in, const std::vector<PilTaps>& taps, int o0, int o1, Frame& f) {
  constexpr std::int32_t kHalf = 1 << (kPrecisionBits - 1);
  const std::size_t row_len = static_cast<std::size_t>(in.width) * 3;
  std::vector<std::int32_t> acc(row_len);
  for (int o = o0; o < o1; ++o) {
    const PilTaps& t = taps[static_cast<std::size_t>(o)];
    std::fill(acc.begin(), acc.end(), kHalf);
    for (std::size_t q = 0; q < t.k.size(); ++q) {
      const std::uint8_t* s = in.rgb.data() + (static_cast<std::size_t>(t.xmin) + q) * row_len;
      const std::int32_t k = t.k[q];
      for (std::size_t i = 0; i < row_len; ++i) acc[i] += s[i] * k;
    }
    std::uint8_t* dst = f.rgb.data() + static_cast<std::size_t>(o) * row_len;
    for (std::size_t i = 0; i < row_len; ++i) dst[i] = pil_clip(acc[i]);
  }
}

Frame pil_vertical(FrameView in, int out_size, ThreadPool* pool) {
  const std::vector<PilTaps> taps = pil_coeffs(in.height, out_size);
  Frame f = blank(out_size, in.width);
  for_rows(pool, out_size, static_cast<std::size_t>(in.width) * 3, [&](int o0, int o1) { pil_vertical_rows(in, taps, o0, o1, f); });
  return f;
}

EDGEVLA_PIPELINE_CLONES void pil_clip_row(const std::int32_t* acc, std::size_t n, std::uint8_t* dst) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = pil_clip(acc[i]);
}

// Pillow's horizontal pass as a pass along rows (the taps of every output pixel, zero
// weights past its own count), from Pillow's rounding offset, clipped to 8 bits.
Frame pil_horizontal(FrameView in, int out_size, ThreadPool* pool) {
  const std::vector<PilTaps> taps = pil_coeffs(in.width, out_size);
  int most = 0;
  for (const PilTaps& p : taps) most = std::max(most, static_cast<int>(p.k.size()));
  RowTaps<std::int32_t> t = row_taps<std::int32_t>(out_size, most);
  for (int x = 0; x < out_size; ++x) {
    const PilTaps& p = taps[static_cast<std::size_t>(x)];
    t.start[static_cast<std::size_t>(x)] = p.xmin;
    t.count[static_cast<std::size_t>(x)] = static_cast<int>(p.k.size());
    std::copy(p.k.begin(), p.k.end(), t.k.begin() + static_cast<std::ptrdiff_t>(x) * t.taps);
  }
  plan_blocks(t);
  constexpr std::int32_t kHalf = 1 << (kPrecisionBits - 1);
  Frame f = blank(in.height, out_size);
  const std::size_t row_len = static_cast<std::size_t>(out_size) * 3, in_row = static_cast<std::size_t>(in.width) * 3;
  for_rows(pool, in.height, row_len, [&](int y0, int y1) {
    std::vector<std::int32_t> acc(row_len);
    for (int y = y0; y < y1; ++y) {
      const std::size_t at = static_cast<std::size_t>(y) * in_row;
      row_pass(t, in.rgb.data() + at, in.rgb.size() - at, kHalf, acc.data());
      pil_clip_row(acc.data(), row_len, f.rgb.data() + static_cast<std::size_t>(y) * row_len);
    }
  });
  return f;
}

// One pass along x (horizontal) or y (vertical).
Frame pil_pass(FrameView in, int out_size, bool horizontal, ThreadPool* pool) {
  if (horizontal) return pil_horizontal(in, out_size, pool);
  return pil_vertical(in, out_size, pool);
}

// ---- the pipeline ---------------------------------------------------------------------------------

Frame letterbox(FrameView in) {
  if (in.height == in.width) return to_frame(in);
  const int side = std::max(in.height, in.width);
  const int top = (side - in.height) / 2, left = (side - in.width) / 2;
  Frame f = blank(side, side, /*zero=*/true);  // the bars
  for (int y = 0; y < in.height; ++y) {
    std::copy_n(in.rgb.data() + static_cast<std::size_t>(y) * in.width * 3, static_cast<std::size_t>(in.width) * 3,
                f.rgb.data() + (static_cast<std::size_t>(y + top) * side + left) * 3);
  }
  return f;
}

Frame smallest_max_size(FrameView in, int max_size, ThreadPool* pool) {
  const double scale = max_size / static_cast<double>(std::min(in.height, in.width));
  if (scale == 1.0) return to_frame(in);
  return resize_area(in, static_cast<int>(round_even(in.height * scale)), static_cast<int>(round_even(in.width * scale)), pool);
}

Frame center_crop(FrameView in, double fraction) {
  const int ch = std::max(1, static_cast<int>(in.height * fraction)), cw = std::max(1, static_cast<int>(in.width * fraction));
  const int y0 = (in.height - ch) / 2, x0 = (in.width - cw) / 2;
  Frame f = blank(ch, cw);
  for (int y = 0; y < ch; ++y) {
    std::copy_n(in.rgb.data() + (static_cast<std::size_t>(y + y0) * in.width + x0) * 3, static_cast<std::size_t>(cw) * 3,
                f.rgb.data() + static_cast<std::size_t>(y) * cw * 3);
  }
  return f;
}

constexpr int kFactor = 28;
constexpr long kMinPixels = 4L * 28 * 28, kMaxPixels = 4096L * 28 * 28;
constexpr int kMaxRatio = 200, kMaxSide = 7000;

}  // namespace

Frame resize_area(FrameView in, int nh, int nw, ThreadPool* pool) {
  if (nh == in.height && nw == in.width) return to_frame(in);
  const double inv_x = static_cast<double>(nw) / in.width, inv_y = static_cast<double>(nh) / in.height;
  const double scale_x = 1.0 / inv_x, scale_y = 1.0 / inv_y;
  if (scale_x >= 1 && scale_y >= 1) {
    const long ix = round_even(scale_x), iy = round_even(scale_y);
    if (std::fabs(scale_x - static_cast<double>(ix)) < DBL_EPSILON && std::fabs(scale_y - static_cast<double>(iy)) < DBL_EPSILON) {
      return area_fast(in, static_cast<int>(ix), static_cast<int>(iy), pool);
    }
    return area_float(in, nh, nw, scale_x, scale_y, pool);
  }
  return linear_area(in, nh, nw, pool);
}

Frame resize_bicubic(FrameView in, int nh, int nw, ThreadPool* pool) {
  if (nw != in.width) {
    Frame across = pil_pass(in, nw, true, pool);
    return nh != in.height ? pil_pass(across, nh, false, pool) : across;
  }
  if (nh != in.height) return pil_pass(in, nh, false, pool);
  return to_frame(in);
}

Expected<std::pair<int, int>> smart_resize(int h, int w) {
  if (h < 1 || w < 1) return invalid_argument("frame " + std::to_string(w) + "x" + std::to_string(h) + " is empty");
  if (static_cast<double>(std::max(h, w)) / std::min(h, w) > kMaxRatio) {
    return invalid_argument("frame " + std::to_string(w) + "x" + std::to_string(h) + ": aspect ratio above " +
                            std::to_string(kMaxRatio) + " (the Eagle processor refuses it); crop the camera image");
  }
  long hb = std::min<long>(std::max<long>(kFactor, round_even(static_cast<double>(h) / kFactor) * kFactor), kMaxSide);
  long wb = std::min<long>(std::max<long>(kFactor, round_even(static_cast<double>(w) / kFactor) * kFactor), kMaxSide);
  if (hb * wb > kMaxPixels) {
    const double beta = std::sqrt(static_cast<double>(hb * wb) / kMaxPixels);
    hb = static_cast<long>(std::floor(hb / beta / kFactor)) * kFactor;
    wb = static_cast<long>(std::floor(wb / beta / kFactor)) * kFactor;
  } else if (hb * wb < kMinPixels) {
    const double beta = std::sqrt(static_cast<double>(kMinPixels) / (static_cast<double>(h) * w));
    hb = static_cast<long>(std::ceil(h * beta / kFactor)) * kFactor;
    wb = static_cast<long>(std::ceil(w * beta / kFactor)) * kFactor;
  }
  return std::make_pair(static_cast<int>(hb), static_cast<int>(wb));
}

Expected<Frame> preprocess_frame(FrameView in, const FrameOptions& options) {
  if (in.height < 1 || in.width < 1 ||
      in.rgb.size() != static_cast<std::size_t>(in.height) * static_cast<std::size_t>(in.width) * 3) {
    return invalid_argument("a frame must be uint8 RGB [H, W, 3] with H, W >= 1; got " + std::to_string(in.height) + "x" +
                            std::to_string(in.width) + " with " + std::to_string(in.rgb.size()) + " bytes");
  }
  if (options.shortest_edge < 1 || !(options.crop_fraction > 0.0 && options.crop_fraction <= 1.0)) {
    return invalid_argument("frame options: shortest_edge must be >= 1 and crop_fraction in (0, 1]");
  }
  Frame boxed;
  if (options.letterbox) boxed = letterbox(in);
  Frame f = smallest_max_size(options.letterbox ? boxed : in, options.shortest_edge, options.pool);
  f = center_crop(f, options.crop_fraction);
  f = smallest_max_size(f, options.shortest_edge, options.pool);
  EDGEVLA_ASSIGN_OR_RETURN(auto hw, smart_resize(f.height, f.width));
  return resize_bicubic(f, hw.first, hw.second, options.pool);
}

void normalize_pixels(FrameView frame, float* out, ThreadPool* pool) {
  // (x - 127.5) / 127.5 in float32 for each of the 256 byte values, then a lookup per pixel and
  // channel plane (the same floats as computing it per pixel).
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int v = 0; v < 256; ++v) t[static_cast<std::size_t>(v)] = (static_cast<float>(v) - 127.5f) / 127.5f;
    return t;
  }();
  const std::size_t plane = static_cast<std::size_t>(frame.height) * static_cast<std::size_t>(frame.width);
  const auto w = static_cast<std::size_t>(frame.width);
  const std::uint8_t* rgb = frame.rgb.data();
  float* r = out;
  float* g = out + plane;
  float* b = out + 2 * plane;
  for_rows(pool, frame.height, w * 12, [&](int y0, int y1) {
    for (std::size_t i = static_cast<std::size_t>(y0) * w, end = static_cast<std::size_t>(y1) * w; i < end; ++i) {
      r[i] = table[rgb[3 * i]];
      g[i] = table[rgb[3 * i + 1]];
      b[i] = table[rgb[3 * i + 2]];
    }
  });
}

}  // namespace edgevla::model::groot
