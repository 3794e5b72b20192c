// GPU tests of the warpgroup few-rows GEMM (runtime/backends/cuda/kernels/wgmma_gemm.hpp) against
// a double-precision host product: plain and with the GeGLU epilogue, at the action heads' shapes
// and odd row counts, a row stride longer than the row, a captured graph replayed, and the
// shapes it refuses. It runs on compute capability 9.0 only (sm_90a code); elsewhere the tests
// skip themselves, naming why.
#include "runtime/backends/cuda/kernels/wgmma_gemm.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/backends/cuda/kernels/kernels.hpp"
#include "tests/gpu/cuda_test_util.hpp"

namespace edgevla::backends::cuda {
namespace {

class CudaWgmmaGemm : public CudaKernels {
 protected:
  void SetUp() override {
    CudaKernels::SetUp();
    if (IsSkipped()) return;
    if (!wgmma_gemm_available()) GTEST_SKIP() << "the warpgroup GEMM runs on compute capability 9.0 (sm_90a code) only";
  }

  // D = A · Wᵀ (or its GeGLU) on the device against the host, rows m, A's row stride lda.
  // kF32Parts: `parts` k parts, summed here.
  // with_bias: an f32 bias (kNone, kGelu).
  // split: k slices in a cluster (bf16 outputs).
  void check(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t lda, WgmmaEpilogue epi, std::uint32_t seed,
             int parts = 1, bool with_bias = false, int split = 1) {
    const bool parts_out = epi == WgmmaEpilogue::kF32Parts, f32 = parts_out || epi == WgmmaEpilogue::kF32;
    const std::string what = "m " + std::to_string(m) + " n " + std::to_string(n) + " k " + std::to_string(k) +
                             (epi == WgmmaEpilogue::kGeglu ? " geglu" : "") +
                             (parts_out ? " f32 in " + std::to_string(parts) + " k parts" : "") +
                             (epi == WgmmaEpilogue::kF32 ? " f32 plus an addend" : "") +
                             (epi == WgmmaEpilogue::kGelu ? " gelu" : "") + (epi == WgmmaEpilogue::kSilu ? " silu" : "") +
                             (epi == WgmmaEpilogue::kRelu ? " relu" : "") + (with_bias ? " bias" : "") +
                             (split > 1 ? " " + std::to_string(split) + " k slices" : "");
    const auto bias = random_values(static_cast<std::size_t>(n), -0.5f, 0.5f, seed + 2);
    DeviceBuffer dbias(bias, DType::kF32);
    const auto a = rounded(random_values(static_cast<std::size_t>(m * lda), -2.0f, 2.0f, seed), DType::kBF16);
    const auto w = rounded(random_values(static_cast<std::size_t>(n * k), -0.1f, 0.1f, seed + 1), DType::kBF16);
    DeviceBuffer da(a, DType::kBF16), dw(w, DType::kBF16), tiled(wgmma_tiled_bytes(n, k));
    const std::int64_t out_n = epi == WgmmaEpilogue::kGeglu ? n / 2 : n;
    // Parts one row apart more than they need (the stride is honoured, not assumed).
    const std::int64_t part_stride = (m + 1) * out_n;
    DeviceBuffer dd(static_cast<std::size_t>(parts_out ? parts * part_stride * 4 : m * out_n * (f32 ? 4 : 2)));
    // kF32: an addend table with a row stride longer than its row.
    const std::int64_t ld_add = n + 8;
    const auto addend = random_values(static_cast<std::size_t>(m * ld_add), -1.0f, 1.0f, seed + 3);
    DeviceBuffer daddend(addend, DType::kF32);
    ASSERT_OK(wgmma_tile_weight(stream_, dw.get(), n, k, k, epi, tiled.get()));
    WgmmaGemmArgs g;
    g.a = da.get(), g.m = m, g.k = k, g.lda = lda;
    g.w_tiled = tiled.get(), g.n = n, g.epilogue = epi;
    g.d = dd.get(), g.ldd = out_n;
    g.k_parts = parts, g.part_stride = part_stride;
    g.k_split = split;
    if (with_bias) g.bias = static_cast<const float*>(dbias.get());
    if (epi == WgmmaEpilogue::kF32) g.addend = static_cast<const float*>(daddend.get()), g.ld_add = ld_add;
    ASSERT_OK(wgmma_gemm(stream_, g));
    sync();
    std::vector<float> got;
    if (epi == WgmmaEpilogue::kF32) {
      got = dd.download(DType::kF32, static_cast<std::size_t>(m * out_n));
    } else if (parts_out) {
      const auto all = dd.download(DType::kF32, static_cast<std::size_t>(parts * part_stride));
      got.assign(static_cast<std::size_t>(m * out_n), 0.0f);
      for (int q = 0; q < parts; ++q) {
        for (std::size_t i = 0; i < got.size(); ++i) got[i] += all[q * part_stride + static_cast<std::int64_t>(i)];
      }
    } else {
      got = dd.download(DType::kBF16, static_cast<std::size_t>(m * out_n));
    }
    // The host product in double; the GeGLU on the gate and up rounded to bf16, as the kernel does.
    std::vector<double> prod(static_cast<std::size_t>(m * n));
    for (std::int64_t r = 0; r < m; ++r) {
      for (std::int64_t c = 0; c < n; ++c) {
        double s = 0.0;
        for (std::int64_t t = 0; t < k; ++t) s += static_cast<double>(a[r * lda + t]) * w[c * k + t];
        prod[r * n + c] = s;
      }
    }
    std::vector<double> ref(static_cast<std::size_t>(m * out_n));
    for (std::int64_t r = 0; r < m; ++r) {
      for (std::int64_t c = 0; c < out_n; ++c) {
        if (epi != WgmmaEpilogue::kGeglu) {
          double v = prod[r * n + c] + (with_bias ? bias[c] : 0.0);
          if (epi == WgmmaEpilogue::kGelu) v = gelu_ref(v);
          if (epi == WgmmaEpilogue::kSilu) v = v / (1.0 + std::exp(-v));
          if (epi == WgmmaEpilogue::kRelu) v = std::max(v, 0.0);
          if (epi == WgmmaEpilogue::kF32) v += addend[r * ld_add + c];
          ref[r * out_n + c] = v;
        } else {
          const double g0 = rounded({static_cast<float>(prod[r * n + c])}, DType::kBF16)[0];
          const double u0 = rounded({static_cast<float>(prod[r * n + out_n + c])}, DType::kBF16)[0];
          ref[r * out_n + c] = gelu_ref(g0) * u0;
        }
      }
    }
    double num = 0.0, den = 0.0;
    for (std::size_t i = 0; i < ref.size(); ++i) {
      num += (got[i] - ref[i]) * (got[i] - ref[i]);
      den += ref[i] * ref[i];
    }
    const double rel = std::sqrt(num / den);
    std::printf("  %-40s rel-L2 %.2e\n", what.c_str(), rel);
    // bf16 output: its rounding (2^-9 a value) and the summation order; f32: the order only.
    EXPECT_LE(rel, f32 ? 1e-5 : 6e-3) << what;
  }
};

TEST_F(CudaWgmmaGemm, MatchesTheHostProduct) {
  check(50, 8192, 1024, 1024, WgmmaEpilogue::kNone, 1);   // pi0.5's gate|up
  check(51, 2560, 1024, 1024, WgmmaEpilogue::kNone, 2);   // pi0's q|k|v rows
  check(56, 128, 256, 264, WgmmaEpilogue::kNone, 3);      // every row; a longer row stride
  check(1, 64, 64, 64, WgmmaEpilogue::kNone, 4);          // one row, one tile
  check(13, 192, 1536, 1536, WgmmaEpilogue::kNone, 5);    // k past the ring (24 stages of 8)
}

TEST_F(CudaWgmmaGemm, TheGegluEpilogueMatches) {
  check(50, 8192, 1024, 1024, WgmmaEpilogue::kGeglu, 11);  // pi0.5's gate|up → GeGLU
  check(7, 256, 128, 136, WgmmaEpilogue::kGeglu, 12);
}

// GR00T's forms: a bias on the plain output, and bias then GELU-tanh (its ff1).
TEST_F(CudaWgmmaGemm, BiasAndGeluEpiloguesMatch) {
  check(51, 4608, 1536, 1536, WgmmaEpilogue::kNone, 41, 1, true);  // self-attention q|k|v
  check(51, 6144, 1536, 1536, WgmmaEpilogue::kGelu, 42, 1, true);  // ff1
  check(20, 128, 192, 200, WgmmaEpilogue::kGelu, 43, 1, false);
}

// GR00T's action encoder and decoder: bias then SiLU or ReLU (bf16), and the f32 output with a
// bias and an addend (the position table added into the residual stream), with and without k
// slices.
TEST_F(CudaWgmmaGemm, ActivationAndF32EpiloguesMatch) {
  check(50, 1536, 1536, 1536, WgmmaEpilogue::kSilu, 71, 1, true, 4);  // W2 on the action embedding
  check(50, 1024, 1024, 1024, WgmmaEpilogue::kRelu, 72, 1, true, 4);  // decoder layer 1
  check(50, 1536, 128, 128, WgmmaEpilogue::kNone, 73, 1, true);        // W1: two k blocks
  check(50, 1536, 1536, 1536, WgmmaEpilogue::kF32, 74, 1, true, 4);   // W3 plus the positions
  check(17, 192, 256, 264, WgmmaEpilogue::kF32, 75, 1, false);        // no bias, one slice
  check(9, 128, 128, 128, WgmmaEpilogue::kRelu, 76, 1, false, 2);
}

// More rows than one tile: two to four row tiles a block (the ring shortened for three and four),
// and blocks along the rows past 224, for every output form (the backbones' products).
TEST_F(CudaWgmmaGemm, RowTilesAndRowBlocksMatch) {
  EXPECT_EQ(wgmma_row_tiles(1), 1);
  EXPECT_EQ(wgmma_row_tiles(56), 1);
  EXPECT_EQ(wgmma_row_tiles(57), 2);
  EXPECT_EQ(wgmma_row_tiles(131), 3);
  EXPECT_EQ(wgmma_row_tiles(224), 4);
  EXPECT_EQ(wgmma_row_tiles(1000), 4);
  check(57, 256, 512, 512, WgmmaEpilogue::kNone, 81, 1, true);          // two tiles, one row in the second
  check(131, 4096, 2048, 2048, WgmmaEpilogue::kNone, 82);               // the LLM's q|k|v at one view
  check(144, 2048, 6144, 6144, WgmmaEpilogue::kF32Parts, 83, 4);        // its down in k parts
  check(224, 512, 1152, 1160, WgmmaEpilogue::kGelu, 84, 1, true);       // four tiles; a longer row stride
  check(300, 384, 256, 256, WgmmaEpilogue::kF32, 85, 1, true);          // two row blocks (224 + 76)
  check(456, 1024, 640, 640, WgmmaEpilogue::kGeglu, 86);                // three row blocks
  check(100, 128, 128, 128, WgmmaEpilogue::kRelu, 87, 1, true);
}

// q|k|v with RoPE in the epilogue: the first rot_heads heads of h rotated from position p0, the
// rest (the values) as they are; against the host product rounded to bf16 and rotated in f32,
// and with the angles read from rope_table's table, bit for bit the same.
TEST_F(CudaWgmmaGemm, TheRopeEpilogueMatches) {
  struct Case {
    std::int64_t m, rot_heads, plain_heads, h, k;
    int p0;
  };
  for (const Case& cs : {Case{50, 9, 1, 256, 1024, 37}, Case{17, 3, 2, 64, 128, 0}, Case{51, 2, 0, 128, 192, 500}}) {
    const std::int64_t n = (cs.rot_heads + cs.plain_heads) * cs.h, m = cs.m, k = cs.k, h = cs.h;
    const std::string what = "m " + std::to_string(m) + " heads " + std::to_string(cs.rot_heads) + "+" +
                             std::to_string(cs.plain_heads) + " of " + std::to_string(h) + " from " +
                             std::to_string(cs.p0);
    const auto a = rounded(random_values(static_cast<std::size_t>(m * k), -2.0f, 2.0f, 51), DType::kBF16);
    const auto w = rounded(random_values(static_cast<std::size_t>(n * k), -0.1f, 0.1f, 52), DType::kBF16);
    std::vector<float> inv(static_cast<std::size_t>(h / 2));
    for (std::int64_t d = 0; d < h / 2; ++d) inv[d] = static_cast<float>(std::pow(10000.0, -2.0 * d / h));
    DeviceBuffer da(a, DType::kBF16), dw(w, DType::kBF16), tiled(wgmma_tiled_bytes(n, k)), dd(m * n * 2);
    DeviceBuffer dinv(inv, DType::kF32), dpos(sizeof(std::int32_t));
    const std::int32_t p0 = cs.p0;
    ASSERT_CUDA(cudaMemcpy(dpos.get(), &p0, sizeof p0, cudaMemcpyHostToDevice));
    WgmmaRope rope{cs.rot_heads * h, h, static_cast<const std::int32_t*>(dpos.get()),
                   static_cast<const float*>(dinv.get())};
    ASSERT_OK(wgmma_tile_weight(stream_, dw.get(), n, k, k, WgmmaEpilogue::kRope, tiled.get(), rope));
    WgmmaGemmArgs g;
    g.a = da.get(), g.m = m, g.k = k, g.lda = k;
    g.w_tiled = tiled.get(), g.n = n, g.epilogue = WgmmaEpilogue::kRope, g.rope = rope;
    g.d = dd.get(), g.ldd = n;
    ASSERT_OK(wgmma_gemm(stream_, g));
    sync();
    const auto got = dd.download(DType::kBF16, static_cast<std::size_t>(m * n));
    // The angles read from a table made once (rope_table) instead of computed: the same bits.
    DeviceBuffer table(static_cast<std::size_t>(m * h) * sizeof(float));
    ASSERT_OK(rope_table(stream_, m, h / 2, static_cast<const std::int32_t*>(dpos.get()),
                         static_cast<const float*>(dinv.get()), static_cast<float*>(table.get())));
    g.rope.table = static_cast<const float*>(table.get());
    ASSERT_OK(wgmma_gemm(stream_, g));
    sync();
    EXPECT_EQ(dd.download(DType::kBF16, static_cast<std::size_t>(m * n)), got) << what << ": with the angles' table";
    std::vector<double> ref(static_cast<std::size_t>(m * n));
    std::vector<float> prod(static_cast<std::size_t>(m * n));
    for (std::int64_t r = 0; r < m; ++r) {
      for (std::int64_t c = 0; c < n; ++c) {
        double s = 0.0;
        for (std::int64_t t = 0; t < k; ++t) s += static_cast<double>(a[r * k + t]) * w[c * k + t];
        prod[r * n + c] = rounded({static_cast<float>(s)}, DType::kBF16)[0];
      }
      for (std::int64_t c = 0; c < n; ++c) {
        const std::int64_t head = c / h, d = c % h;
        if (head >= cs.rot_heads) {
          ref[r * n + c] = prod[r * n + c];
          continue;
        }
        const std::int64_t d0 = d % (h / 2);
        const float angle = static_cast<float>(cs.p0 + r) * inv[d0];
        const double x1 = prod[r * n + head * h + d0], x2 = prod[r * n + head * h + d0 + h / 2];
        ref[r * n + c] = d < h / 2 ? x1 * std::cos(angle) - x2 * std::sin(angle)
                                   : x2 * std::cos(angle) + x1 * std::sin(angle);
      }
    }
    double num = 0.0, den = 0.0;
    for (std::size_t i = 0; i < ref.size(); ++i) {
      num += (got[i] - ref[i]) * (got[i] - ref[i]);
      den += ref[i] * ref[i];
    }
    const double rel = std::sqrt(num / den);
    std::printf("  rope %-36s rel-L2 %.2e\n", what.c_str(), rel);
    EXPECT_LE(rel, 6e-3) << what;
  }
}

// The narrow projections' form: f32 k parts, near-equal (uneven where k blocks do not divide).
TEST_F(CudaWgmmaGemm, KPartsSumToTheProduct) {
  check(50, 1024, 4096, 4096, WgmmaEpilogue::kF32Parts, 31, 8);  // pi0.5's down
  check(50, 1024, 2048, 2048, WgmmaEpilogue::kF32Parts, 32, 4);  // pi0.5's o
  check(51, 192, 640, 648, WgmmaEpilogue::kF32Parts, 33, 3);     // 10 k blocks in 3 parts: 3, 3, 4
  check(9, 64, 128, 128, WgmmaEpilogue::kF32Parts, 34, 1);       // one part, f32 out
  EXPECT_EQ(wgmma_k_parts(1024, 4096, 8, 132), 8);
  EXPECT_EQ(wgmma_k_parts(8192, 1024, 8, 132), 1);
  EXPECT_EQ(wgmma_k_parts(1024, 256, 8, 132), 2);  // at least two k blocks a part
}

// k split across a cluster: the slices' sums added by the leader before its epilogue (uneven
// slices where k blocks do not divide), for the plain, bias, GELU and GeGLU outputs.
TEST_F(CudaWgmmaGemm, KSlicesInAClusterMatch) {
  check(50, 2560, 1024, 1024, WgmmaEpilogue::kNone, 61, 1, false, 3);  // pi0.5's q|k|v: 16 k blocks in 5, 5, 6
  check(51, 1536, 1536, 1536, WgmmaEpilogue::kNone, 62, 1, true, 4);   // GR00T's cross q, with its bias
  check(51, 6144, 1536, 1536, WgmmaEpilogue::kGelu, 63, 1, true, 2);   // GR00T's ff1
  check(50, 8192, 1024, 1024, WgmmaEpilogue::kGeglu, 64, 1, false, 2); // pi0.5's gate|up
  check(5, 128, 128, 128, WgmmaEpilogue::kNone, 65, 1, false, 2);      // one k block a slice
  check(33, 256, 1536, 1536, WgmmaEpilogue::kGelu, 66, 1, false, 3);  // 24 k blocks, past the ring in each slice
  EXPECT_EQ(wgmma_k_split(2560, 1024, 4, 132), 1);  // 40 blocks fill more than a quarter of 132
  EXPECT_EQ(wgmma_k_split(8192, 1024, 4, 132), 1);  // 128 blocks already fill the device
  EXPECT_EQ(wgmma_k_split(1536, 1536, 4, 132), 4);
  EXPECT_EQ(wgmma_k_split(1536, 1536, 2, 132), 2);  // the cap
  EXPECT_EQ(wgmma_k_split(64, 128, 4, 132), 1);     // at least two k blocks a slice
}

// Captured once and replayed: the same output every time (no state kept between launches).
TEST_F(CudaWgmmaGemm, AGraphReplaysBitForBit) {
  const std::int64_t m = 50, n = 1024, k = 512;
  DeviceBuffer da(rounded(random_values(m * k, -1.0f, 1.0f, 21), DType::kBF16), DType::kBF16);
  DeviceBuffer dw(rounded(random_values(n * k, -0.1f, 0.1f, 22), DType::kBF16), DType::kBF16);
  DeviceBuffer tiled(wgmma_tiled_bytes(n, k)), dd(m * n / 2 * 2);
  ASSERT_OK(wgmma_tile_weight(stream_, dw.get(), n, k, k, WgmmaEpilogue::kGeglu, tiled.get()));
  WgmmaGemmArgs g;
  g.a = da.get(), g.m = m, g.k = k, g.lda = k;
  g.w_tiled = tiled.get(), g.n = n, g.epilogue = WgmmaEpilogue::kGeglu;
  g.d = dd.get(), g.ldd = n / 2;
  ASSERT_OK(wgmma_gemm(stream_, g));
  sync();
  const auto first = dd.download(DType::kBF16, m * n / 2);
  expect_graph_replays(
      stream_, dd.get(), m * n / 2 * 2, 20, first, [&] { return wgmma_gemm(stream_, g); },
      [&] { return dd.download(DType::kBF16, m * n / 2); });
}

TEST_F(CudaWgmmaGemm, RefusesShapesItDoesNotFit) {
  EXPECT_TRUE(wgmma_gemm_fits(57, 64, 64, WgmmaEpilogue::kNone));    // more than one row tile
  EXPECT_FALSE(wgmma_gemm_fits(0, 64, 64, WgmmaEpilogue::kNone));    // no rows
  EXPECT_FALSE(wgmma_gemm_fits(8, 96, 64, WgmmaEpilogue::kNone));    // n not a multiple of 64
  EXPECT_FALSE(wgmma_gemm_fits(8, 64, 96, WgmmaEpilogue::kNone));    // k not a multiple of 64
  EXPECT_FALSE(wgmma_gemm_fits(8, 64, 64, WgmmaEpilogue::kGeglu));   // GeGLU: n a multiple of 128
  EXPECT_TRUE(wgmma_gemm_fits(56, 128, 64, WgmmaEpilogue::kGeglu));
  DeviceBuffer buf(1 << 16);
  WgmmaGemmArgs g;
  g.a = buf.get(), g.m = 0, g.k = 64, g.lda = 64, g.w_tiled = buf.get(), g.n = 64, g.d = buf.get(), g.ldd = 64;
  const Status st = wgmma_gemm(stream_, g);
  EXPECT_FALSE(st.is_ok());
  EXPECT_NE(st.to_string().find("rows"), std::string::npos) << st.to_string();
  EXPECT_FALSE(wgmma_tile_weight(stream_, buf.get(), 64, 96, 96, WgmmaEpilogue::kNone, buf.get()).is_ok());
  DeviceBuffer fbias(std::vector<float>(64, 0.0f), DType::kF32);
  g.m = 8, g.bias = static_cast<const float*>(fbias.get()), g.epilogue = WgmmaEpilogue::kGeglu, g.n = 128;
  EXPECT_FALSE(wgmma_gemm(stream_, g).is_ok());  // no bias with the GeGLU
  g.bias = nullptr, g.epilogue = WgmmaEpilogue::kNone, g.n = 64;
  g.k_parts = 2;  // k parts need the f32 parts output
  EXPECT_FALSE(wgmma_gemm(stream_, g).is_ok());
  g.epilogue = WgmmaEpilogue::kF32Parts, g.k_parts = 2, g.part_stride = 64;  // parts overlapping
  EXPECT_FALSE(wgmma_gemm(stream_, g).is_ok());
  g.k_parts = 2, g.part_stride = 8 * 64, g.k = 64, g.lda = 64;  // more parts than k blocks
  EXPECT_FALSE(wgmma_gemm(stream_, g).is_ok());
  g.k = 256, g.lda = 256, g.k_split = 2;  // k slices with the parts output
  EXPECT_FALSE(wgmma_gemm(stream_, g).is_ok());
  g.epilogue = WgmmaEpilogue::kNone, g.k_parts = 1, g.k_split = kWgmmaMaxSplit + 1;
  const Status split = wgmma_gemm(stream_, g);
  EXPECT_FALSE(split.is_ok());
  EXPECT_NE(split.to_string().find("k split"), std::string::npos) << split.to_string();
  g.epilogue = WgmmaEpilogue::kRope, g.k_split = 2;  // RoPE's epilogue has no split
  EXPECT_FALSE(wgmma_gemm(stream_, g).is_ok());
  g.epilogue = WgmmaEpilogue::kNone, g.m = 57;  // k slices take one row tile
  const Status tiles = wgmma_gemm(stream_, g);
  EXPECT_FALSE(tiles.is_ok());
  EXPECT_NE(tiles.to_string().find("rows"), std::string::npos) << tiles.to_string();
  g.m = 8;
  g.epilogue = WgmmaEpilogue::kRelu, g.k_split = 1;
  g.addend = static_cast<const float*>(fbias.get()), g.ld_add = 64;  // an addend needs the f32 output
  const Status addend = wgmma_gemm(stream_, g);
  EXPECT_FALSE(addend.is_ok());
  EXPECT_NE(addend.to_string().find("addend"), std::string::npos) << addend.to_string();
  g.epilogue = WgmmaEpilogue::kF32, g.ld_add = 32;  // its row stride shorter than n
  EXPECT_FALSE(wgmma_gemm(stream_, g).is_ok());
}

}  // namespace
}  // namespace edgevla::backends::cuda
