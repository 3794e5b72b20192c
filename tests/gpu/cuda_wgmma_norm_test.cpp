// GPU tests of the warpgroup GEMM's norm epilogue (kNorm in
// runtime/backends/cuda/kernels/wgmma_gemm.hpp) against what it replaces: the same GEMM writing
// its k parts, then the norm kernel that adds them into the residual stream and normalises
// (rms_norm for pi0, gated_add_ada_rms_norm for pi0.5). The residual stream must come out the same
// bits; the normalised rows may differ only where the sum of squares' order moves a value across a
// bf16 rounding boundary. Also: calls back to back and a replayed graph (the counters the feature
// blocks meet on are left at zero), and the calls it refuses. Compute capability 9.0 only.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/backends/cuda/kernels/kernels.hpp"
#include "runtime/backends/cuda/kernels/wgmma_gemm.hpp"
#include "tests/gpu/cuda_test_util.hpp"

namespace edgevla::backends::cuda {
namespace {

class CudaWgmmaNorm : public CudaKernels {
 protected:
  void SetUp() override {
    CudaKernels::SetUp();
    if (IsSkipped()) return;
    if (!wgmma_gemm_available()) GTEST_SKIP() << "the warpgroup GEMM runs on compute capability 9.0 (sm_90a code) only";
  }

  struct Case {
    std::int64_t m, n, k;
    int split;
    WgmmaNormKind kind;
    bool bias, gate;
    std::uint32_t seed;
  };

  static std::string describe(const Case& c) {
    return "m " + std::to_string(c.m) + " n " + std::to_string(c.n) + " k " + std::to_string(c.k) + " in " +
           std::to_string(c.split) + ", " + (c.kind == WgmmaNormKind::kRms ? "RMSNorm" : "adaptive norm") +
           (c.bias ? ", bias" : "") + (c.gate ? ", gated" : "");
  }

  // Runs the fused call `repeat` times on a fresh copy of the residual each time, in k slices
  // (clusters) and in k parts, and checks each against the k parts + norm kernel form.
  void check(const Case& c, int repeat = 1) {
    for (const bool clusters : {true, false}) check_form(c, clusters, repeat);
  }
  void check_form(const Case& c, bool clusters, int repeat) {
    const std::string what = describe(c) + (clusters ? " (clusters)" : " (k parts)");
    const std::int64_t m = c.m, n = c.n, k = c.k;
    const auto a = rounded(random_values(static_cast<std::size_t>(m * k), -2.0f, 2.0f, c.seed), DType::kBF16);
    const auto w = rounded(random_values(static_cast<std::size_t>(n * k), -0.1f, 0.1f, c.seed + 1), DType::kBF16);
    const auto x0 = random_values(static_cast<std::size_t>(m * n), -3.0f, 3.0f, c.seed + 2);
    const auto bias = random_values(static_cast<std::size_t>(n), -0.5f, 0.5f, c.seed + 3);
    const auto gate = random_values(static_cast<std::size_t>(n), -1.5f, 1.5f, c.seed + 4);
    const auto weight = random_values(static_cast<std::size_t>(n), -0.5f, 0.5f, c.seed + 5);
    const auto shift = random_values(static_cast<std::size_t>(n), -0.5f, 0.5f, c.seed + 6);
    DeviceBuffer da(a, DType::kBF16), dw(w, DType::kBF16), tiled(wgmma_tiled_bytes(n, k));
    DeviceBuffer dbias(bias, DType::kF32), dgate(gate, DType::kF32), dweight(weight, DType::kF32),
        dshift(shift, DType::kF32);
    DeviceBuffer parts(static_cast<std::size_t>(c.split * m * n * 4)), x(static_cast<std::size_t>(m * n * 4));
    DeviceBuffer y(static_cast<std::size_t>(m * n * 2)), scratch(wgmma_norm_scratch_bytes(n));
    ASSERT_CUDA(cudaMemset(scratch.get(), 0, wgmma_norm_scratch_bytes(n)));
    ASSERT_OK(wgmma_tile_weight(stream_, dw.get(), n, k, k, WgmmaEpilogue::kF32Parts, tiled.get()));
    const auto* b = c.bias ? static_cast<const float*>(dbias.get()) : nullptr;
    const auto* g = c.gate ? static_cast<const float*>(dgate.get()) : nullptr;
    const auto* wt = static_cast<const float*>(dweight.get());
    const auto* sh = static_cast<const float*>(dshift.get());

    // The form it replaces: k parts, then the norm kernel.
    WgmmaGemmArgs pa;
    pa.a = da.get(), pa.m = m, pa.k = k, pa.lda = k;
    pa.w_tiled = tiled.get(), pa.n = n, pa.epilogue = WgmmaEpilogue::kF32Parts;
    pa.d = parts.get(), pa.ldd = n, pa.k_parts = c.split, pa.part_stride = m * n;
    x.upload(x0, DType::kF32);
    ASSERT_OK(wgmma_gemm(stream_, pa));
    const ResidualParts layout{c.split, m * n, b};
    auto* xp = static_cast<float*>(x.get());
    if (c.kind == WgmmaNormKind::kRms) {
      ASSERT_OK(rms_norm(stream_, xp, parts.get(), DType::kF32, m, n, wt, 1e-6f, y.get(), DType::kBF16, layout));
    } else if (g != nullptr) {
      ASSERT_OK(gated_add_ada_rms_norm(stream_, xp, parts.get(), DType::kF32, m, n, g, wt, sh, 1e-6f, y.get(),
                                       DType::kBF16, layout));
    } else {
      // An ungated add: a gate of ones, which fmaf(r, 1, x) makes the same as x + r.
      DeviceBuffer ones(std::vector<float>(static_cast<std::size_t>(n), 1.0f), DType::kF32);
      ASSERT_OK(gated_add_ada_rms_norm(stream_, xp, parts.get(), DType::kF32, m, n,
                                       static_cast<const float*>(ones.get()), wt, sh, 1e-6f, y.get(), DType::kBF16,
                                       layout));
      sync();
    }
    sync();
    const auto x_ref = x.download(DType::kF32, static_cast<std::size_t>(m * n));
    const auto y_ref = y.download(DType::kBF16, static_cast<std::size_t>(m * n));

    WgmmaGemmArgs fa;
    fa.a = da.get(), fa.m = m, fa.k = k, fa.lda = k;
    fa.w_tiled = tiled.get(), fa.n = n, fa.epilogue = WgmmaEpilogue::kNorm;
    fa.d = y.get(), fa.ldd = n, fa.bias = b;
    (clusters ? fa.k_split : fa.k_parts) = c.split;
    fa.norm.kind = c.kind;
    fa.norm.x = xp, fa.norm.ldx = n;
    fa.norm.gate = g, fa.norm.weight = wt, fa.norm.shift = sh, fa.norm.eps = 1e-6f;
    fa.norm.scratch = scratch.get();
    for (int r = 0; r < repeat; ++r) {
      x.upload(x0, DType::kF32);
      ASSERT_CUDA(cudaMemsetAsync(y.get(), 0xff, static_cast<std::size_t>(m * n * 2), stream_));
      ASSERT_OK(wgmma_gemm(stream_, fa));
      sync();
      EXPECT_EQ(x.download(DType::kF32, static_cast<std::size_t>(m * n)), x_ref) << what << ", call " << r;
      expect_rows_match(y.download(DType::kBF16, static_cast<std::size_t>(m * n)), y_ref, what);
    }
    unsigned counters[2] = {1, 1};
    ASSERT_CUDA(cudaMemcpy(counters, scratch.get(), sizeof counters, cudaMemcpyDeviceToHost));
    EXPECT_EQ(counters[0], 0u) << what << ": the counters are left at zero";
    EXPECT_EQ(counters[1], 0u) << what;
  }

  // The normalised rows: at most a bf16 step apart, in at most 1 % of the elements.
  static void expect_rows_match(const std::vector<float>& got, const std::vector<float>& ref, const std::string& what) {
    std::size_t differ = 0;
    double worst = 0.0;
    for (std::size_t i = 0; i < ref.size(); ++i) {
      if (got[i] == ref[i]) continue;
      ++differ;
      const double step = std::ldexp(1.0, std::ilogb(std::fabs(ref[i]) + 1e-30) - 7);  // a bf16 step at ref
      worst = std::max(worst, std::fabs(static_cast<double>(got[i]) - ref[i]) / step);
    }
    std::printf("  %-70s %zu of %zu elements differ (worst %.2f steps)\n", what.c_str(), differ, ref.size(), worst);
    EXPECT_LE(worst, 1.01) << what;
    EXPECT_LE(differ, ref.size() / 100) << what;
  }
};

TEST_F(CudaWgmmaNorm, MatchesThePartsAndTheNormKernel) {
  check({50, 1024, 2048, 4, WgmmaNormKind::kGatedAda, false, true, 1});  // pi0.5's o and its post norm
  check({50, 1024, 4096, 4, WgmmaNormKind::kGatedAda, false, true, 2});  // pi0.5's down and the next norm
  check({51, 1024, 2048, 4, WgmmaNormKind::kRms, true, false, 3});       // pi0's o (state row too), a bias
  check({51, 1024, 4096, 4, WgmmaNormKind::kRms, false, false, 4});      // pi0's down
  check({50, 1024, 2048, 4, WgmmaNormKind::kGatedAda, true, false, 5});  // adaptive, ungated, a bias
}

TEST_F(CudaWgmmaNorm, SlicesAndRowCounts) {
  check({33, 512, 640, 3, WgmmaNormKind::kRms, true, false, 11});        // 10 k blocks in 3, 3, 4
  check({56, 256, 256, 2, WgmmaNormKind::kGatedAda, false, true, 12});   // every row of the tile
  check({1, 1536, 512, 1, WgmmaNormKind::kRms, false, false, 13});       // one row, no cluster, 24 blocks
  check({7, 64, 1024, 4, WgmmaNormKind::kGatedAda, true, true, 14});     // one feature block
}

// Back to back, and captured once then replayed: each call starts from counters at zero.
TEST_F(CudaWgmmaNorm, RepeatsAndReplays) {
  check({50, 1024, 2048, 4, WgmmaNormKind::kGatedAda, false, true, 21}, 5);
  const std::int64_t m = 50, n = 1024, k = 1024;
  DeviceBuffer da(rounded(random_values(m * k, -1.0f, 1.0f, 22), DType::kBF16), DType::kBF16);
  DeviceBuffer dw(rounded(random_values(n * k, -0.1f, 0.1f, 23), DType::kBF16), DType::kBF16);
  const auto x0 = random_values(m * n, -2.0f, 2.0f, 24);
  DeviceBuffer dwt(random_values(n, -0.5f, 0.5f, 25), DType::kF32);
  DeviceBuffer tiled(wgmma_tiled_bytes(n, k)), x(m * n * 4), y(m * n * 2), scratch(wgmma_norm_scratch_bytes(n));
  ASSERT_CUDA(cudaMemset(scratch.get(), 0, wgmma_norm_scratch_bytes(n)));
  ASSERT_OK(wgmma_tile_weight(stream_, dw.get(), n, k, k, WgmmaEpilogue::kF32Parts, tiled.get()));
  WgmmaGemmArgs fa;
  fa.a = da.get(), fa.m = m, fa.k = k, fa.lda = k;
  fa.w_tiled = tiled.get(), fa.n = n, fa.epilogue = WgmmaEpilogue::kNorm;
  fa.d = y.get(), fa.ldd = n, fa.k_parts = 4;  // the k parts form (the scratch's part counters too)
  fa.norm.x = static_cast<float*>(x.get()), fa.norm.ldx = n;
  fa.norm.weight = static_cast<const float*>(dwt.get());
  fa.norm.scratch = scratch.get();
  x.upload(x0, DType::kF32);
  ASSERT_OK(wgmma_gemm(stream_, fa));
  sync();
  const auto x1 = x.download(DType::kF32, m * n);
  const auto y1 = y.download(DType::kBF16, m * n);
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ASSERT_CUDA(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  const Status st = wgmma_gemm(stream_, fa);
  ASSERT_CUDA(cudaStreamEndCapture(stream_, &graph));
  ASSERT_OK(st);
  ASSERT_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (int i = 0; i < 20; ++i) {
    x.upload(x0, DType::kF32);
    ASSERT_CUDA(cudaMemsetAsync(y.get(), 0, m * n * 2, stream_));
    ASSERT_CUDA(cudaGraphLaunch(exec, stream_));
    sync();
    ASSERT_EQ(x.download(DType::kF32, m * n), x1) << "replay " << i;
    ASSERT_EQ(y.download(DType::kBF16, m * n), y1) << "replay " << i;
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

TEST_F(CudaWgmmaNorm, RefusesWhatItCannotRun) {
  EXPECT_TRUE(wgmma_norm_fits(50, 1024, 4));    // pi0.5's expert on this device
  EXPECT_TRUE(wgmma_norm_fits(56, 1536, 4));    // GR00T's DiT
  EXPECT_FALSE(wgmma_norm_fits(57, 1024, 4));   // more than one row tile
  EXPECT_FALSE(wgmma_norm_fits(50, 1000, 1));   // n not a multiple of 64
  EXPECT_FALSE(wgmma_norm_fits(50, 1024, 5));   // more slices than a cluster takes
  EXPECT_TRUE(wgmma_norm_fits(50, 1024, 1, 4));  // k parts
  EXPECT_FALSE(wgmma_norm_fits(50, 1024, 1, 5));  // more parts than the scratch holds
  EXPECT_FALSE(wgmma_norm_fits(50, 1024, 2, 2));  // slices and parts at once
  EXPECT_FALSE(wgmma_norm_fits(50, 64 * 4096, 4));  // more feature blocks than the device holds at once
  DeviceBuffer scratch(wgmma_norm_scratch_bytes(1024)), x(50 * 1024 * 4), y(50 * 1024 * 2), a(57 * 1024 * 2),
      w(wgmma_tiled_bytes(1024, 1024)), wt(1024 * 4);
  WgmmaGemmArgs fa;
  fa.a = a.get(), fa.m = 50, fa.k = 1024, fa.lda = 1024;
  fa.w_tiled = w.get(), fa.n = 1024, fa.epilogue = WgmmaEpilogue::kNorm;
  fa.d = y.get(), fa.ldd = 1024;
  fa.norm.x = static_cast<float*>(x.get()), fa.norm.ldx = 1024;
  fa.norm.weight = static_cast<const float*>(wt.get());
  fa.norm.scratch = nullptr;
  EXPECT_FALSE(wgmma_gemm(stream_, fa).is_ok()) << "no scratch";
  fa.norm.scratch = scratch.get();
  fa.norm.kind = WgmmaNormKind::kGatedAda;
  EXPECT_FALSE(wgmma_gemm(stream_, fa).is_ok()) << "the adaptive norm without its shift";
  fa.norm.kind = WgmmaNormKind::kRms;
  fa.m = 57;
  EXPECT_FALSE(wgmma_gemm(stream_, fa).is_ok()) << "57 rows";
  fa.m = 50;
  fa.norm.ldx = 512;
  EXPECT_FALSE(wgmma_gemm(stream_, fa).is_ok()) << "a residual row stride shorter than n";
}

}  // namespace
}  // namespace edgevla::backends::cuda
