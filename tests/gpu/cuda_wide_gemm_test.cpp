// GPU tests of the many-rows warpgroup GEMM (runtime/backends/cuda/kernels/wide_gemm.hpp) against
// a double-precision host product: every row size it is built for, at the vision towers' shapes
// and at row counts no tile divides, each epilogue (bias, bias + GELU-tanh, the residual added in
// place, f32 k parts), row strides longer than their rows, the launch plan, a captured graph
// replayed, and the arguments it refuses. Compute capability 9.0 only (sm_90a code); elsewhere
// the tests skip themselves, naming why.
#include "runtime/backends/cuda/kernels/wide_gemm.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/gpu/cuda_test_util.hpp"

namespace edgevla::backends::cuda {
namespace {

class CudaWideGemm : public CudaKernels {
 protected:
  void SetUp() override {
    CudaKernels::SetUp();
    if (IsSkipped()) return;
    if (!wide_gemm_available()) GTEST_SKIP() << "the wide GEMM runs on compute capability 9.0 (sm_90a code) only";
  }

  struct Case {
    std::int64_t m, n, k;
    WideEpilogue epi = WideEpilogue::kBias;
    int rows = 0;  // 0: the plan's
    int parts = 1;
    bool bias = true;
    std::int64_t pad = 0;  // extra elements at the end of each row of A, W and D
    int cx = 1, cz = 1;    // the cluster
  };

  void check(const Case& c, std::uint32_t seed) {
    const bool f32 = c.epi == WideEpilogue::kResidual || c.epi == WideEpilogue::kF32Parts;
    const std::int64_t lda = c.k + c.pad, ldw = c.k + c.pad, ldd = c.n + c.pad;
    const std::string what = "m " + std::to_string(c.m) + " n " + std::to_string(c.n) + " k " + std::to_string(c.k) +
                             " rows " + std::to_string(c.rows) + (c.epi == WideEpilogue::kGelu ? " gelu" : "") +
                             (c.epi == WideEpilogue::kResidual ? " residual" : "") +
                             (c.epi == WideEpilogue::kF32Parts ? " " + std::to_string(c.parts) + " k parts" : "") +
                             (c.bias ? " bias" : "") + (c.pad > 0 ? " padded rows" : "") +
                             (c.cx * c.cz > 1 ? " cluster " + std::to_string(c.cx) + "x" + std::to_string(c.cz) : "");
    const auto a = rounded(random_values(static_cast<std::size_t>(c.m * lda), -2.0f, 2.0f, seed), DType::kBF16);
    const auto w = rounded(random_values(static_cast<std::size_t>(c.n * ldw), -0.1f, 0.1f, seed + 1), DType::kBF16);
    const auto bias = random_values(static_cast<std::size_t>(c.n), -0.5f, 0.5f, seed + 2);
    const auto x0 = random_values(static_cast<std::size_t>(c.m * ldd), -1.0f, 1.0f, seed + 3);
    DeviceBuffer da(a, DType::kBF16), dw(w, DType::kBF16), dbias(bias, DType::kF32);
    const std::int64_t part_stride = (c.m + 1) * ldd;  // one row more than needed: the stride is honoured
    DeviceBuffer dd = c.epi == WideEpilogue::kResidual ? DeviceBuffer(x0, DType::kF32)
                      : c.epi == WideEpilogue::kF32Parts
                          ? DeviceBuffer(static_cast<std::size_t>(c.parts * part_stride * 4))
                          : DeviceBuffer(static_cast<std::size_t>(c.m * ldd * 2));
    WideGemmArgs g;
    g.a = da.get(), g.m = c.m, g.k = c.k, g.lda = lda;
    g.w = dw.get(), g.n = c.n, g.ldw = ldw;
    g.epilogue = c.epi, g.d = dd.get(), g.ldd = ldd;
    g.bias = c.bias ? static_cast<const float*>(dbias.get()) : nullptr;
    g.k_parts = c.parts, g.part_stride = part_stride;
    g.rows = c.rows, g.cluster_x = c.cx, g.cluster_z = c.cz;
    ASSERT_OK(wide_gemm(stream_, g));
    sync();
    std::vector<float> got(static_cast<std::size_t>(c.m * c.n));
    if (c.epi == WideEpilogue::kF32Parts) {
      const auto all = dd.download(DType::kF32, static_cast<std::size_t>(c.parts * part_stride));
      for (std::int64_t r = 0; r < c.m; ++r) {
        for (std::int64_t j = 0; j < c.n; ++j) {
          float s = 0.0f;
          for (int q = 0; q < c.parts; ++q) s += all[q * part_stride + r * ldd + j];
          got[r * c.n + j] = s;
        }
      }
    } else {
      const auto all = dd.download(f32 ? DType::kF32 : DType::kBF16, static_cast<std::size_t>(c.m * ldd));
      for (std::int64_t r = 0; r < c.m; ++r) {
        for (std::int64_t j = 0; j < c.n; ++j) got[r * c.n + j] = all[r * ldd + j];
      }
    }
    double num = 0.0, den = 0.0;
    for (std::int64_t r = 0; r < c.m; ++r) {
      for (std::int64_t j = 0; j < c.n; ++j) {
        double s = 0.0;
        for (std::int64_t t = 0; t < c.k; ++t) s += static_cast<double>(a[r * lda + t]) * w[j * ldw + t];
        if (c.bias && c.epi != WideEpilogue::kF32Parts) s += bias[j];
        if (c.epi == WideEpilogue::kGelu) s = gelu_ref(s);
        if (c.epi == WideEpilogue::kResidual) s += x0[r * ldd + j];
        const double e = got[r * c.n + j] - s;
        num += e * e;
        den += s * s;
      }
    }
    const double rel = std::sqrt(num / den);
    std::printf("  %-56s rel-L2 %.2e\n", what.c_str(), rel);
    // bf16 output: its rounding (2^-9 a value) and the summation order; f32: the order only.
    EXPECT_LE(rel, f32 ? 1e-5 : 6e-3) << what;
  }
};

// Every row size, at row counts that leave the last row block partly empty.
TEST_F(CudaWideGemm, EveryRowSizeMatchesTheHostProduct) {
  std::uint32_t seed = 1;
  for (const int rows : kWideRowSizes) {
    check({rows + 37, 256, 256, WideEpilogue::kBias, rows}, seed++);
    check({2 * rows, 128, 640, WideEpilogue::kBias, rows, 1, false}, seed++);  // k past the deepest ring
  }
  check({1, 128, 64, WideEpilogue::kBias, 112}, seed++);  // one row, one k block
}

// The towers' shapes at GR00T's two views (648 rows) and one (324), each epilogue.
TEST_F(CudaWideGemm, TheTowersShapesMatch) {
  check({648, 1152, 1152, WideEpilogue::kBias}, 11);          // q|k|v's shape, narrowed to 1152 outputs
  check({324, 4352, 1152, WideEpilogue::kGelu}, 12);          // fc1
  check({648, 1152, 1152, WideEpilogue::kResidual}, 13);      // o into the residual stream
  check({648, 256, 4352, WideEpilogue::kF32Parts, 216, 4, false}, 14);  // fc2's k in four parts
  check({324, 384, 1088, WideEpilogue::kF32Parts, 112, 3, false}, 15);  // 17 k blocks in 5, 6, 6
}

// Clusters: A's boxes shared along the features, W's along the rows, both, each epilogue.
TEST_F(CudaWideGemm, ClustersShareTheBoxes) {
  check({648, 1024, 640, WideEpilogue::kBias, 216, 1, true, 0, 2, 1}, 41);       // A shared by 2
  check({648, 384, 640, WideEpilogue::kGelu, 216, 1, true, 0, 1, 3}, 42);        // W shared by 3
  check({648, 768, 1152, WideEpilogue::kResidual, 216, 1, true, 0, 2, 3}, 43);   // both: 6 blocks
  check({640, 1152, 1088, WideEpilogue::kF32Parts, 168, 3, false, 0, 3, 2}, 44);  // parts, 4 row blocks
  check({300, 512, 192, WideEpilogue::kBias, 112, 1, true, 8, 4, 1}, 45);        // strides, last row block short
  check({1000, 256, 256, WideEpilogue::kBias, 136, 1, true, 0, 1, 8}, 46);       // 8 row blocks of 136
}

// Row strides longer than the rows (A, W and D), and the residual without a bias.
TEST_F(CudaWideGemm, RowStridesAreHonoured) {
  check({300, 256, 192, WideEpilogue::kBias, 168, 1, true, 8}, 21);
  check({300, 256, 192, WideEpilogue::kResidual, 136, 1, false, 8}, 22);
  check({300, 256, 192, WideEpilogue::kGelu, 256, 1, true, 16}, 23);
}

// The plan: whole waves of blocks, the row size that divides the rows best, parts only where the
// feature blocks alone leave the device mostly idle.
TEST_F(CudaWideGemm, ThePlanFillsTheDevice) {
  const WidePlan fc1_2v = wide_gemm_plan(648, 4352, 1152, 1, 132);  // 34 feature blocks
  EXPECT_EQ(fc1_2v.rows, 216);                                      // 3 row blocks: 102 blocks, one wave
  EXPECT_EQ(fc1_2v.parts, 1);
  const WidePlan fc2_2v = wide_gemm_plan(648, 1152, 4352, 4, 132);  // 9 feature blocks
  EXPECT_GT(fc2_2v.parts, 1);
  EXPECT_LE(9 * ((648 + fc2_2v.rows - 1) / fc2_2v.rows) * fc2_2v.parts, 132);
  EXPECT_EQ(fc1_2v.cluster_x * fc1_2v.cluster_z, 1);  // the plan takes no cluster
  WidePlan clustered = fc1_2v;
  wide_gemm_cluster(clustered, 648, 4352, 4);  // 34 feature blocks, 3 row blocks: A shared by 2
  EXPECT_EQ(clustered.cluster_x, 2);
  EXPECT_EQ(clustered.cluster_z, 1);
  for (const std::int64_t m : {1, 100, 256, 324, 512, 648, 768, 1000, 5000}) {
    const WidePlan p = wide_gemm_plan(m, 3456, 1152, 4, 132);
    if (m >= 256) {
      EXPECT_EQ(p.parts, 1) << m;  // 27 feature blocks and two row blocks or more fill the device
    }
    EXPECT_NE(std::find(std::begin(kWideRowSizes), std::end(kWideRowSizes), p.rows), std::end(kWideRowSizes)) << m;
    WidePlan c = p;
    wide_gemm_cluster(c, m, 3456, 4);
    EXPECT_LE(c.cluster_x * c.cluster_z, 4) << m;
    EXPECT_EQ(27 % c.cluster_x, 0) << m;
    EXPECT_EQ((m + c.rows - 1) / c.rows % c.cluster_z, 0) << m;
  }
}

// Captured once and replayed: the same output every time.
TEST_F(CudaWideGemm, AGraphReplaysBitForBit) {
  const std::int64_t m = 500, n = 384, k = 320;
  DeviceBuffer da(rounded(random_values(m * k, -1.0f, 1.0f, 31), DType::kBF16), DType::kBF16);
  DeviceBuffer dw(rounded(random_values(n * k, -0.1f, 0.1f, 32), DType::kBF16), DType::kBF16);
  DeviceBuffer dd(m * n * 2);
  WideGemmArgs g;
  g.a = da.get(), g.m = m, g.k = k, g.lda = k;
  g.w = dw.get(), g.n = n, g.ldw = k;
  g.epilogue = WideEpilogue::kGelu, g.d = dd.get(), g.ldd = n;
  ASSERT_OK(wide_gemm(stream_, g));
  sync();
  const auto first = dd.download(DType::kBF16, m * n);
  expect_graph_replays(
      stream_, dd.get(), m * n * 2, 10, first, [&] { return wide_gemm(stream_, g); },
      [&] { return dd.download(DType::kBF16, m * n); });
}

TEST_F(CudaWideGemm, RefusesWhatItDoesNotFit) {
  EXPECT_TRUE(wide_gemm_fits(648, 1152, 4352));
  EXPECT_FALSE(wide_gemm_fits(0, 128, 64));    // no rows
  EXPECT_FALSE(wide_gemm_fits(8, 192, 64));    // n not a multiple of 128
  EXPECT_FALSE(wide_gemm_fits(8, 128, 4304));  // k not a multiple of 64 (the tower's MLP unpadded)
  DeviceBuffer buf(1 << 20);
  DeviceBuffer fbias(std::vector<float>(128, 0.0f), DType::kF32);
  WideGemmArgs g;
  g.a = buf.get(), g.m = 8, g.k = 64, g.lda = 64, g.w = buf.get(), g.n = 192, g.ldw = 64, g.d = buf.get(), g.ldd = 192;
  const Status shape = wide_gemm(stream_, g);
  EXPECT_FALSE(shape.is_ok());
  EXPECT_NE(shape.to_string().find("multiple of 128"), std::string::npos) << shape.to_string();
  g.n = 128, g.ldd = 128;
  EXPECT_OK(wide_gemm(stream_, g));
  g.lda = 60;  // shorter than k
  EXPECT_FALSE(wide_gemm(stream_, g).is_ok());
  g.lda = 64, g.ldd = 130;  // not a multiple of 4
  EXPECT_FALSE(wide_gemm(stream_, g).is_ok());
  g.ldd = 128, g.k_parts = 2;  // parts need the parts output
  EXPECT_FALSE(wide_gemm(stream_, g).is_ok());
  g.k = 128, g.lda = 128, g.ldw = 128, g.epilogue = WideEpilogue::kF32Parts, g.part_stride = 128;  // overlapping parts
  EXPECT_FALSE(wide_gemm(stream_, g).is_ok());
  g.part_stride = 8 * 128, g.bias = static_cast<const float*>(fbias.get());  // no bias with parts
  const Status bias = wide_gemm(stream_, g);
  EXPECT_FALSE(bias.is_ok());
  EXPECT_NE(bias.to_string().find("bias"), std::string::npos) << bias.to_string();
  g.bias = nullptr, g.k_parts = 3;  // more parts than k blocks
  EXPECT_FALSE(wide_gemm(stream_, g).is_ok());
  g.k_parts = 1, g.epilogue = WideEpilogue::kBias, g.cluster_x = 3;  // 3 does not divide 1 feature block
  const Status cluster = wide_gemm(stream_, g);
  EXPECT_FALSE(cluster.is_ok());
  EXPECT_NE(cluster.to_string().find("cluster"), std::string::npos) << cluster.to_string();
  g.cluster_x = 1, g.rows = 100;  // no such row size
  const Status rows = wide_gemm(stream_, g);
  EXPECT_FALSE(rows.is_ok());
  EXPECT_NE(rows.to_string().find("row"), std::string::npos) << rows.to_string();
  sync();
}

}  // namespace
}  // namespace edgevla::backends::cuda
