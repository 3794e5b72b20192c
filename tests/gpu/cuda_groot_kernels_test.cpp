// The GR00T kernels of the cuda backend (kernels/groot_kernels.hpp) against plain host
// references written here, in f32 and bf16 where they take both: Qwen3 RMSNorm over rows and per
// head in place, Qwen3's fused q/k norm + RoPE + key|value packing, SwiGLU, ReLU/SiLU/erf-GELU, row
// gathers, the Euler step's end, SigLIP2 patches, the interpolated grid positions, pixel unshuffle
// and transpose. Each
// prints its worst error. Without a CUDA device every test skips itself (the test main then reports
// "not run").
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "runtime/backends/cuda/kernels/groot_kernels.hpp"
#include "runtime/backends/cuda/kernels/kernels.hpp"
#include "runtime/core/dtype.hpp"

namespace edgevla::backends::cuda {
namespace {

bool gpu_present() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

std::vector<float> random_values(std::size_t n, float lo, float hi, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// Host values <-> device bytes of dtype t (f32 or bf16).
std::vector<unsigned char> pack(const std::vector<float>& v, DType t) {
  std::vector<unsigned char> out(v.size() * dtype_size(t));
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (t == DType::kF32) {
      std::memcpy(out.data() + i * 4, &v[i], 4);
    } else {
      const std::uint16_t b = float_to_bfloat16(v[i]);
      std::memcpy(out.data() + i * 2, &b, 2);
    }
  }
  return out;
}
std::vector<float> unpack(const std::vector<unsigned char>& b, DType t) {
  std::vector<float> out(b.size() / dtype_size(t));
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (t == DType::kF32) {
      std::memcpy(&out[i], b.data() + i * 4, 4);
    } else {
      std::uint16_t h;
      std::memcpy(&h, b.data() + i * 2, 2);
      out[i] = bfloat16_to_float(h);
    }
  }
  return out;
}
std::vector<float> rounded(const std::vector<float>& v, DType t) { return unpack(pack(v, t), t); }

class Dev {
 public:
  explicit Dev(std::size_t bytes) {
    EXPECT_EQ(cudaMalloc(&p_, std::max<std::size_t>(bytes, 16)), cudaSuccess);
  }
  Dev(const std::vector<float>& v, DType t) : Dev(v.size() * dtype_size(t)) {
    const auto b = pack(v, t);
    EXPECT_EQ(cudaMemcpy(p_, b.data(), b.size(), cudaMemcpyHostToDevice), cudaSuccess);
  }
  Dev(const Dev&) = delete;
  Dev& operator=(const Dev&) = delete;
  ~Dev() { cudaFree(p_); }
  void* get() const { return p_; }
  std::vector<float> download(DType t, std::size_t n) const {
    std::vector<unsigned char> b(n * dtype_size(t));
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(b.data(), p_, b.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    return unpack(b, t);
  }

 private:
  void* p_ = nullptr;
};

// Worst |got - want| / (atol + rtol·|want|) over the elements; <= 1 passes.
void expect_close(const std::vector<float>& got, const std::vector<double>& want, DType t,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  const double tol = t == DType::kF32 ? 1e-5 : 1e-2;
  double worst = 0, worst_abs = 0;
  std::size_t at = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double d = std::fabs(static_cast<double>(got[i]) - want[i]);
    const double r = d / (tol + tol * std::fabs(want[i]));
    if (!(r <= worst)) {
      worst = std::isnan(r) ? 1e30 : r;
      worst_abs = d;
      at = i;
    }
  }
  std::printf("  %-48s worst |err| %.2e (%.2f of the tolerance)\n", what.c_str(), worst_abs, worst);
  EXPECT_LE(worst, 1.0) << what << ": element " << at << " got " << got[at] << " want " << want[at];
}

const char* name(DType t) { return t == DType::kF32 ? "f32" : "bf16"; }
constexpr DType kActs[] = {DType::kF32, DType::kBF16};

class CudaGrootKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!gpu_present()) GTEST_SKIP() << "no CUDA device here (cudaGetDeviceCount found none)";
  }
  cudaStream_t s_ = nullptr;  // the legacy stream: ordered with the plain copies
};

TEST_F(CudaGrootKernels, RmsNormRowsAndHeads) {
  for (const DType act : kActs) {
    // Rows: f32 x [rows, width] -> act y.
    const std::int64_t rows = 37, width = 2048, tokens = 29, H = 16, K = 8, h = 128,
                       Q = (H + 2 * K) * h;
    const auto x = random_values(static_cast<std::size_t>(rows * width), -2, 2, 1);
    const auto w = random_values(static_cast<std::size_t>(width), 0.5f, 1.5f, 2);
    Dev dx(x, DType::kF32), dw(w, DType::kF32), dy(static_cast<std::size_t>(rows * width) * 4);
    ASSERT_TRUE(rms_norm_rows(s_, dx.get(), DType::kF32, width, rows, 1, width,
                              static_cast<float*>(dw.get()), 1e-6f, dy.get(), act, width)
                    .is_ok());
    std::vector<double> ref(x.size());
    for (std::int64_t r = 0; r < rows; ++r) {
      double ss = 0;
      for (std::int64_t i = 0; i < width; ++i)
        ss += static_cast<double>(x[r * width + i]) * x[r * width + i];
      const double inv = 1.0 / std::sqrt(ss / width + 1e-6);
      for (std::int64_t i = 0; i < width; ++i) ref[r * width + i] = x[r * width + i] * inv * w[i];
    }
    expect_close(dy.download(act, x.size()), ref, act,
                 std::string("rms_norm_rows rows ") + name(act));
    // Heads in place: the k heads of a q|k|v row block [tokens, Q].
    const auto qkv = rounded(random_values(static_cast<std::size_t>(tokens * Q), -3, 3, 3), act);
    const auto kw = random_values(static_cast<std::size_t>(h), 0.5f, 1.5f, 4);
    Dev dq(qkv, act), dkw(kw, DType::kF32);
    auto* k = static_cast<unsigned char*>(dq.get()) + H * h * dtype_size(act);
    ASSERT_TRUE(rms_norm_rows(s_, k, act, Q, tokens * K, K, h, static_cast<float*>(dkw.get()),
                              1e-6f, k, act, Q)
                    .is_ok());
    std::vector<double> want(qkv.begin(), qkv.end());
    for (std::int64_t t = 0; t < tokens; ++t) {
      for (std::int64_t j = 0; j < K; ++j) {
        const std::int64_t base = t * Q + (H + j) * h;
        double ss = 0;
        for (std::int64_t i = 0; i < h; ++i)
          ss += static_cast<double>(qkv[base + i]) * qkv[base + i];
        const double inv = 1.0 / std::sqrt(ss / h + 1e-6);
        for (std::int64_t i = 0; i < h; ++i) want[base + i] = qkv[base + i] * inv * kw[i];
      }
    }
    expect_close(dq.download(act, qkv.size()), want, act,
                 std::string("rms_norm_rows per head in place ") + name(act));
  }
}

// Qwen3's q/k norm, RoPE and key|value packing: padding rows (key_limit 0) write no key, real
// rows land at their rank; q is normalised and rotated in place. Head dims 16, 128 and 192 take
// the paired form (one and two pairs a lane), 18 the scalar one.
TEST_F(CudaGrootKernels, QwenQkNormRopeAndPacking) {
  for (const DType act : kActs) {
    for (const std::int64_t h :
         {std::int64_t{16}, std::int64_t{18}, std::int64_t{128}, std::int64_t{192}}) {
      const std::int64_t rows = 21, H = 4, K = 2, Q = (H + 2 * K) * h, half = h / 2;
      const auto qkv = rounded(random_values(static_cast<std::size_t>(rows * Q), -3, 3, 21), act);
      const auto qw = random_values(static_cast<std::size_t>(h), 0.5f, 1.5f, 22);
      const auto kw = random_values(static_cast<std::size_t>(h), 0.5f, 1.5f, 23);
      std::vector<float> inv(static_cast<std::size_t>(half));
      for (std::int64_t i = 0; i < half; ++i) {
        inv[i] = 1.0f / std::pow(1e6f, static_cast<float>(2 * i) / static_cast<float>(h));
      }
      std::vector<std::int32_t> limit(static_cast<std::size_t>(rows), 0);
      std::int32_t rank = 0;
      for (std::int64_t r = 0; r < rows; ++r) {
        if (r >= 3 && r % 5 != 0) limit[r] = ++rank;  // left padding 0..2 and holes at 5, 10, ...
      }
      const std::vector<float> zeros(static_cast<std::size_t>(rows * 2 * K * h), 0.0f);
      Dev dq(qkv, act), dqw(qw, DType::kF32), dkw(kw, DType::kF32), dinv(inv, DType::kF32),
          dkv(zeros, act);
      Dev dlim(limit.size() * 4);
      ASSERT_EQ(cudaMemcpy(dlim.get(), limit.data(), limit.size() * 4, cudaMemcpyHostToDevice),
                cudaSuccess);
      ASSERT_TRUE(qwen_qk_norm_rope(s_, dq.get(), Q, rows, H, K, h, static_cast<float*>(dqw.get()),
                                    static_cast<float*>(dkw.get()), 1e-6f,
                                    static_cast<float*>(dinv.get()),
                                    static_cast<std::int32_t*>(dlim.get()), dkv.get(), act)
                      .is_ok());
      std::vector<double> want_q(qkv.begin(), qkv.end());
      std::vector<double> want_kv(zeros.size(), 0.0);
      for (std::int64_t r = 0; r < rows; ++r) {
        for (std::int64_t j = 0; j < H + 2 * K; ++j) {
          const float* x = qkv.data() + r * Q + j * h;
          const bool is_v = j >= H + K;
          const bool is_q = j < H;
          if (!is_q && limit[r] == 0) continue;
          std::vector<double> y(static_cast<std::size_t>(h));
          if (is_v) {
            for (std::int64_t i = 0; i < h; ++i) y[i] = x[i];
          } else {
            double ss = 0;
            for (std::int64_t i = 0; i < h; ++i) ss += static_cast<double>(x[i]) * x[i];
            const double n = 1.0 / std::sqrt(ss / h + 1e-6);
            const float* w = is_q ? qw.data() : kw.data();
            for (std::int64_t i = 0; i < half; ++i) {
              const double a = x[i] * n * w[i], b = x[i + half] * n * w[i + half];
              const double th = static_cast<double>(static_cast<float>(r) * inv[i]);
              y[i] = a * std::cos(th) - b * std::sin(th);
              y[i + half] = b * std::cos(th) + a * std::sin(th);
            }
          }
          double* dst = is_q ? want_q.data() + r * Q + j * h
                             : want_kv.data() + (limit[r] - 1) * 2 * K * h + (j - H) * h;
          for (std::int64_t i = 0; i < h; ++i) dst[i] = y[i];
        }
      }
      const std::string tag = std::string(name(act)) + " h=" + std::to_string(h);
      expect_close(dq.download(act, qkv.size()), want_q, act, "qwen_qk_norm_rope q " + tag);
      expect_close(dkv.download(act, zeros.size()), want_kv, act,
                   "qwen_qk_norm_rope packed k|v " + tag);
      // The angles from rope_table() (positions 0..rows-1) instead of computed: the same bits.
      Dev dq2(qkv, act), dkv2(zeros, act), dfirst(sizeof(std::int32_t)),
          dang(static_cast<std::size_t>(rows * h) * sizeof(float));
      ASSERT_EQ(cudaMemset(dfirst.get(), 0, sizeof(std::int32_t)), cudaSuccess);
      ASSERT_TRUE(rope_table(s_, rows, half, static_cast<std::int32_t*>(dfirst.get()),
                             static_cast<float*>(dinv.get()), static_cast<float*>(dang.get()))
                      .is_ok());
      ASSERT_TRUE(qwen_qk_norm_rope(s_, dq2.get(), Q, rows, H, K, h, static_cast<float*>(dqw.get()),
                                    static_cast<float*>(dkw.get()), 1e-6f,
                                    static_cast<float*>(dinv.get()),
                                    static_cast<std::int32_t*>(dlim.get()), dkv2.get(), act,
                                    static_cast<float*>(dang.get()))
                      .is_ok());
      EXPECT_EQ(dq2.download(act, qkv.size()), dq.download(act, qkv.size())) << "q, table " << tag;
      EXPECT_EQ(dkv2.download(act, zeros.size()), dkv.download(act, zeros.size()))
          << "k|v, table " << tag;
    }
  }
}

// SwiGLU at f = 96 (eight columns a thread) and 94 (one), then the bias + activation kernel.
TEST_F(CudaGrootKernels, SwigluAndActivations) {
  for (const DType act : kActs) {
    const std::int64_t rows = 13;
    for (const std::int64_t f : {std::int64_t{96}, std::int64_t{94}}) {
      const auto gu = rounded(random_values(static_cast<std::size_t>(rows * 2 * f), -4, 4, 5), act);
      Dev dgu(gu, act), dout(static_cast<std::size_t>(rows * f) * 4);
      ASSERT_TRUE(swiglu(s_, dgu.get(), rows, f, dout.get(), act).is_ok());
      std::vector<double> ref(static_cast<std::size_t>(rows * f));
      for (std::int64_t r = 0; r < rows; ++r) {
        for (std::int64_t i = 0; i < f; ++i) {
          const double g = gu[r * 2 * f + i], u = gu[r * 2 * f + f + i];
          ref[r * f + i] = g / (1.0 + std::exp(-g)) * u;
        }
      }
      expect_close(dout.download(act, ref.size()), ref, act,
                   "swiglu f=" + std::to_string(f) + " " + name(act));
    }
    const std::int64_t n = 40, ld = 48;
    const auto x = rounded(random_values(static_cast<std::size_t>(rows * ld), -4, 4, 6), act);
    const auto bias = random_values(static_cast<std::size_t>(n), -1, 1, 7);
    for (const Activation a : {Activation::kRelu, Activation::kSilu, Activation::kGeluErf}) {
      Dev dx(x, act), db(bias, DType::kF32);
      ASSERT_TRUE(bias_activation(s_, dx.get(), act, rows, n, ld, static_cast<float*>(db.get()), a)
                      .is_ok());
      std::vector<double> want(x.begin(), x.end());
      for (std::int64_t r = 0; r < rows; ++r) {
        for (std::int64_t i = 0; i < n; ++i) {
          const double v = static_cast<double>(x[r * ld + i]) + bias[i];
          want[r * ld + i] = a == Activation::kRelu ? std::max(v, 0.0)
                             : a == Activation::kSilu
                                 ? v / (1.0 + std::exp(-v))
                                 : 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
        }
      }
      expect_close(dx.download(act, x.size()), want, act,
                   std::string("bias_activation ") +
                       (a == Activation::kRelu   ? "relu "
                        : a == Activation::kSilu ? "silu "
                                                 : "gelu_erf ") +
                       name(act));
    }
  }
}

// The end of an Euler step: the decoder's k parts and bias summed into the velocity, the update,
// the actions rounded for the next step, the state row copied; refused arguments named.
TEST_F(CudaGrootKernels, StepEndSumsPartsAndUpdates) {
  const std::int64_t rows = 50, n = 128, width = 1536, stride = rows * n + 64;
  const int count = 3;
  const float dt = 0.25f;
  for (const DType act : kActs) {
    const auto parts = random_values(static_cast<std::size_t>(count * stride), -1, 1, 30);
    const auto bias = random_values(static_cast<std::size_t>(n), -0.5f, 0.5f, 31);
    const auto x = random_values(static_cast<std::size_t>(rows * n), -2, 2, 32);
    const auto row = random_values(static_cast<std::size_t>(width), -3, 3, 33);
    Dev dparts(parts, DType::kF32), dbias(bias, DType::kF32), dx(x, DType::kF32),
        dvel(static_cast<std::size_t>(rows * n) * 4), dact(static_cast<std::size_t>(rows * n) * 4),
        drow(row, DType::kF32), ddst(static_cast<std::size_t>(width) * 4);
    ASSERT_TRUE(groot_step_end(s_, static_cast<const float*>(dparts.get()), count, stride,
                               static_cast<const float*>(dbias.get()), rows, n, dt,
                               static_cast<float*>(dx.get()), static_cast<float*>(dvel.get()),
                               dact.get(), act, static_cast<const float*>(drow.get()),
                               static_cast<float*>(ddst.get()), width)
                    .is_ok());
    std::vector<double> vel(x.size()), nx(x.size()), nx_act(x.size());
    for (std::int64_t i = 0; i < rows * n; ++i) {
      double v = bias[static_cast<std::size_t>(i % n)];
      for (int q = 0; q < count; ++q) v += parts[static_cast<std::size_t>(q * stride + i)];
      vel[i] = v;
      nx[i] = x[i] + dt * v;
    }
    const auto got_x = dx.download(DType::kF32, x.size());
    expect_close(dvel.download(DType::kF32, x.size()), vel, DType::kF32, "step end velocity");
    expect_close(got_x, nx, DType::kF32, "step end actions");
    // The rounded copy is the updated actions as computed, rounded once.
    const auto want_act = rounded(got_x, act);
    expect_close(dact.download(act, x.size()),
                 std::vector<double>(want_act.begin(), want_act.end()), DType::kF32,
                 std::string("step end actions in ") + name(act));
    expect_close(ddst.download(DType::kF32, row.size()),
                 std::vector<double>(row.begin(), row.end()), DType::kF32, "step end state row");
  }
  Dev dummy(1024);
  auto* f = static_cast<float*>(dummy.get());
  const Status none =
      groot_step_end(s_, f, 0, 64, nullptr, 4, 16, dt, f, f, f, DType::kF32, f, f, 4);
  EXPECT_FALSE(none.is_ok());
  EXPECT_NE(none.to_string().find("groot_step_end"), std::string::npos) << none.to_string();
  EXPECT_FALSE(
      groot_step_end(s_, f, 2, 32, nullptr, 4, 16, dt, f, f, f, DType::kF32, f, f, 4).is_ok());
  EXPECT_FALSE(groot_step_end(s_, f, 1, 64, nullptr, 4, 16, dt, f, nullptr, f, DType::kF32, f, f, 4)
                   .is_ok());
}

TEST_F(CudaGrootKernels, GatherRows) {
  const std::int64_t src_rows = 20, width = 24, rows = 9;
  const auto src =
      rounded(random_values(static_cast<std::size_t>(src_rows * width), -1, 1, 8), DType::kBF16);
  const std::vector<std::int32_t> idx = {3, -1, 0, 19, 7, -1, 7, 12, 1};
  Dev dsrc(src, DType::kBF16), didx(idx.size() * 4);
  ASSERT_EQ(cudaMemcpy(didx.get(), idx.data(), idx.size() * 4, cudaMemcpyHostToDevice),
            cudaSuccess);
  for (const bool zero : {true, false}) {
    const std::vector<float> init(static_cast<std::size_t>(rows * width), 5.0f);
    Dev dst(init, DType::kF32);
    ASSERT_TRUE(gather_rows(s_, dsrc.get(), DType::kBF16, width,
                            static_cast<std::int32_t*>(didx.get()), rows, width, dst.get(),
                            DType::kF32, width, zero)
                    .is_ok());
    std::vector<double> want(init.size());
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t c = 0; c < width; ++c) {
        const std::int32_t s = idx[static_cast<std::size_t>(r)];
        want[r * width + c] = s >= 0 ? src[s * width + c] : zero ? 0.0 : 5.0;
      }
    }
    expect_close(dst.download(DType::kF32, want.size()), want, DType::kF32,
                 std::string("gather_rows bf16 -> f32, zero_missing ") + (zero ? "on" : "off"));
  }
}

TEST_F(CudaGrootKernels, PatchesPositionsUnshuffleTranspose) {
  // Patches in (py, px, c) order.
  const std::int64_t h = 28, w = 42, p = 14, gh = h / p, gw = w / p;
  const auto img = random_values(static_cast<std::size_t>(3 * h * w), -1, 1, 9);
  Dev dimg(img, DType::kF32), dpat(static_cast<std::size_t>(3 * h * w) * 4);
  ASSERT_TRUE(image_patches(s_, dimg.get(), DType::kF32, h, w, p, dpat.get(), DType::kF32).is_ok());
  std::vector<double> want(img.size());
  for (std::int64_t a = 0; a < gh; ++a) {
    for (std::int64_t b = 0; b < gw; ++b) {
      for (std::int64_t py = 0; py < p; ++py) {
        for (std::int64_t px = 0; px < p; ++px) {
          for (std::int64_t c = 0; c < 3; ++c) {
            want[((a * gw + b) * p * p + py * p + px) * 3 + c] =
                img[(c * h + a * p + py) * w + b * p + px];
          }
        }
      }
    }
  }
  expect_close(dpat.download(DType::kF32, want.size()), want, DType::kF32, "image_patches");
  // Rows 640 apart (the patch GEMM's k padded): the same values, zeros after each row's 588, the
  // stale bytes there overwritten.
  {
    const std::int64_t pp = p * p * 3, ld = 640, n = gh * gw;
    const std::vector<float> stale(static_cast<std::size_t>(n * ld), 7.0f);
    Dev dpad(stale, DType::kBF16);
    ASSERT_TRUE(
        image_patches(s_, dimg.get(), DType::kF32, h, w, p, dpad.get(), DType::kBF16, ld).is_ok());
    std::vector<double> want_pad(static_cast<std::size_t>(n * ld), 0.0);
    const auto want_bf16 = rounded(std::vector<float>(want.begin(), want.end()), DType::kBF16);
    for (std::int64_t r = 0; r < n; ++r) {
      for (std::int64_t c = 0; c < pp; ++c) want_pad[r * ld + c] = want_bf16[r * pp + c];
    }
    expect_close(dpad.download(DType::kBF16, want_pad.size()), want_pad, DType::kF32,
                 "image_patches ld=640");
    EXPECT_FALSE(
        image_patches(s_, dimg.get(), DType::kF32, h, w, p, dpad.get(), DType::kBF16, pp - 1)
            .is_ok());
  }
  // Grid positions: pos(a, b) = Σ wy[a, i] wx[b, j] table[i·side + j].
  const std::int64_t side = 16, width = 40, ph = 6, pw = 10;
  const auto table = random_values(static_cast<std::size_t>(side * side * width), -1, 1, 10);
  const auto wy = random_values(static_cast<std::size_t>(ph * side), 0, 0.2f, 11);
  const auto wx = random_values(static_cast<std::size_t>(pw * side), 0, 0.2f, 12);
  const auto x0 = random_values(static_cast<std::size_t>(ph * pw * width), -1, 1, 13);
  Dev dx(x0, DType::kF32), dt(table, DType::kF32), dwy(wy, DType::kF32), dwx(wx, DType::kF32);
  ASSERT_TRUE(add_grid_positions(s_, static_cast<float*>(dx.get()), ph, pw, width,
                                 static_cast<float*>(dt.get()), side,
                                 static_cast<float*>(dwy.get()), static_cast<float*>(dwx.get()))
                  .is_ok());
  std::vector<double> pos(x0.begin(), x0.end());
  for (std::int64_t a = 0; a < ph; ++a) {
    for (std::int64_t b = 0; b < pw; ++b) {
      for (std::int64_t c = 0; c < width; ++c) {
        double acc = 0;
        for (std::int64_t i = 0; i < side; ++i) {
          for (std::int64_t j = 0; j < side; ++j)
            acc += static_cast<double>(wy[a * side + i]) * wx[b * side + j] *
                   table[(i * side + j) * width + c];
        }
        pos[(a * pw + b) * width + c] += acc;
      }
    }
  }
  expect_close(dx.download(DType::kF32, pos.size()), pos, DType::kF32, "add_grid_positions");
  // Pixel unshuffle by 2 (four values a 16-byte store) and by 3 (the general form).
  for (const std::int64_t r : {std::int64_t{2}, std::int64_t{3}}) {
    const std::int64_t uh = 6, uw = 12, d = 5;
    const auto tok = random_values(static_cast<std::size_t>(uh * uw * d), -1, 1, 14);
    Dev dtok(tok, DType::kF32), dm(tok.size() * 4);
    ASSERT_TRUE(pixel_unshuffle(s_, static_cast<float*>(dtok.get()), uh, uw, d, r,
                                static_cast<float*>(dm.get()))
                    .is_ok());
    std::vector<double> un(tok.size());
    for (std::int64_t i = 0; i < uh / r; ++i) {
      for (std::int64_t j = 0; j < uw / r; ++j) {
        for (std::int64_t c = 0; c < d; ++c) {
          for (std::int64_t dy = 0; dy < r; ++dy) {
            for (std::int64_t dxx = 0; dxx < r; ++dxx) {
              un[(i * (uw / r) + j) * d * r * r + c * r * r + dy * r + dxx] =
                  tok[((i * r + dy) * uw + j * r + dxx) * d + c];
            }
          }
        }
      }
    }
    expect_close(dm.download(DType::kF32, un.size()), un, DType::kF32,
                 "pixel_unshuffle r=" + std::to_string(r));
  }
  // Transpose (a category linear's [in, out] slot to [out, in]).
  for (const DType t : kActs) {
    const std::int64_t rows = 70, cols = 45;
    const auto m = rounded(random_values(static_cast<std::size_t>(rows * cols), -1, 1, 15), t);
    Dev dsrc(m, t), ddst(m.size() * 4);
    ASSERT_TRUE(transpose(s_, dsrc.get(), rows, cols, ddst.get(), t).is_ok());
    std::vector<double> tr(m.size());
    for (std::int64_t i = 0; i < rows; ++i) {
      for (std::int64_t j = 0; j < cols; ++j) tr[j * rows + i] = m[i * cols + j];
    }
    expect_close(ddst.download(t, tr.size()), tr, t, std::string("transpose ") + name(t));
  }
}

}  // namespace
}  // namespace edgevla::backends::cuda
