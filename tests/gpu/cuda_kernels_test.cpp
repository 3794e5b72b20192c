// The cuda backend's element-wise and normalisation kernels against plain double-precision host
// references written here (the CPU backend is not linked), in f32 and bf16, at the row widths and
// counts the pi0 / pi0.5 engines use plus odd ones that take the scalar paths, and dtype and size
// errors (the rotary-embedding kernels: cuda_rope_test.cpp, the same executable). Without a CUDA
// device every test skips itself (the test main then reports "not run").
#include <algorithm>
#include <cmath>
#include <tuple>

#include "tests/gpu/cuda_test_util.hpp"

namespace edgevla::backends::cuda {
namespace {

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

TEST_F(CudaKernels, GatedAddAdaRmsNormMatchesReference) {
  for (const DType act : kActs) {
    for (const DType yt : kActs) {
      for (const std::int64_t rows : {1, 50, 51}) {
        for (const std::int64_t width : {16, 32, 1024, 75}) {
          const std::string what = std::string("gated_add_ada_rms_norm act=") + name(act) + " y=" + name(yt) +
                                   " rows=" + std::to_string(rows) + " width=" + std::to_string(width);
          const std::size_t n = static_cast<std::size_t>(rows * width);
          const auto x = random_values(n, -3.0f, 3.0f, 14);
          auto y = random_values(n, -2.0f, 2.0f, 15);
          if (yt == DType::kBF16) y = DeviceBuffer(y, yt).download(yt, n);  // the values the kernel reads
          const auto gate = random_values(static_cast<std::size_t>(width), -1.0f, 1.0f, 16);
          const auto scale = random_values(static_cast<std::size_t>(width), -0.7f, 0.7f, 17);
          const auto shift = random_values(static_cast<std::size_t>(width), -0.3f, 0.3f, 18);
          DeviceBuffer dx(x, DType::kF32), dy(y, yt), dg(gate, DType::kF32), ds(scale, DType::kF32),
              dsh(shift, DType::kF32);
          DeviceBuffer dout(n * dtype_size(act));
          settle();
          ASSERT_OK(gated_add_ada_rms_norm(stream_, dx.as<float>(), dy.get(), yt, rows, width, dg.as<float>(),
                                           ds.as<float>(), dsh.as<float>(), kEps, dout.get(), act));
          sync();
          std::vector<double> xs(n), ref(n);
          for (std::int64_t r = 0; r < rows; ++r) {
            double ss = 0.0;
            for (std::int64_t i = 0; i < width; ++i) {
              const std::size_t k = static_cast<std::size_t>(r * width + i);
              xs[k] = static_cast<double>(x[k]) + static_cast<double>(y[k]) * gate[static_cast<std::size_t>(i)];
              ss += xs[k] * xs[k];
            }
            const double inv = 1.0 / std::sqrt(ss / static_cast<double>(width) + kEps);
            for (std::int64_t i = 0; i < width; ++i) {
              const std::size_t k = static_cast<std::size_t>(r * width + i);
              ref[k] = xs[k] * inv * (1.0 + scale[static_cast<std::size_t>(i)]) + shift[static_cast<std::size_t>(i)];
            }
          }
          expect_close(dx.download(DType::kF32, n), xs, tolerance_for(DType::kF32), what + " (x += y · gate)");
          expect_close(dout.download(act, n), ref, tolerance_for(act), what);
          if (HasFailure()) return;
        }
      }
    }
  }
  // Without y or gate it is an error, not ada_rms_norm.
  DeviceBuffer d(64 * 4);
  EXPECT_EQ(gated_add_ada_rms_norm(stream_, d.as<float>(), nullptr, DType::kF32, 1, 16, d.as<float>(), d.as<float>(),
                                   d.as<float>(), kEps, d.get(), DType::kF32)
                .code(),
            StatusCode::kInvalidArgument);
}

// The residual as the parts of a k-split GEMM (ResidualParts): every norm that adds a residual
// sums `count` f32 parts (and the bias) in front, with the same results as one summed tensor.
TEST_F(CudaKernels, NormsAddResidualPartsAndBias) {
  enum class Kind { kRms, kGatedAda, kLayer };
  for (const Kind kind : {Kind::kRms, Kind::kGatedAda, Kind::kLayer}) {
    for (const DType act : kActs) {
      for (const std::int64_t rows : {1, 50}) {
        for (const std::int64_t width : {1024, 1536, 75}) {
          for (const int count : {1, 3, 8}) {
            for (const bool with_bias : {false, true}) {
              const std::string what = std::string(kind == Kind::kRms        ? "rms_norm"
                                                   : kind == Kind::kGatedAda ? "gated_add_ada_rms_norm"
                                                                             : "add_layer_norm") +
                                       " act=" + name(act) + " rows=" + std::to_string(rows) +
                                       " width=" + std::to_string(width) + " parts=" + std::to_string(count) +
                                       (with_bias ? " bias" : "");
              const std::size_t n = static_cast<std::size_t>(rows * width);
              const std::int64_t stride = rows * width + (width % 8 == 0 ? 8 : 0);  // parts not back to back
              const auto x = random_values(n, -3.0f, 3.0f, 50);
              const auto parts = random_values(static_cast<std::size_t>(count * stride), -1.0f, 1.0f, 51);
              const auto bias = random_values(static_cast<std::size_t>(width), -0.5f, 0.5f, 52);
              const auto gate = random_values(static_cast<std::size_t>(width), -1.0f, 1.0f, 53);
              const auto p0 = random_values(static_cast<std::size_t>(width), 0.5f, 1.5f, 54);
              const auto p1 = random_values(static_cast<std::size_t>(width), -0.3f, 0.3f, 55);
              DeviceBuffer dx(x, DType::kF32), dparts(parts, DType::kF32), dbias(bias, DType::kF32),
                  dgate(gate, DType::kF32), dp0(p0, DType::kF32), dp1(p1, DType::kF32);
              DeviceBuffer dy(n * dtype_size(act));
              const ResidualParts rp{count, stride, with_bias ? dbias.as<float>() : nullptr};
              if (kind == Kind::kRms) {
                ASSERT_OK(rms_norm(stream_, dx.as<float>(), dparts.get(), DType::kF32, rows, width, dp0.as<float>(),
                                   kEps, dy.get(), act, rp));
              } else if (kind == Kind::kGatedAda) {
                ASSERT_OK(gated_add_ada_rms_norm(stream_, dx.as<float>(), dparts.get(), DType::kF32, rows, width,
                                                 dgate.as<float>(), dp0.as<float>(), dp1.as<float>(), kEps, dy.get(),
                                                 act, rp));
              } else {
                ASSERT_OK(add_layer_norm(stream_, dx.as<float>(), dparts.as<float>(), rows, width, dp0.as<float>(),
                                         dp1.as<float>(), kEps, dy.get(), act, rp));
              }
              sync();
              std::vector<double> xs(n), ref(n);
              for (std::int64_t r = 0; r < rows; ++r) {
                double mean = 0.0;
                for (std::int64_t i = 0; i < width; ++i) {
                  const std::size_t k = static_cast<std::size_t>(r * width + i);
                  double res = with_bias ? bias[static_cast<std::size_t>(i)] : 0.0;
                  for (int p = 0; p < count; ++p) res += parts[static_cast<std::size_t>(p * stride) + k];
                  if (kind == Kind::kGatedAda) res *= gate[static_cast<std::size_t>(i)];
                  xs[k] = x[k] + res;
                  mean += xs[k];
                }
                mean = kind == Kind::kLayer ? mean / static_cast<double>(width) : 0.0;
                double ss = 0.0;
                for (std::int64_t i = 0; i < width; ++i) {
                  const double d = xs[static_cast<std::size_t>(r * width + i)] - mean;
                  ss += d * d;
                }
                const double inv = 1.0 / std::sqrt(ss / static_cast<double>(width) + kEps);
                for (std::int64_t i = 0; i < width; ++i) {
                  const std::size_t k = static_cast<std::size_t>(r * width + i);
                  const double a = p0[static_cast<std::size_t>(i)], b = p1[static_cast<std::size_t>(i)];
                  const double v = (xs[k] - mean) * inv;
                  ref[k] = kind == Kind::kRms ? v * (1.0 + a) : kind == Kind::kGatedAda ? v * (1.0 + a) + b : v * a + b;
                }
              }
              expect_close(dx.download(DType::kF32, n), xs, tolerance_for(DType::kF32), what + " (x += residual)");
              expect_close(dy.download(act, n), ref, tolerance_for(act), what);
              if (HasFailure()) return;
            }
          }
        }
      }
    }
  }
  // A part count or stride the kernel cannot read is an error naming the parts; so is
  // add_layer_norm without its residual.
  DeviceBuffer d(64 * 16 * 4);
  float* f = d.as<float>();
  const Status many = rms_norm(stream_, f, f, DType::kF32, 2, 16, f, kEps, f, DType::kF32, ResidualParts{9, 32});
  EXPECT_EQ(many.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(many.message().find("residual parts"), std::string::npos) << many.message();
  EXPECT_EQ(add_layer_norm(stream_, f, f, 2, 16, f, f, kEps, f, DType::kF32, ResidualParts{2, 16}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(add_layer_norm(stream_, f, nullptr, 2, 16, f, f, kEps, f, DType::kF32).code(),
            StatusCode::kInvalidArgument);
}

TEST_F(CudaKernels, LayerNormMatchesReference) {
  for (const DType act : kActs) {
    for (const std::int64_t rows : {1, 7, 968}) {
      for (const std::int64_t width : {72, 1152, 2048, 8192, 75}) {
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

// The vision towers' stream in bf16 (EDGEVLA_CUDA_TOWER_STREAM): layer_norm and add_layer_norm
// read x in the compute dtype, add the f32 parts in f32 and write x back rounded to it.
TEST_F(CudaKernels, LayerNormsTakeTheStreamInTheComputeDtype) {
  const DType act = DType::kBF16;
  for (const std::int64_t width : {1152, 75}) {
    for (const int count : {0, 1, 4}) {
      const std::int64_t rows = 37;
      const std::string what = "layer_norm x=bf16 width=" + std::to_string(width) + " parts=" + std::to_string(count);
      const std::size_t n = static_cast<std::size_t>(rows * width);
      const auto x = rounded(random_values(n, 2.0f, 6.0f, 60), act);
      const auto parts = random_values(std::max<std::size_t>(1, count * n), -1.0f, 1.0f, 61);
      const auto w = random_values(static_cast<std::size_t>(width), 0.5f, 1.5f, 62);
      const auto b = random_values(static_cast<std::size_t>(width), -0.5f, 0.5f, 63);
      DeviceBuffer dx(x, act), dparts(parts, DType::kF32), dw(w, DType::kF32), db(b, DType::kF32);
      DeviceBuffer dy(n * dtype_size(act));
      if (count == 0) {
        ASSERT_OK(layer_norm(stream_, dx.get(), act, rows, width, dw.as<float>(), db.as<float>(), kEps, dy.get(), act));
      } else {
        ASSERT_OK(add_layer_norm(stream_, dx.get(), act, dparts.as<float>(), rows, width, dw.as<float>(),
                                 db.as<float>(), kEps, dy.get(), act, ResidualParts{count, rows * width}));
      }
      sync();
      std::vector<float> xs(n);
      for (std::size_t k = 0; k < n; ++k) {
        float r = 0.0f;
        for (int p = 0; p < count; ++p) r += parts[static_cast<std::size_t>(p) * n + k];
        xs[k] = x[k] + r;
      }
      std::vector<double> ref(n);
      for (std::int64_t r = 0; r < rows; ++r) {
        double mean = 0.0, var = 0.0;
        for (std::int64_t i = 0; i < width; ++i) mean += xs[r * width + i];
        mean /= static_cast<double>(width);
        for (std::int64_t i = 0; i < width; ++i) var += (xs[r * width + i] - mean) * (xs[r * width + i] - mean);
        const double inv = 1.0 / std::sqrt(var / static_cast<double>(width) + kEps);
        for (std::int64_t i = 0; i < width; ++i) ref[r * width + i] = (xs[r * width + i] - mean) * inv * w[i] + b[i];
      }
      // The normalised rows come from the f32 sums, before x is rounded back to bf16.
      expect_close(dy.download(act, n), ref, tolerance_for(act), what);
      expect_close(dx.download(act, n), to_double(rounded(xs, act)), Tolerance{0, 0, 0}, what + " (x written back)");
      if (HasFailure()) return;
    }
  }
  // A bf16 stream into an f32 output (GR00T's post norm) is the same sums.
  {
    const std::int64_t rows = 5, width = 1152;
    const std::size_t n = static_cast<std::size_t>(rows * width);
    const auto x = rounded(random_values(n, -3.0f, 3.0f, 64), act);
    const auto w = random_values(static_cast<std::size_t>(width), 0.5f, 1.5f, 65);
    const auto b = random_values(static_cast<std::size_t>(width), -0.5f, 0.5f, 66);
    DeviceBuffer dx(x, act), dxf(x, DType::kF32), dw(w, DType::kF32), db(b, DType::kF32);
    DeviceBuffer dy(n * 4), dyf(n * 4);
    ASSERT_OK(layer_norm(stream_, dx.get(), act, rows, width, dw.as<float>(), db.as<float>(), kEps, dy.get(),
                         DType::kF32));
    ASSERT_OK(layer_norm(stream_, dxf.as<float>(), rows, width, dw.as<float>(), db.as<float>(), kEps, dyf.get(),
                         DType::kF32));
    sync();
    expect_close(dy.download(DType::kF32, n), to_double(dyf.download(DType::kF32, n)), Tolerance{0, 0, 0},
                 "layer_norm x=bf16 y=f32 against x in f32");
  }
  // x in another dtype is refused, naming it.
  DeviceBuffer d(64 * 16 * 4);
  const Status bad = layer_norm(stream_, d.get(), DType::kF16, 2, 16, d.as<float>(), d.as<float>(), kEps, d.get(), act);
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("stream (x)"), std::string::npos) << bad.message();
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

// GeGLU over f32 k parts of the gate|up product (the chained GEMM's output): the parts summed in
// order, then GeGLU; a part stride with padding between parts; bad counts and strides refused.
TEST_F(CudaKernels, GegluPartsSumsThePartsFirst) {
  for (const DType act : kActs) {
    for (const int count : {1, 2, 3}) {
      for (const std::int64_t f : {4096, 75}) {
        const std::int64_t rows = 50, stride = rows * 2 * f + 8;
        const std::string what = std::string("geglu_parts act=") + name(act) + " parts=" + std::to_string(count) +
                                 " f=" + std::to_string(f);
        const auto parts = random_values(static_cast<std::size_t>(count * stride), -2.0f, 2.0f, 12);
        DeviceBuffer dparts(parts, DType::kF32), dout(static_cast<std::size_t>(rows * f) * dtype_size(act));
        ASSERT_OK(geglu_parts(stream_, static_cast<const float*>(dparts.get()), count, stride, rows, f, dout.get(), act));
        sync();
        std::vector<double> ref(static_cast<std::size_t>(rows * f));
        for (std::int64_t r = 0; r < rows; ++r) {
          for (std::int64_t i = 0; i < f; ++i) {
            double g = 0.0, u = 0.0;
            for (int p = 0; p < count; ++p) {
              g += parts[p * stride + r * 2 * f + i];
              u += parts[p * stride + r * 2 * f + f + i];
            }
            ref[r * f + i] = gelu_ref(static_cast<float>(g)) * u;
          }
        }
        expect_close(dout.download(act, ref.size()), ref, tolerance_for(act), what);
        if (HasFailure()) return;
      }
    }
  }
  DeviceBuffer d(1 << 20);
  const auto* f = static_cast<const float*>(d.get());
  EXPECT_EQ(geglu_parts(stream_, f, 0, 800, 4, 100, d.get(), DType::kF32).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(geglu_parts(stream_, f, 2, 799, 4, 100, d.get(), DType::kF32).code(), StatusCode::kInvalidArgument);
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
      // Rows padded to a multiple of 64 (the patch GEMM's k padded): the same values, zeros after.
      const std::int64_t ld = (pp + 63) / 64 * 64 + 64;
      const std::vector<float> stale(static_cast<std::size_t>(rows * ld), 5.0f);
      DeviceBuffer dpad(stale, act);
      ASSERT_OK(im2col_patches(stream_, di.as<float>(), c.cams, c.s, c.p, dpad.get(), act, ld));
      sync();
      std::vector<float> ref_pad(static_cast<std::size_t>(rows * ld), 0.0f);
      for (std::int64_t r = 0; r < rows; ++r) {
        for (std::int64_t k = 0; k < pp; ++k) ref_pad[r * ld + k] = ref[r * pp + k];
      }
      expect_close(dpad.download(act, ref_pad.size()), to_double(rounded(ref_pad, act)), Tolerance{0, 0, 0},
                   std::string("im2col_patches ld act=") + name(act) + " p=" + std::to_string(c.p));
      EXPECT_FALSE(im2col_patches(stream_, di.as<float>(), c.cams, c.s, c.p, dpad.get(), act, pp - 1).is_ok());
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
  invalid(rope_into_cache(stream_, f, DType::kBF16, 4, 2, 1, 64, 3 * 64, f, f, 64,
                          reinterpret_cast<const std::int32_t*>(f), f),
          "rope_into_cache");  // the row holds 2 + 2·1 heads: 256 elements, not 192
  invalid(rope_into_cache(stream_, f, DType::kBF16, 4, 2, 1, 64, 4 * 64, f, f, 32,
                          reinterpret_cast<const std::int32_t*>(f), f),
          "rope_into_cache");  // a cache row narrower than its heads
  invalid(rope_into_cache(stream_, f, DType::kBF16, 4, 2, 1, 64, 4 * 64, nullptr, f, 64,
                          reinterpret_cast<const std::int32_t*>(f), f),
          "rope_into_cache");
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

}  // namespace
}  // namespace edgevla::backends::cuda
