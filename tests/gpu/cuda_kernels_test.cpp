// The cuda backend's element-wise, normalisation and GEMM kernels against plain double-precision
// host references written here (the CPU backend is not linked), in f32 and bf16, at the row
// widths and counts the pi0 / pi0.5 engines use plus odd ones that take the scalar paths; a
// CUDA graph capture and replay; dtype and size errors; and a short timing printout.
// Without a CUDA device every test skips itself (the test main then reports "not run").
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "runtime/backends/cuda/kernels/gemm.hpp"
#include "runtime/backends/cuda/kernels/kernels.hpp"
#include "runtime/core/dtype.hpp"

namespace edgevla::backends::cuda {
namespace {

#define EXPECT_OK(expr)                                    \
  do {                                                     \
    const ::edgevla::Status edgevla_s_ = (expr);           \
    EXPECT_TRUE(edgevla_s_.is_ok()) << edgevla_s_.to_string(); \
  } while (0)
#define ASSERT_OK(expr)                                    \
  do {                                                     \
    const ::edgevla::Status edgevla_s_ = (expr);           \
    ASSERT_TRUE(edgevla_s_.is_ok()) << edgevla_s_.to_string(); \
  } while (0)
#define ASSERT_CUDA(expr) ASSERT_EQ((expr), cudaSuccess) << #expr << ": " << cudaGetErrorString(expr)

bool gpu_present() {
  static const bool present = [] {
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
  }();
  return present;
}

// ---- host data ------------------------------------------------------------------------------

// Bytes of `v` stored as dtype t (f32, bf16 or f16; bf16/f16 rounded to nearest even).
std::vector<unsigned char> pack(const std::vector<float>& v, DType t) {
  const std::size_t es = dtype_size(t);
  std::vector<unsigned char> out(v.size() * es);
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (t == DType::kF32) {
      std::memcpy(out.data() + i * 4, &v[i], 4);
    } else {
      const std::uint16_t bits = t == DType::kBF16 ? float_to_bfloat16(v[i]) : float_to_half(v[i]);
      std::memcpy(out.data() + i * 2, &bits, 2);
    }
  }
  return out;
}

std::vector<float> unpack(const std::vector<unsigned char>& b, DType t) {
  const std::size_t es = dtype_size(t);
  std::vector<float> out(b.size() / es);
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (t == DType::kF32) {
      std::memcpy(&out[i], b.data() + i * 4, 4);
    } else {
      std::uint16_t bits;
      std::memcpy(&bits, b.data() + i * 2, 2);
      out[i] = t == DType::kBF16 ? bfloat16_to_float(bits) : half_to_float(bits);
    }
  }
  return out;
}

// The values dtype t holds for v.
std::vector<float> rounded(const std::vector<float>& v, DType t) { return unpack(pack(v, t), t); }

std::vector<float> random_values(std::size_t n, float lo, float hi, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// A device allocation that frees itself.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes) : bytes_(std::max<std::size_t>(bytes, 16)) {
    if (cudaMalloc(&p_, bytes_) != cudaSuccess) p_ = nullptr;
  }
  DeviceBuffer(const std::vector<float>& v, DType t) : DeviceBuffer(v.size() * dtype_size(t)) { upload(v, t); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (p_ != nullptr) cudaFree(p_);
  }
  void* get() const { return p_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(p_);
  }
  // Returns once the data is on the device: a pageable cudaMemcpy may return before its DMA
  // ends, and the tests' kernels run on a non-blocking stream that does not wait for it.
  void upload(const std::vector<float>& v, DType t, std::size_t offset_bytes = 0) {
    const auto b = pack(v, t);
    EXPECT_EQ(cudaMemcpy(static_cast<unsigned char*>(p_) + offset_bytes, b.data(), b.size(), cudaMemcpyHostToDevice),
              cudaSuccess);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  std::vector<float> download(DType t, std::size_t n, std::size_t offset_bytes = 0) const {
    std::vector<unsigned char> b(n * dtype_size(t));
    EXPECT_EQ(cudaMemcpy(b.data(), static_cast<const unsigned char*>(p_) + offset_bytes, b.size(),
                         cudaMemcpyDeviceToHost),
              cudaSuccess);
    return unpack(b, t);
  }

 private:
  void* p_ = nullptr;
  std::size_t bytes_;
};

// ---- comparisons ----------------------------------------------------------------------------

struct Tolerance {
  double rel_l2;  // ‖got − ref‖ / ‖ref‖
  double atol;    // per element: |got − ref| ≤ atol + rtol·|ref|
  double rtol;
};

// f32 results: the same math as the reference up to f32 rounding. bf16 results: one bf16
// rounding of the output (2⁻⁹ relative) plus the f32 work before it.
Tolerance tolerance_for(DType t) {
  return t == DType::kF32 ? Tolerance{1e-5, 1e-5, 1e-5} : Tolerance{1e-2, 1e-2, 1e-2};
}

void expect_close(const std::vector<float>& got, const std::vector<double>& ref, Tolerance tol,
                  const std::string& what) {
  ASSERT_EQ(got.size(), ref.size()) << what;
  double num = 0.0, den = 0.0, worst = 0.0;
  std::size_t worst_i = 0, bad = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double d = static_cast<double>(got[i]) - ref[i];
    num += d * d;
    den += ref[i] * ref[i];
    const double excess = std::fabs(d) - (tol.atol + tol.rtol * std::fabs(ref[i]));
    if (!(excess <= 0.0)) {
      if (bad == 0 || excess > worst || std::isnan(excess)) {
        worst = excess;
        worst_i = i;
      }
      ++bad;
    }
  }
  const double rel = den > 0.0 ? std::sqrt(num / den) : std::sqrt(num);
  EXPECT_LE(rel, tol.rel_l2) << what << ": relative L2 error";
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " elements out of tolerance; worst at " << worst_i << ": got "
                     << got[worst_i] << ", expected " << ref[worst_i];
}

std::vector<double> to_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }

double gelu_ref(double x) { return 0.5 * x * (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }

const char* name(DType t) { return dtype_name(t).data(); }

// ---- fixture --------------------------------------------------------------------------------

class CudaKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!gpu_present()) GTEST_SKIP() << "no CUDA device here (cudaGetDeviceCount found none)";
    ASSERT_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }
  void TearDown() override {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }
  void sync() { ASSERT_CUDA(cudaStreamSynchronize(stream_)); }
  // After plain cudaMemcpy/cudaMemset calls (legacy stream): the test stream does not wait for
  // them by itself.
  void settle() { ASSERT_CUDA(cudaDeviceSynchronize()); }

  cudaStream_t stream_ = nullptr;
};

constexpr DType kActs[] = {DType::kF32, DType::kBF16};
constexpr float kEps = 1e-6f;

// ---- norms ----------------------------------------------------------------------------------

TEST_F(CudaKernels, RmsNormMatchesReference) {
  const std::int64_t rows_list[] = {1, 7, 51, 968};
  const std::int64_t widths[] = {72, 1024, 1152, 2048, 4304, 75};  // 75: the scalar path
  for (const DType act : kActs) {
    for (const std::int64_t rows : rows_list) {
      for (const std::int64_t width : widths) {
        // residual: none, f32, bf16
        for (int res_kind = 0; res_kind < 3; ++res_kind) {
          const std::string what = std::string("rms_norm act=") + name(act) + " rows=" + std::to_string(rows) +
                                   " width=" + std::to_string(width) + " residual=" +
                                   (res_kind == 0 ? "none" : res_kind == 1 ? "f32" : "bf16");
          const std::size_t n = static_cast<std::size_t>(rows * width);
          const auto x = random_values(n, -2.0f, 2.0f, 1);
          const auto w = random_values(static_cast<std::size_t>(width), -0.5f, 0.5f, 2);
          const DType res_type = res_kind == 2 ? DType::kBF16 : DType::kF32;
          const auto res = rounded(random_values(n, -1.0f, 1.0f, 3), res_type);
          DeviceBuffer dx(x, DType::kF32), dw(w, DType::kF32), dres(res, res_type);
          DeviceBuffer dy(n * dtype_size(act));
          ASSERT_OK(rms_norm(stream_, dx.as<float>(), res_kind == 0 ? nullptr : dres.get(), res_type, rows, width,
                             dw.as<float>(), kEps, dy.get(), act));
          sync();
          std::vector<double> ref(n), xref(n);
          std::vector<float> xsum(n);
          for (std::int64_t r = 0; r < rows; ++r) {
            double ss = 0.0;
            for (std::int64_t i = 0; i < width; ++i) {
              const std::size_t j = static_cast<std::size_t>(r * width + i);
              xsum[j] = res_kind == 0 ? x[j] : x[j] + res[j];  // the f32 sum the kernel stores
              xref[j] = xsum[j];
              ss += xref[j] * xref[j];
            }
            const double inv = 1.0 / std::sqrt(ss / static_cast<double>(width) + kEps);
            for (std::int64_t i = 0; i < width; ++i) {
              const std::size_t j = static_cast<std::size_t>(r * width + i);
              ref[j] = xref[j] * inv * (1.0 + w[static_cast<std::size_t>(i)]);
            }
          }
          expect_close(dy.download(act, n), ref, tolerance_for(act), what);
          if (res_kind != 0) {
            expect_close(dx.download(DType::kF32, n), to_double(xsum), Tolerance{0, 0, 0}, what + " (x += residual)");
          }
          if (HasFailure()) return;
        }
      }
    }
  }
}

TEST_F(CudaKernels, AdaRmsNormMatchesReference) {
  for (const DType act : kActs) {
    for (const std::int64_t rows : {1, 51, 968}) {
      for (const std::int64_t width : {72, 1024, 2048, 75}) {
        const std::string what = std::string("ada_rms_norm act=") + name(act) + " rows=" + std::to_string(rows) +
                                 " width=" + std::to_string(width);
        const std::size_t n = static_cast<std::size_t>(rows * width);
        const auto x = random_values(n, -3.0f, 3.0f, 4);
        const auto scale = random_values(static_cast<std::size_t>(width), -0.7f, 0.7f, 5);
        const auto shift = random_values(static_cast<std::size_t>(width), -0.3f, 0.3f, 6);
        DeviceBuffer dx(x, DType::kF32), ds(scale, DType::kF32), dsh(shift, DType::kF32);
        DeviceBuffer dy(n * dtype_size(act));
        ASSERT_OK(ada_rms_norm(stream_, dx.as<float>(), rows, width, ds.as<float>(), dsh.as<float>(), kEps, dy.get(),
                               act));
        sync();
        std::vector<double> ref(n);
        for (std::int64_t r = 0; r < rows; ++r) {
          double ss = 0.0;
          for (std::int64_t i = 0; i < width; ++i) ss += static_cast<double>(x[r * width + i]) * x[r * width + i];
          const double inv = 1.0 / std::sqrt(ss / static_cast<double>(width) + kEps);
          for (std::int64_t i = 0; i < width; ++i) {
            ref[r * width + i] = x[r * width + i] * inv * (1.0 + scale[i]) + shift[i];
          }
        }
        expect_close(dy.download(act, n), ref, tolerance_for(act), what);
        if (HasFailure()) return;
      }
    }
  }
}

TEST_F(CudaKernels, LayerNormMatchesReference) {
  for (const DType act : kActs) {
    for (const std::int64_t rows : {1, 7, 968}) {
      for (const std::int64_t width : {72, 1152, 2048, 75}) {
        const std::string what = std::string("layer_norm act=") + name(act) + " rows=" + std::to_string(rows) +
                                 " width=" + std::to_string(width);
        const std::size_t n = static_cast<std::size_t>(rows * width);
        const auto x = random_values(n, 2.0f, 6.0f, 7);  // a mean far from 0
        const auto w = random_values(static_cast<std::size_t>(width), 0.5f, 1.5f, 8);
        const auto b = random_values(static_cast<std::size_t>(width), -0.5f, 0.5f, 9);
        DeviceBuffer dx(x, DType::kF32), dw(w, DType::kF32), db(b, DType::kF32);
        DeviceBuffer dy(n * dtype_size(act));
        ASSERT_OK(layer_norm(stream_, dx.as<float>(), rows, width, dw.as<float>(), db.as<float>(), kEps, dy.get(), act));
        sync();
        std::vector<double> ref(n);
        for (std::int64_t r = 0; r < rows; ++r) {
          double mean = 0.0, var = 0.0;
          for (std::int64_t i = 0; i < width; ++i) mean += x[r * width + i];
          mean /= static_cast<double>(width);
          for (std::int64_t i = 0; i < width; ++i) var += (x[r * width + i] - mean) * (x[r * width + i] - mean);
          var /= static_cast<double>(width);
          const double inv = 1.0 / std::sqrt(var + kEps);
          for (std::int64_t i = 0; i < width; ++i) ref[r * width + i] = (x[r * width + i] - mean) * inv * w[i] + b[i];
        }
        expect_close(dy.download(act, n), ref, tolerance_for(act), what);
        if (HasFailure()) return;
      }
    }
  }
}

// ---- rope -----------------------------------------------------------------------------------

std::vector<float> inv_freqs(std::int64_t h) {
  std::vector<float> f(static_cast<std::size_t>(h / 2));
  for (std::size_t k = 0; k < f.size(); ++k) {
    f[k] = static_cast<float>(std::pow(10000.0, -2.0 * static_cast<double>(k) / static_cast<double>(h)));
  }
  return f;
}

// Reference rope over x [rows, ldx] (the first heads·h of each row), in double except for the
// angle, which is the f32 product as the backends compute it.
std::vector<double> rope_ref(const std::vector<float>& x, std::int64_t rows, std::int64_t heads, std::int64_t h,
                             std::int64_t ldx, std::int32_t first_pos, const std::vector<float>& inv_freq) {
  std::vector<double> out = to_double(x);
  const std::int64_t half = h / 2;
  for (std::int64_t r = 0; r < rows; ++r) {
    const float pos = static_cast<float>(first_pos + r);
    for (std::int64_t j = 0; j < heads; ++j) {
      for (std::int64_t k = 0; k < half; ++k) {
        const double theta = static_cast<double>(pos * inv_freq[static_cast<std::size_t>(k)]);
        const std::size_t ia = static_cast<std::size_t>(r * ldx + j * h + k), ib = ia + static_cast<std::size_t>(half);
        const double a = x[ia], b = x[ib];
        out[ia] = a * std::cos(theta) - b * std::sin(theta);
        out[ib] = b * std::cos(theta) + a * std::sin(theta);
      }
    }
  }
  return out;
}

TEST_F(CudaKernels, RopeMatchesReference) {
  struct Case {
    std::int64_t rows, heads, h, ldx;
    std::int32_t first_pos;
  };
  const Case cases[] = {
      {1, 8, 256, 8 * 256, 37},          // one decode row, Gemma's head_dim
      {51, 8, 256, 10 * 256, 816},       // q of a fused q|k|v row (stride past the heads)
      {968, 1, 256, 10 * 256, 0},        // k of the fused row, the whole prefix
      {7, 16, 72, 16 * 72, 5},           // head_dim 72 (scalar path: h/2 = 36)
      {5, 3, 74, 3 * 74 + 1, 1000},      // odd half and odd stride
  };
  for (const DType act : kActs) {
    for (const Case& c : cases) {
      const std::string what = std::string("rope act=") + name(act) + " rows=" + std::to_string(c.rows) +
                               " heads=" + std::to_string(c.heads) + " h=" + std::to_string(c.h) +
                               " ldx=" + std::to_string(c.ldx) + " first_pos=" + std::to_string(c.first_pos);
      const std::size_t n = static_cast<std::size_t>(c.rows * c.ldx);
      const auto x = rounded(random_values(n, -2.0f, 2.0f, 10), act);
      const auto f = inv_freqs(c.h);
      DeviceBuffer dx(x, act), df(f, DType::kF32), dpos(sizeof(std::int32_t));
      ASSERT_CUDA(cudaMemcpy(dpos.get(), &c.first_pos, sizeof(c.first_pos), cudaMemcpyHostToDevice));
      settle();
      ASSERT_OK(rope(stream_, dx.get(), act, c.rows, c.heads, c.h, c.ldx, dpos.as<std::int32_t>(), df.as<float>()));
      sync();
      // Elements past heads·h in each row must be untouched: they are part of the reference.
      expect_close(dx.download(act, n), rope_ref(x, c.rows, c.heads, c.h, c.ldx, c.first_pos, f), tolerance_for(act),
                   what);
      if (HasFailure()) return;
    }
  }
}

// ---- element-wise ---------------------------------------------------------------------------

TEST_F(CudaKernels, GegluMatchesReference) {
  for (const DType act : kActs) {
    for (const std::int64_t rows : {1, 7, 51}) {
      for (const std::int64_t f : {4304, 16384, 75}) {
        const std::string what = std::string("geglu act=") + name(act) + " rows=" + std::to_string(rows) +
                                 " f=" + std::to_string(f);
        const std::size_t n = static_cast<std::size_t>(rows * f);
        const auto gu = rounded(random_values(2 * n, -4.0f, 4.0f, 11), act);
        DeviceBuffer dgu(gu, act), dout(n * dtype_size(act));
        ASSERT_OK(geglu(stream_, dgu.get(), rows, f, dout.get(), act));
        sync();
        std::vector<double> ref(n);
        for (std::int64_t r = 0; r < rows; ++r) {
          for (std::int64_t i = 0; i < f; ++i) ref[r * f + i] = gelu_ref(gu[r * 2 * f + i]) * gu[r * 2 * f + f + i];
        }
        expect_close(dout.download(act, n), ref, tolerance_for(act), what);
        if (HasFailure()) return;
      }
    }
  }
}

TEST_F(CudaKernels, BiasGeluMatchesReference) {
  for (const DType act : kActs) {
    for (const std::int64_t rows : {7, 968}) {
      for (const std::int64_t n : {4304, 1152, 75}) {
        for (const bool with_bias : {true, false}) {
          const std::string what = std::string("bias_gelu act=") + name(act) + " rows=" + std::to_string(rows) +
                                   " n=" + std::to_string(n) + (with_bias ? " bias" : " no bias");
          const std::size_t total = static_cast<std::size_t>(rows * n);
          const auto x = rounded(random_values(total, -4.0f, 4.0f, 12), act);
          const auto b = random_values(static_cast<std::size_t>(n), -1.0f, 1.0f, 13);
          DeviceBuffer dx(x, act), db(b, DType::kF32);
          ASSERT_OK(bias_gelu(stream_, dx.get(), act, rows, n, with_bias ? db.as<float>() : nullptr));
          sync();
          std::vector<double> ref(total);
          for (std::size_t i = 0; i < total; ++i) {
            ref[i] = gelu_ref(static_cast<double>(x[i]) + (with_bias ? b[i % static_cast<std::size_t>(n)] : 0.0f));
          }
          expect_close(dx.download(act, total), ref, tolerance_for(act), what);
          if (HasFailure()) return;
        }
      }
    }
  }
}

TEST_F(CudaKernels, BiasActWithRowStrideLeavesPaddingAlone) {
  for (const DType act : kActs) {
    const std::int64_t rows = 5, n = 64, ldx = 80;
    const std::size_t total = static_cast<std::size_t>(rows * ldx);
    const auto x = rounded(random_values(total, -2.0f, 2.0f, 14), act);
    const auto b = random_values(static_cast<std::size_t>(n), -1.0f, 1.0f, 15);
    DeviceBuffer dx(x, act), db(b, DType::kF32);
    ASSERT_OK(bias_act(stream_, dx.get(), act, rows, n, ldx, db.as<float>(), /*gelu=*/false));
    sync();
    std::vector<double> ref = to_double(x);
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t i = 0; i < n; ++i) ref[r * ldx + i] += b[i];
    }
    expect_close(dx.download(act, total), ref, tolerance_for(act), std::string("bias_act ldx act=") + name(act));
  }
}

TEST_F(CudaKernels, GatedAddMatchesReference) {
  for (const DType yt : kActs) {
    for (const std::int64_t rows : {1, 51}) {
      for (const std::int64_t n : {1024, 75}) {
        const std::string what = std::string("gated_add y=") + name(yt) + " rows=" + std::to_string(rows) +
                                 " n=" + std::to_string(n);
        const std::size_t total = static_cast<std::size_t>(rows * n);
        const auto x = random_values(total, -2.0f, 2.0f, 16);
        const auto y = rounded(random_values(total, -2.0f, 2.0f, 17), yt);
        const auto g = random_values(static_cast<std::size_t>(n), -1.0f, 1.0f, 18);
        DeviceBuffer dx(x, DType::kF32), dy(y, yt), dg(g, DType::kF32);
        ASSERT_OK(gated_add(stream_, dx.as<float>(), dy.get(), yt, rows, n, dg.as<float>()));
        sync();
        std::vector<double> ref(total);
        for (std::size_t i = 0; i < total; ++i) {
          ref[i] = static_cast<double>(x[i]) + static_cast<double>(y[i]) * g[i % static_cast<std::size_t>(n)];
        }
        expect_close(dx.download(DType::kF32, total), ref, tolerance_for(DType::kF32), what);
        if (HasFailure()) return;
      }
    }
  }
}

TEST_F(CudaKernels, SiluMatchesReference) {
  for (const DType t : kActs) {
    for (const std::int64_t n : {1, 7, 1000003}) {
      for (const std::size_t offset : {std::size_t{0}, std::size_t{1}}) {  // 1: unaligned, the scalar path
        const std::string what = std::string("silu ") + name(t) + " n=" + std::to_string(n) +
                                 " offset=" + std::to_string(offset);
        const auto x = rounded(random_values(static_cast<std::size_t>(n), -8.0f, 8.0f, 19), t);
        DeviceBuffer dx((static_cast<std::size_t>(n) + offset) * dtype_size(t));
        dx.upload(x, t, offset * dtype_size(t));
        ASSERT_OK(silu(stream_, static_cast<unsigned char*>(dx.get()) + offset * dtype_size(t), t, n));
        sync();
        std::vector<double> ref(x.size());
        for (std::size_t i = 0; i < x.size(); ++i) ref[i] = x[i] / (1.0 + std::exp(-static_cast<double>(x[i])));
        expect_close(dx.download(t, x.size(), offset * dtype_size(t)), ref, tolerance_for(t), what);
        if (HasFailure()) return;
      }
    }
  }
}

TEST_F(CudaKernels, Im2colPatchesMatchesReference) {
  struct Case {
    std::int64_t cams, s, p;
  };
  for (const DType act : kActs) {
    for (const Case c : {Case{2, 28, 14}, Case{1, 224, 14}, Case{3, 30, 7}}) {
      const std::int64_t g = c.s / c.p, pp = 3 * c.p * c.p, rows = c.cams * g * g;
      const auto img = random_values(static_cast<std::size_t>(c.cams * 3 * c.s * c.s), -1.0f, 1.0f, 20);
      DeviceBuffer di(img, DType::kF32), dout(static_cast<std::size_t>(rows * pp) * dtype_size(act));
      ASSERT_OK(im2col_patches(stream_, di.as<float>(), c.cams, c.s, c.p, dout.get(), act));
      sync();
      std::vector<float> ref(static_cast<std::size_t>(rows * pp));
      for (std::int64_t cam = 0; cam < c.cams; ++cam) {
        for (std::int64_t pr = 0; pr < g; ++pr) {
          for (std::int64_t pc = 0; pc < g; ++pc) {
            for (std::int64_t ch = 0; ch < 3; ++ch) {
              for (std::int64_t u = 0; u < c.p; ++u) {
                for (std::int64_t w = 0; w < c.p; ++w) {
                  ref[(cam * g * g + pr * g + pc) * pp + (ch * c.p + u) * c.p + w] =
                      img[((cam * 3 + ch) * c.s + pr * c.p + u) * c.s + pc * c.p + w];
                }
              }
            }
          }
        }
      }
      // A copy: exact, after the one rounding to the activation dtype.
      expect_close(dout.download(act, ref.size()), to_double(rounded(ref, act)), Tolerance{0, 0, 0},
                   std::string("im2col_patches act=") + name(act) + " s=" + std::to_string(c.s) +
                       " p=" + std::to_string(c.p));
    }
  }
}

TEST_F(CudaKernels, AddPeriodicRowsMatchesReference) {
  for (const std::int64_t width : {1152, 75}) {
    const std::int64_t rows = 600, period = 256;
    const auto x = random_values(static_cast<std::size_t>(rows * width), -1.0f, 1.0f, 21);
    const auto t = random_values(static_cast<std::size_t>(period * width), -1.0f, 1.0f, 22);
    DeviceBuffer dx(x, DType::kF32), dt(t, DType::kF32);
    ASSERT_OK(add_periodic_rows(stream_, dx.as<float>(), rows, width, dt.as<float>(), period));
    sync();
    std::vector<double> ref(x.size());
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t i = 0; i < width; ++i) {
        ref[r * width + i] = static_cast<double>(x[r * width + i] + t[(r % period) * width + i]);
      }
    }
    expect_close(dx.download(DType::kF32, x.size()), ref, Tolerance{0, 0, 0},
                 "add_periodic_rows width=" + std::to_string(width));
  }
}

TEST_F(CudaKernels, EmbedTokensMatchesReference) {
  for (const DType tt : {DType::kF32, DType::kBF16, DType::kF16}) {
    for (const std::int64_t width : {2048, 75}) {
      const std::int64_t vocab = 1000;
      const std::vector<std::int32_t> ids = {0, 999, 5, -1, 1000, 17, 17, 3, 512, 998, 1, 2, 42};
      const std::int64_t n = static_cast<std::int64_t>(ids.size());
      const auto table = rounded(random_values(static_cast<std::size_t>(vocab * width), -1.0f, 1.0f, 23), tt);
      const float scale = std::sqrt(static_cast<float>(width));
      DeviceBuffer dt(table, tt), dids(ids.size() * sizeof(std::int32_t)), dout(static_cast<std::size_t>(n * width) * 4);
      ASSERT_CUDA(cudaMemcpy(dids.get(), ids.data(), ids.size() * sizeof(std::int32_t), cudaMemcpyHostToDevice));
      settle();
      ASSERT_OK(embed_tokens(stream_, dids.as<std::int32_t>(), n, dt.get(), tt, vocab, width, scale, dout.as<float>()));
      sync();
      std::vector<double> ref(static_cast<std::size_t>(n * width), 0.0);
      for (std::int64_t r = 0; r < n; ++r) {
        const std::int32_t id = ids[static_cast<std::size_t>(r)];
        if (id < 0 || id >= vocab) continue;
        for (std::int64_t i = 0; i < width; ++i) ref[r * width + i] = table[id * width + i] * scale;
      }
      expect_close(dout.download(DType::kF32, ref.size()), ref, Tolerance{0, 0, 0},
                   std::string("embed_tokens table=") + name(tt) + " width=" + std::to_string(width));
    }
  }
}

TEST_F(CudaKernels, ConvertIsExactRounding) {
  const DType types[] = {DType::kF32, DType::kBF16, DType::kF16};
  for (const DType st : types) {
    for (const DType dt : types) {
      for (const std::size_t offset : {std::size_t{0}, std::size_t{1}}) {
        const std::size_t n = 1001;
        const auto src = rounded(random_values(n, -100.0f, 100.0f, 24), st);
        DeviceBuffer ds((n + offset) * dtype_size(st)), dd((n + offset) * dtype_size(dt));
        ds.upload(src, st, offset * dtype_size(st));
        ASSERT_OK(convert(stream_, static_cast<unsigned char*>(ds.get()) + offset * dtype_size(st), st,
                          static_cast<unsigned char*>(dd.get()) + offset * dtype_size(dt), dt,
                          static_cast<std::int64_t>(n)));
        sync();
        expect_close(dd.download(dt, n, offset * dtype_size(dt)), to_double(rounded(src, dt)), Tolerance{0, 0, 0},
                     std::string("convert ") + name(st) + " -> " + name(dt) + " offset=" + std::to_string(offset));
      }
    }
  }
}

TEST_F(CudaKernels, EulerStepMatchesReference) {
  for (const std::int64_t n : {5, 1000003}) {
    for (const bool copy_v : {false, true}) {
      const auto x = random_values(static_cast<std::size_t>(n), -1.0f, 1.0f, 25);
      const auto v = random_values(static_cast<std::size_t>(n), -1.0f, 1.0f, 26);
      const float dt = -0.1f;
      DeviceBuffer dx(x, DType::kF32), dv(v, DType::kF32), dvo(static_cast<std::size_t>(n) * 4);
      ASSERT_OK(euler_step(stream_, dx.as<float>(), dv.as<float>(), dt, n, copy_v ? dvo.as<float>() : nullptr));
      sync();
      std::vector<double> ref(x.size());
      for (std::size_t i = 0; i < x.size(); ++i) ref[i] = static_cast<double>(x[i] + dt * v[i]);
      expect_close(dx.download(DType::kF32, x.size()), ref, tolerance_for(DType::kF32),
                   "euler_step n=" + std::to_string(n));
      if (copy_v) {
        expect_close(dvo.download(DType::kF32, v.size()), to_double(v), Tolerance{0, 0, 0}, "euler_step v_out");
      }
    }
  }
}

TEST_F(CudaKernels, AddBiasMatchesReference) {
  for (const std::int64_t n : {1152, 75}) {
    for (const bool in_place : {false, true}) {
      const std::int64_t rows = 51;
      const auto x = random_values(static_cast<std::size_t>(rows * n), -1.0f, 1.0f, 27);
      const auto b = random_values(static_cast<std::size_t>(n), -1.0f, 1.0f, 28);
      DeviceBuffer din(x, DType::kF32), db(b, DType::kF32), dout(x.size() * 4);
      float* out = in_place ? din.as<float>() : dout.as<float>();
      ASSERT_OK(add_bias(stream_, din.as<float>(), rows, n, db.as<float>(), out));
      sync();
      std::vector<double> ref(x.size());
      for (std::size_t i = 0; i < x.size(); ++i) ref[i] = static_cast<double>(x[i] + b[i % static_cast<std::size_t>(n)]);
      expect_close((in_place ? din : dout).download(DType::kF32, x.size()), ref, Tolerance{0, 0, 0},
                   "add_bias n=" + std::to_string(n) + (in_place ? " in place" : ""));
    }
  }
}

TEST_F(CudaKernels, CountNonfiniteAddsToCount) {
  for (const std::size_t offset : {std::size_t{0}, std::size_t{1}}) {
    const std::size_t n = 100003;
    auto x = random_values(n, -1.0f, 1.0f, 29);
    x[5] = INFINITY;
    x[77777] = -INFINITY;
    x[n - 1] = NAN;  // in the tail chunk
    DeviceBuffer dx((n + offset) * 4), dc(sizeof(std::int32_t));
    dx.upload(x, DType::kF32, offset * 4);
    const std::int32_t start = 4;
    ASSERT_CUDA(cudaMemcpy(dc.get(), &start, sizeof(start), cudaMemcpyHostToDevice));
    settle();
    ASSERT_OK(count_nonfinite(stream_, dx.as<float>() + offset, static_cast<std::int64_t>(n), dc.as<std::int32_t>()));
    sync();
    std::int32_t count = 0;
    ASSERT_CUDA(cudaMemcpy(&count, dc.get(), sizeof(count), cudaMemcpyDeviceToHost));
    EXPECT_EQ(count, 7) << "offset " << offset;
  }
}

// ---- GEMM -----------------------------------------------------------------------------------

struct GemmCase {
  std::int64_t m, n, k, lda, ldb, ldd;
};

// alpha·A·Bᵀ in double, A [m, lda], B [n, ldb].
std::vector<double> matmul_ref(const GemmCase& c, const std::vector<float>& a, const std::vector<float>& b) {
  std::vector<double> out(static_cast<std::size_t>(c.m * c.n));
  for (std::int64_t i = 0; i < c.m; ++i) {
    for (std::int64_t j = 0; j < c.n; ++j) {
      double s = 0.0;
      const float* ar = a.data() + i * c.lda;
      const float* br = b.data() + j * c.ldb;
      for (std::int64_t p = 0; p < c.k; ++p) s += static_cast<double>(ar[p]) * br[p];
      out[static_cast<std::size_t>(i * c.n + j)] = s;
    }
  }
  return out;
}

TEST_F(CudaKernels, GemmMatchesReferenceInEveryDtypeCombination) {
  auto blas = Blas::create();
  ASSERT_TRUE(blas.has_value()) << blas.status().to_string();
  Blas& b = **blas;
  std::printf("[ info ] %s\n", b.epilogue_report().c_str());
  const GemmCase cases[] = {
      {1, 1024, 2048, 2048, 2048, 1024},     // one action row against an action-expert weight
      {7, 72, 72, 72, 72, 72},               // tiny
      {51, 4304, 1152, 1152, 1152, 4304},    // SigLIP-like MLP width
      {968, 256, 160, 160, 160, 256},        // many rows
      {33, 1000, 328, 336, 344, 1008},       // strided views (lda, ldb, ldd past the sizes)
  };
  struct Combo {
    DType ab, d;
  };
  const Combo combos[] = {{DType::kBF16, DType::kBF16}, {DType::kBF16, DType::kF32}, {DType::kF32, DType::kF32}};
  struct Variant {
    float alpha, beta;
    bool bias;
    Epilogue ep;
    const char* label;
  };
  const Variant variants[] = {
      {1.0f, 0.0f, false, Epilogue::kNone, "plain"},
      {1.0f, 0.0f, true, Epilogue::kNone, "bias"},
      {1.0f, 1.0f, false, Epilogue::kNone, "beta=1"},
      {0.5f, 1.0f, true, Epilogue::kNone, "alpha=0.5 beta=1 bias"},
      {1.0f, 0.0f, false, Epilogue::kGeluTanh, "gelu"},
      {1.0f, 0.0f, true, Epilogue::kGeluTanh, "bias gelu"},
  };
  for (const GemmCase& c : cases) {
    const auto a_src = random_values(static_cast<std::size_t>(c.m * c.lda), -1.0f, 1.0f, 30);
    const auto b_src = random_values(static_cast<std::size_t>(c.n * c.ldb), -1.0f, 1.0f, 31);
    const auto bias = random_values(static_cast<std::size_t>(c.n), -1.0f, 1.0f, 32);
    const auto d0_src = random_values(static_cast<std::size_t>(c.m * c.ldd), -1.0f, 1.0f, 33);
    DeviceBuffer dbias(bias, DType::kF32);
    for (const DType ab : {DType::kBF16, DType::kF32}) {
      const auto a = rounded(a_src, ab);
      const auto bw = rounded(b_src, ab);
      const auto acc = matmul_ref(c, a, bw);
      DeviceBuffer da(a, ab), db(bw, ab);
      for (const Combo& combo : combos) {
        if (combo.ab != ab) continue;
        const DType dt = combo.d;
        const auto d0 = rounded(d0_src, dt);
        for (const Variant& v : variants) {
          const std::string what = std::string("gemm m=") + std::to_string(c.m) + " n=" + std::to_string(c.n) +
                                   " k=" + std::to_string(c.k) + " ab=" + name(ab) + " d=" + name(dt) + " " + v.label;
          DeviceBuffer dd(d0, dt);
          GemmArgs g;
          g.m = c.m, g.n = c.n, g.k = c.k;
          g.a = da.get(), g.a_type = ab, g.lda = c.lda;
          g.b = db.get(), g.b_type = ab, g.ldb = c.ldb;
          g.d = dd.get(), g.d_type = dt, g.ldd = c.ldd;
          g.alpha = v.alpha, g.beta = v.beta;
          g.bias = v.bias ? dbias.as<float>() : nullptr;
          g.epilogue = v.ep;
          ASSERT_OK(b.gemm(stream_, g));
          sync();
          // Reference over the whole D buffer: columns past n keep their initial values.
          std::vector<double> ref = to_double(d0);
          double sq = 0.0;
          for (std::int64_t i = 0; i < c.m; ++i) {
            for (std::int64_t j = 0; j < c.n; ++j) {
              double r = v.alpha * acc[static_cast<std::size_t>(i * c.n + j)] + v.beta * d0[i * c.ldd + j];
              if (v.bias) r += bias[static_cast<std::size_t>(j)];
              if (v.ep == Epilogue::kGeluTanh) r = gelu_ref(r);
              ref[static_cast<std::size_t>(i * c.ldd + j)] = r;
              sq += r * r;
            }
          }
          const double rms = std::sqrt(sq / static_cast<double>(c.m * c.n));
          // f32 D: f32 accumulation over k terms; bf16 D: one bf16 rounding on top.
          const Tolerance tol = dt == DType::kF32 ? Tolerance{1e-5, 2e-5 * rms, 1e-5} : Tolerance{1e-2, 1e-2 * rms, 1e-2};
          expect_close(dd.download(dt, d0.size()), ref, tol, what);
          if (HasFailure()) return;
        }
      }
    }
  }
  // Every shape × combination × (epilogue, bias, alpha/beta) planned once; a repeat adds none.
  const std::size_t plans = b.cached_plans();
  EXPECT_GT(plans, 0u);
  {
    const GemmCase& c = cases[0];
    DeviceBuffer da(static_cast<std::size_t>(c.m * c.lda) * 2), db(static_cast<std::size_t>(c.n * c.ldb) * 2),
        dd(static_cast<std::size_t>(c.m * c.ldd) * 2);
    ASSERT_CUDA(cudaMemset(da.get(), 0, static_cast<std::size_t>(c.m * c.lda) * 2));
    ASSERT_CUDA(cudaMemset(db.get(), 0, static_cast<std::size_t>(c.n * c.ldb) * 2));
    settle();
    GemmArgs g;
    g.m = c.m, g.n = c.n, g.k = c.k, g.a = da.get(), g.lda = c.lda, g.b = db.get(), g.ldb = c.ldb, g.d = dd.get(),
    g.ldd = c.ldd;
    ASSERT_OK(b.gemm(stream_, g));
    sync();
  }
  EXPECT_EQ(b.cached_plans(), plans);
}

// ---- graph capture --------------------------------------------------------------------------

TEST_F(CudaKernels, CapturedGraphReplaysTheSameResults) {
  auto blas_or = Blas::create();
  ASSERT_TRUE(blas_or.has_value()) << blas_or.status().to_string();
  Blas& blas = **blas_or;
  const std::int64_t m = 51, width = 1024, f = 4096, heads = 8, h = 256;
  const DType act = DType::kBF16;
  const auto x0 = random_values(static_cast<std::size_t>(m * width), -1.0f, 1.0f, 40);
  const auto res = rounded(random_values(static_cast<std::size_t>(m * width), -1.0f, 1.0f, 41), act);
  const auto w_norm = random_values(static_cast<std::size_t>(width), -0.2f, 0.2f, 42);
  const auto w_up = rounded(random_values(static_cast<std::size_t>(2 * f * width), -0.05f, 0.05f, 43), act);
  const auto b_up = random_values(static_cast<std::size_t>(2 * f), -0.1f, 0.1f, 44);
  const auto w_down = rounded(random_values(static_cast<std::size_t>(width * f), -0.02f, 0.02f, 45), act);
  const auto q0 = rounded(random_values(static_cast<std::size_t>(m * heads * h), -1.0f, 1.0f, 46), act);
  const auto freqs = inv_freqs(h);
  DeviceBuffer dx0(x0, DType::kF32), dx(x0.size() * 4), dres(res, act), dwn(w_norm, DType::kF32);
  DeviceBuffer dwu(w_up, act), dbu(b_up, DType::kF32), dwd(w_down, act);
  DeviceBuffer dy(static_cast<std::size_t>(m * width) * 2), dgu(static_cast<std::size_t>(m * 2 * f) * 2),
      dh(static_cast<std::size_t>(m * f) * 2);
  DeviceBuffer dq0(q0, act), dq(q0.size() * 2), dfreq(freqs, DType::kF32), dpos(sizeof(std::int32_t));
  std::int32_t pos = 11;
  ASSERT_CUDA(cudaMemcpy(dpos.get(), &pos, sizeof(pos), cudaMemcpyHostToDevice));
  settle();

  // One transformer-ish block: copy-in, residual + norm, up GEMM (bias), GeGLU, down GEMM
  // accumulating into the f32 stream, and rope on a copy of q at the device position.
  const auto block = [&]() -> Status {
    EDGEVLA_RETURN_IF_ERROR(convert(stream_, dx0.get(), DType::kF32, dx.get(), DType::kF32, m * width));
    EDGEVLA_RETURN_IF_ERROR(
        rms_norm(stream_, dx.as<float>(), dres.get(), act, m, width, dwn.as<float>(), kEps, dy.get(), act));
    GemmArgs up;
    up.m = m, up.n = 2 * f, up.k = width;
    up.a = dy.get(), up.lda = width, up.b = dwu.get(), up.ldb = width, up.d = dgu.get(), up.ldd = 2 * f;
    up.bias = dbu.as<float>();
    EDGEVLA_RETURN_IF_ERROR(blas.gemm(stream_, up));
    EDGEVLA_RETURN_IF_ERROR(geglu(stream_, dgu.get(), m, f, dh.get(), act));
    GemmArgs down;
    down.m = m, down.n = width, down.k = f;
    down.a = dh.get(), down.lda = f, down.b = dwd.get(), down.ldb = f, down.d = dx.get(), down.ldd = width;
    down.d_type = DType::kF32, down.beta = 1.0f;
    EDGEVLA_RETURN_IF_ERROR(blas.gemm(stream_, down));
    EDGEVLA_RETURN_IF_ERROR(convert(stream_, dq0.get(), act, dq.get(), act, m * heads * h));
    return rope(stream_, dq.get(), act, m, heads, h, heads * h, dpos.as<std::int32_t>(), dfreq.as<float>());
  };

  ASSERT_OK(block());  // warm-up: plans both GEMMs
  sync();
  const auto x_eager = dx.download(DType::kF32, x0.size());
  const auto h_eager = dh.download(act, static_cast<std::size_t>(m * f));
  const auto q_eager = dq.download(act, q0.size());
  const std::size_t plans = blas.cached_plans();

  ASSERT_CUDA(cudaMemset(dx.get(), 0, x0.size() * 4));
  ASSERT_CUDA(cudaMemset(dh.get(), 0, static_cast<std::size_t>(m * f) * 2));
  ASSERT_CUDA(cudaMemset(dq.get(), 0, q0.size() * 2));
  settle();

  cudaGraph_t graph = nullptr;
  ASSERT_CUDA(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeGlobal));
  const Status captured = block();
  const cudaError_t end = cudaStreamEndCapture(stream_, &graph);
  ASSERT_OK(captured);
  ASSERT_CUDA(end);
  EXPECT_EQ(blas.cached_plans(), plans) << "capture must not plan";
  cudaGraphExec_t exec = nullptr;
  ASSERT_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  ASSERT_CUDA(cudaGraphLaunch(exec, stream_));
  sync();
  const auto same = [](const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
  };
  EXPECT_TRUE(same(dx.download(DType::kF32, x0.size()), x_eager)) << "x after replay";
  EXPECT_TRUE(same(dh.download(act, static_cast<std::size_t>(m * f)), h_eager)) << "GeGLU output after replay";
  EXPECT_TRUE(same(dq.download(act, q0.size()), q_eager)) << "rope output after replay";

  // The position is read on the device at replay: a new first_pos changes the replayed rope.
  pos = 300;
  ASSERT_CUDA(cudaMemcpy(dpos.get(), &pos, sizeof(pos), cudaMemcpyHostToDevice));
  settle();
  ASSERT_CUDA(cudaGraphLaunch(exec, stream_));
  sync();
  expect_close(dq.download(act, q0.size()), rope_ref(q0, m, heads, h, heads * h, pos, freqs), tolerance_for(act),
               "rope after replay at first_pos 300");
  // Replays are repeatable: the same inputs give the same x again.
  EXPECT_TRUE(same(dx.download(DType::kF32, x0.size()), x_eager)) << "x after a second replay";
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

TEST_F(CudaKernels, GemmOfAnUnplannedShapeInsideCaptureIsAnError) {
  auto blas_or = Blas::create();
  ASSERT_TRUE(blas_or.has_value()) << blas_or.status().to_string();
  DeviceBuffer a(64 * 64 * 2), b(64 * 64 * 2), d(64 * 64 * 2);
  GemmArgs g;
  g.m = 64, g.n = 64, g.k = 64, g.a = a.get(), g.lda = 64, g.b = b.get(), g.ldb = 64, g.d = d.get(), g.ldd = 64;
  cudaGraph_t graph = nullptr;
  ASSERT_CUDA(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeGlobal));
  const Status s = (*blas_or)->gemm(stream_, g);
  ASSERT_CUDA(cudaStreamEndCapture(stream_, &graph));
  if (graph != nullptr) cudaGraphDestroy(graph);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.to_string();
  EXPECT_NE(s.message().find("m=64"), std::string::npos) << s.message();
  EXPECT_EQ((*blas_or)->cached_plans(), 0u);
}

// ---- errors ---------------------------------------------------------------------------------

TEST_F(CudaKernels, BadDtypesAndSizesAreInvalidArguments) {
  DeviceBuffer buf(1 << 20);
  float* f = buf.as<float>();
  const auto invalid = [](const Status& s, const char* kernel) {
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
    EXPECT_NE(s.message().find(kernel), std::string::npos) << s.message();
  };
  invalid(rms_norm(stream_, f, nullptr, DType::kF32, 4, 64, f, kEps, f, DType::kI32), "rms_norm");
  invalid(rms_norm(stream_, f, f, DType::kU8, 4, 64, f, kEps, f, DType::kBF16), "rms_norm");
  invalid(rms_norm(stream_, f, nullptr, DType::kF32, -1, 64, f, kEps, f, DType::kF32), "rms_norm");
  invalid(ada_rms_norm(stream_, f, 4, 64, f, f, kEps, f, DType::kF16), "ada_rms_norm");
  invalid(layer_norm(stream_, f, 4, 64, f, f, kEps, f, DType::kF64), "layer_norm");
  invalid(rope(stream_, f, DType::kBF16, 4, 2, 63, 126, nullptr, f), "rope");
  invalid(rope(stream_, f, DType::kI8, 4, 2, 64, 128, reinterpret_cast<const std::int32_t*>(f), f), "rope");
  invalid(geglu(stream_, f, 4, 64, f, DType::kF16), "geglu");
  invalid(bias_gelu(stream_, f, DType::kI64, 4, 64, nullptr), "bias_gelu");
  invalid(gated_add(stream_, f, f, DType::kF64, 4, 64, f), "gated_add");
  invalid(silu(stream_, f, DType::kBool, 64), "silu");
  invalid(im2col_patches(stream_, f, 1, 28, 0, f, DType::kF32), "im2col_patches");
  invalid(embed_tokens(stream_, reinterpret_cast<const std::int32_t*>(f), 4, f, DType::kI32, 10, 64, 1.0f, f),
          "embed_tokens");
  invalid(convert(stream_, f, DType::kF32, f, DType::kU16, 64), "convert");
  invalid(euler_step(stream_, f, f, 0.1f, -5, nullptr), "euler_step");
  invalid(add_periodic_rows(stream_, f, 4, 64, f, 0), "add_periodic_rows");

  auto blas_or = Blas::create();
  ASSERT_TRUE(blas_or.has_value()) << blas_or.status().to_string();
  GemmArgs g;
  g.m = 4, g.n = 64, g.k = 64, g.a = f, g.lda = 64, g.b = f, g.ldb = 64, g.d = f, g.ldd = 64;
  g.a_type = DType::kU8;
  invalid((*blas_or)->gemm(stream_, g), "gemm m=4 n=64 k=64");
  g.a_type = DType::kF32, g.b_type = DType::kF32, g.d_type = DType::kBF16;  // f32 operands need an f32 D
  invalid((*blas_or)->gemm(stream_, g), "gemm");
  g.a_type = DType::kBF16, g.b_type = DType::kBF16, g.d_type = DType::kBF16;
  g.epilogue = Epilogue::kGeluTanh, g.beta = 1.0f;
  invalid((*blas_or)->gemm(stream_, g), "gemm");
  g.epilogue = Epilogue::kNone, g.beta = 0.0f, g.lda = 32;
  invalid((*blas_or)->gemm(stream_, g), "lda=32");
  EXPECT_EQ((*blas_or)->cached_plans(), 0u);
  sync();
}

// ---- timing (printed, not asserted) ---------------------------------------------------------

// Mean time of one `launch` (µs), from a CUDA graph of `per_graph` launches replayed `reps`
// times (no launch overhead between kernels, as in the engines).
template <class F>
double time_us(cudaStream_t stream, int per_graph, int reps, F&& launch) {
  if (!launch().is_ok()) return -1.0;  // warm-up (plans GEMMs)
  cudaStreamSynchronize(stream);
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal);
  bool ok = true;
  for (int i = 0; i < per_graph; ++i) ok = ok && launch().is_ok();
  cudaStreamEndCapture(stream, &graph);
  if (!ok || graph == nullptr || cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess) return -1.0;
  cudaGraphLaunch(exec, stream);  // warm
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  cudaEventRecord(start, stream);
  for (int r = 0; r < reps; ++r) cudaGraphLaunch(exec, stream);
  cudaEventRecord(stop, stream);
  cudaEventSynchronize(stop);
  float ms = 0.0f;
  cudaEventElapsedTime(&ms, start, stop);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  return 1000.0 * static_cast<double>(ms) / (per_graph * reps);
}

TEST_F(CudaKernels, TimingPrintout) {
  auto blas_or = Blas::create();
  ASSERT_TRUE(blas_or.has_value()) << blas_or.status().to_string();
  Blas& blas = **blas_or;
  const auto report = [](const char* what, double us, double bytes) {
    std::printf("[ time ] %-52s %8.2f us  %7.0f GB/s\n", what, us, us > 0 ? bytes / (us * 1e3) : 0.0);
  };
  {
    const std::int64_t m = 51, n = 8192, k = 1024;
    DeviceBuffer a(random_values(static_cast<std::size_t>(m * k), -1, 1, 50), DType::kBF16);
    DeviceBuffer w(random_values(static_cast<std::size_t>(n * k), -1, 1, 51), DType::kBF16);
    DeviceBuffer d(static_cast<std::size_t>(m * n) * 4);
    for (const DType dt : {DType::kBF16, DType::kF32}) {
      GemmArgs g;
      g.m = m, g.n = n, g.k = k, g.a = a.get(), g.lda = k, g.b = w.get(), g.ldb = k, g.d = d.get(), g.ldd = n;
      g.d_type = dt;
      g.beta = dt == DType::kF32 ? 1.0f : 0.0f;
      const double us = time_us(stream_, 20, 20, [&] { return blas.gemm(stream_, g); });
      const double bytes = static_cast<double>(n * k * 2 + m * k * 2) +
                           static_cast<double>(m * n) * dtype_size(dt) * (dt == DType::kF32 ? 2 : 1);
      report(dt == DType::kBF16 ? "gemm 51x8192x1024 bf16 -> bf16" : "gemm 51x8192x1024 bf16 -> f32 (beta=1)", us,
             bytes);
      std::printf("[ time ]   (%.1f TFLOP/s)\n", us > 0 ? 2.0 * m * n * k / (us * 1e6) : 0.0);
    }
  }
  {
    const std::int64_t rows = 968, width = 2048;
    DeviceBuffer x(random_values(static_cast<std::size_t>(rows * width), -1, 1, 52), DType::kF32);
    DeviceBuffer r(random_values(static_cast<std::size_t>(rows * width), -1, 1, 53), DType::kBF16);
    DeviceBuffer w(random_values(static_cast<std::size_t>(width), -1, 1, 54), DType::kF32);
    DeviceBuffer y(static_cast<std::size_t>(rows * width) * 4);
    const double elems = static_cast<double>(rows * width);
    report("rms_norm 968x2048 f32 -> bf16",
           time_us(stream_, 50, 20,
                   [&] { return rms_norm(stream_, x.as<float>(), nullptr, DType::kF32, rows, width, w.as<float>(),
                                         kEps, y.get(), DType::kBF16); }),
           elems * (4 + 2));
    report("rms_norm 968x2048 f32 + bf16 residual -> bf16",
           time_us(stream_, 50, 20,
                   [&] { return rms_norm(stream_, x.as<float>(), r.get(), DType::kBF16, rows, width, w.as<float>(),
                                         kEps, y.get(), DType::kBF16); }),
           elems * (4 + 2 + 4 + 2));
    report("rms_norm 968x2048 f32 -> f32",
           time_us(stream_, 50, 20,
                   [&] { return rms_norm(stream_, x.as<float>(), nullptr, DType::kF32, rows, width, w.as<float>(),
                                         kEps, y.get(), DType::kF32); }),
           elems * (4 + 4));
  }
  {
    const std::int64_t rows = 968, f = 16384;
    DeviceBuffer gu(static_cast<std::size_t>(rows * 2 * f) * 2), out(static_cast<std::size_t>(rows * f) * 2);
    ASSERT_CUDA(cudaMemset(gu.get(), 0, static_cast<std::size_t>(rows * 2 * f) * 2));
    settle();
    report("geglu 968x16384 bf16",
           time_us(stream_, 20, 10, [&] { return geglu(stream_, gu.get(), rows, f, out.get(), DType::kBF16); }),
           static_cast<double>(rows * f) * 2 * 3);
  }
}

}  // namespace
}  // namespace edgevla::backends::cuda
