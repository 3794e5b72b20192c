// GPU tests of the MLP half as one kernel (runtime/backends/cuda/kernels/wgmma_mlp.hpp) against
// the two warpgroup GEMMs it replaces (kGelu or kGeglu into bf16 h, then kF32Parts over h in as
// many parts): bit for bit, at GR00T's DiT shape (51 rows, 1536 → 6144 → 1536 in clusters of 12),
// at pi0.5's expert (50 rows, 1024 → gate|up 8192 → GeGLU 4096 → 1024 in clusters of 8) and at
// smaller shapes covering 1 to 4 output tiles a block, clusters of 2 to 12, full and odd row
// counts, no bias; inside a captured graph replayed; and the shapes it refuses. Compute capability
// 9.0 only (sm_90a code); elsewhere the tests skip themselves, naming why.
#include "runtime/backends/cuda/kernels/wgmma_mlp.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/backends/cuda/kernels/wgmma_gemm.hpp"
#include "tests/gpu/cuda_test_util.hpp"

namespace edgevla::backends::cuda {
namespace {

class CudaWgmmaMlp : public CudaKernels {
 protected:
  void SetUp() override {
    CudaKernels::SetUp();
    if (IsSkipped()) return;
    if (!wgmma_gemm_available()) GTEST_SKIP() << "the warpgroup kernels run on compute capability 9.0 (sm_90a code) only";
  }

  // The fused kernel against the two GEMMs on the same tiled weights; `graph`: the fused call
  // captured once and replayed three times.
  // geglu: W1 is a fused gate|up [2 · hidden, d] (no bias).
  void check(std::int64_t m, std::int64_t d, std::int64_t hidden, std::int64_t n_out, int cluster, bool bias,
             std::uint32_t seed, bool graph = false, bool geglu = false) {
    const std::string what = "m " + std::to_string(m) + " " + std::to_string(d) + " → " + std::to_string(hidden) +
                             " → " + std::to_string(n_out) + " clusters of " + std::to_string(cluster) +
                             (bias ? " bias" : "") + (graph ? " graph" : "") + (geglu ? " geglu" : "");
    const std::int64_t n1 = geglu ? 2 * hidden : hidden;  // W1's rows
    const WgmmaEpilogue epi1 = geglu ? WgmmaEpilogue::kGeglu : WgmmaEpilogue::kGelu;
    ASSERT_TRUE(wgmma_mlp_fits(m, d, hidden, n_out, cluster)) << what;
    const int parts = wgmma_mlp_parts(hidden, cluster);
    const std::int64_t ldx = d + 8, ldp = n_out + 16, part_stride = (m + 1) * ldp;
    const auto x = rounded(random_values(static_cast<std::size_t>(m * ldx), -2.0f, 2.0f, seed), DType::kBF16);
    const auto w1 = rounded(random_values(static_cast<std::size_t>(n1 * d), -0.1f, 0.1f, seed + 1), DType::kBF16);
    const auto w2 = rounded(random_values(static_cast<std::size_t>(n_out * hidden), -0.05f, 0.05f, seed + 2),
                            DType::kBF16);
    const auto b1 = random_values(static_cast<std::size_t>(hidden), -0.5f, 0.5f, seed + 3);
    DeviceBuffer dx(x, DType::kBF16), dw1(w1, DType::kBF16), dw2(w2, DType::kBF16), db1(b1, DType::kF32);
    DeviceBuffer t1(wgmma_tiled_bytes(n1, d)), t2(wgmma_tiled_bytes(n_out, hidden));
    ASSERT_OK(wgmma_tile_weight(stream_, dw1.get(), n1, d, d, epi1, t1.get()));
    ASSERT_OK(wgmma_tile_weight(stream_, dw2.get(), n_out, hidden, hidden, WgmmaEpilogue::kF32Parts, t2.get()));
    const std::size_t out_floats = static_cast<std::size_t>(parts * part_stride);
    // Sentinels (NaN bits) wherever neither path may write: row gaps, rows past m.
    const std::vector<float> sentinel(out_floats, std::nanf(""));
    DeviceBuffer fused(sentinel, DType::kF32), ref(sentinel, DType::kF32), h(static_cast<std::size_t>(m * hidden * 2));

    // The two GEMMs.
    WgmmaGemmArgs g1;
    g1.a = dx.get(), g1.m = m, g1.k = d, g1.lda = ldx, g1.w_tiled = t1.get(), g1.n = n1;
    g1.epilogue = epi1, g1.d = h.get(), g1.ldd = hidden;
    if (bias) g1.bias = db1.as<float>();
    ASSERT_OK(wgmma_gemm(stream_, g1));
    WgmmaGemmArgs g2;
    g2.a = h.get(), g2.m = m, g2.k = hidden, g2.lda = hidden, g2.w_tiled = t2.get(), g2.n = n_out;
    g2.epilogue = WgmmaEpilogue::kF32Parts, g2.d = ref.get(), g2.ldd = ldp, g2.k_parts = parts;
    g2.part_stride = part_stride;
    ASSERT_OK(wgmma_gemm(stream_, g2));

    WgmmaMlpArgs a;
    a.x = dx.get(), a.m = m, a.d = d, a.ldx = ldx, a.w1_tiled = t1.get(), a.b1 = bias ? db1.as<float>() : nullptr;
    a.hidden = hidden, a.w2_tiled = t2.get(), a.n_out = n_out, a.parts = fused.as<float>(), a.ldp = ldp;
    a.part_stride = part_stride, a.cluster = cluster, a.geglu = geglu;
    if (graph) {
      cudaGraph_t g = nullptr;
      cudaGraphExec_t exec = nullptr;
      ASSERT_CUDA(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
      const Status st = wgmma_mlp(stream_, a);
      ASSERT_CUDA(cudaStreamEndCapture(stream_, &g));
      ASSERT_OK(st);
      ASSERT_CUDA(cudaGraphInstantiate(&exec, g, 0));
      for (int r = 0; r < 3; ++r) ASSERT_CUDA(cudaGraphLaunch(exec, stream_));
      sync();
      cudaGraphExecDestroy(exec);
      cudaGraphDestroy(g);
    } else {
      ASSERT_OK(wgmma_mlp(stream_, a));
      sync();
    }
    const auto got = fused.download(DType::kF32, out_floats);
    const auto want = ref.download(DType::kF32, out_floats);
    std::size_t differ = 0, first = 0, written = 0;
    for (std::size_t i = 0; i < out_floats; ++i) {
      if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0) {
        if (differ++ == 0) first = i;
      }
      if (!std::isnan(want[i])) ++written;
    }
    EXPECT_EQ(written, static_cast<std::size_t>(parts * m * n_out)) << what << ": the GEMMs' parts";
    EXPECT_EQ(differ, 0u) << what << ": " << differ << " of " << out_floats << " floats differ from the two GEMMs; first at "
                          << first << ": " << got[first] << " against " << want[first];
  }
};

TEST_F(CudaWgmmaMlp, GrootDitShapeMatchesTheTwoGemms) {
  check(51, 1536, 6144, 1536, 12, true, 1);
  check(51, 1536, 6144, 1536, 12, true, 2, true);
}

TEST_F(CudaWgmmaMlp, Pi05ExpertShapeWithGegluMatchesTheTwoGemms) {
  check(50, 1024, 4096, 1024, 8, false, 3, false, true);
  check(50, 1024, 4096, 1024, 8, false, 4, true, true);
}

TEST_F(CudaWgmmaMlp, SmallShapesMatchTheTwoGemms) {
  check(17, 128, 512, 256, 4, true, 10);    // 2 parts, 1 output tile a block
  check(56, 256, 1024, 1536, 8, true, 11);  // all 56 rows, 3 tiles a block
  check(1, 64, 1024, 2048, 8, false, 12);   // one row, 4 tiles a block, no bias
  check(33, 192, 256, 128, 2, true, 13);    // clusters of 2
  check(40, 128, 1536, 768, 12, false, 14);  // clusters of 12, 1 tile a block
  check(17, 128, 512, 256, 4, false, 15, false, true);    // GeGLU, 1 tile a block
  check(56, 64, 1024, 2048, 8, false, 16, false, true);   // GeGLU, all rows, 4 tiles a block
  check(9, 192, 768, 1152, 6, false, 17, true, true);     // GeGLU, clusters of 6, 3 tiles, a graph
}

TEST_F(CudaWgmmaMlp, RefusesShapesItDoesNotTake) {
  EXPECT_FALSE(wgmma_mlp_fits(57, 128, 512, 256, 4));    // more than 56 rows
  EXPECT_FALSE(wgmma_mlp_fits(8, 100, 512, 256, 4));     // d not a multiple of 64
  EXPECT_FALSE(wgmma_mlp_fits(8, 128, 320, 256, 4));     // hidden not a multiple of 64 · cluster
  EXPECT_FALSE(wgmma_mlp_fits(8, 128, 512, 2048, 4));    // 8 output tiles a block
  EXPECT_FALSE(wgmma_mlp_fits(8, 128, 512 * 13, 64 * 13, 13));  // clusters past 12
  WgmmaMlpArgs a;
  a.m = 8, a.d = 128, a.hidden = 512, a.n_out = 256, a.cluster = 4;  // fits, but no pointers
  const Status st = wgmma_mlp(stream_, a);
  EXPECT_FALSE(st.is_ok());
  EXPECT_NE(st.to_string().find("null pointer"), std::string::npos) << st.to_string();
  a.m = 60;
  EXPECT_NE(wgmma_mlp(stream_, a).to_string().find("1 to 56 rows"), std::string::npos);
  // The GeGLU form with a bias.
  DeviceBuffer x(static_cast<std::size_t>(8 * 128 * 2)), w(16), out(static_cast<std::size_t>(2 * 8 * 256 * 4)), b(512 * 4);
  a.m = 8, a.x = x.get(), a.ldx = 128, a.w1_tiled = w.get(), a.w2_tiled = w.get(), a.parts = out.as<float>();
  a.ldp = 256, a.part_stride = 8 * 256, a.geglu = true, a.b1 = b.as<float>();
  EXPECT_NE(wgmma_mlp(stream_, a).to_string().find("takes no bias"), std::string::npos);
}

// How many of GR00T's clusters of 12 the device holds at once (printed: fewer than 8 would mean a
// second wave), and that the query answers.
TEST_F(CudaWgmmaMlp, ReportsResidentClusters) {
  const int n = wgmma_mlp_resident_clusters(51, 1536, 6144, 1536, 12);
  std::printf("resident clusters of 12 (GR00T's MLP half, 8 in the grid): %d\n", n);
  EXPECT_GT(n, 0);
}

}  // namespace
}  // namespace edgevla::backends::cuda
