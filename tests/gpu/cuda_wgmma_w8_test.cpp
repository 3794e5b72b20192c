// GPU tests of the warpgroup GEMM on int8 weights (runtime/backends/cuda/kernels/wgmma_w8.hpp):
// the quantisation (scales, rounding, the tiled layout) read back and checked on the host, the
// product against a double-precision host product over the dequantised weights (bf16 output with
// a bias, f32 k parts), the distance to the bf16 weights' product, a replayed graph, and the
// calls it refuses. Compute capability 9.0 only; elsewhere the tests skip themselves.
#include "runtime/backends/cuda/kernels/wgmma_w8.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/backends/cuda/kernels/wgmma_gemm.hpp"
#include "tests/gpu/cuda_test_util.hpp"

namespace edgevla::backends::cuda {
namespace {

class CudaWgmmaW8 : public CudaKernels {
 protected:
  void SetUp() override {
    CudaKernels::SetUp();
    if (IsSkipped()) return;
    if (!wgmma_gemm_available()) GTEST_SKIP() << "the warpgroup GEMM runs on compute capability 9.0 (sm_90a code) only";
  }

  // The tiled int8 weight read back as a row-major [n, k]. Tiles of 64 × 64 along k; inside a tile
  // the consumer thread t's wgmma register fragments: of warp t / 32's 16 rows and each 16 columns
  // kk, the pairs (row t%32/4, col 2(t%4)), (row + 8, same col), (row, col + 8), (row + 8, col + 8),
  // 8 bytes a slice kk; slices 0-1 at byte 16t, slices 2-3 at 2048 + 16t. The GeGLU form's rows
  // paired: in each 16 rows of a tile, row i < 8 a gate feature and row i + 8 its up.
  static std::vector<std::int8_t> untile(const std::vector<std::int8_t>& t, std::int64_t n, std::int64_t k, bool geglu) {
    std::vector<std::int8_t> w(static_cast<std::size_t>(n * k));
    const std::int64_t kbs = k / 64;
    for (std::int64_t i = 0; i < n * k; ++i) {
      const std::int64_t tile = i / 4096, e = i % 4096;
      const std::int64_t thread = (e % 2048) / 16, byte = e % 16;
      const std::int64_t slice = (e / 2048) * 2 + byte / 8, pair = (byte % 8) / 2;
      const std::int64_t r = (thread / 32) * 16 + (thread % 32) / 4 + (pair % 2) * 8;
      const std::int64_t c = slice * 16 + (thread % 4) * 2 + byte % 2 + (pair / 2) * 8;
      const std::int64_t nt = tile / kbs, feature = nt * 32 + (r / 16) * 8 + r % 8;
      const std::int64_t row = !geglu ? nt * 64 + r : (r % 16 < 8 ? feature : n / 2 + feature);
      w[static_cast<std::size_t>(row * k + (tile % kbs) * 64 + c)] = t[static_cast<std::size_t>(i)];
    }
    return w;
  }

  void check(std::int64_t m, std::int64_t n, std::int64_t k, WgmmaW8Epilogue epi, int parts, bool with_bias,
             std::uint32_t seed) {
    const bool f32 = epi == WgmmaW8Epilogue::kF32Parts, geglu = epi == WgmmaW8Epilogue::kGeglu,
               gelu = epi == WgmmaW8Epilogue::kGelu;
    const std::int64_t out_n = geglu ? n / 2 : n;
    const std::string what = "m " + std::to_string(m) + " n " + std::to_string(n) + " k " + std::to_string(k) +
                             (f32 ? " f32 in " + std::to_string(parts) + " k parts" : geglu ? " geglu" : gelu ? " gelu" : " bf16") +
                             (with_bias ? " bias" : "");
    const auto a = rounded(random_values(static_cast<std::size_t>(m * k), -2.0f, 2.0f, seed), DType::kBF16);
    auto w = rounded(random_values(static_cast<std::size_t>(n * k), -0.1f, 0.1f, seed + 1), DType::kBF16);
    for (std::int64_t c = 0; c < k; ++c) w[static_cast<std::size_t>(3 * k + c)] *= 20.0f;  // one row far wider
    std::fill(w.begin() + 4 * k, w.begin() + 5 * k, 0.0f);                               // and one of zeros
    w = rounded(w, DType::kBF16);
    const auto bias = random_values(static_cast<std::size_t>(n), -0.5f, 0.5f, seed + 2);
    DeviceBuffer da(a, DType::kBF16), dw(w, DType::kBF16), dbias(bias, DType::kF32);
    DeviceBuffer tiled(wgmma_w8_tiled_bytes(n, k)), scales(static_cast<std::size_t>(n * 4));
    ASSERT_OK(wgmma_w8_quantize(stream_, dw.get(), n, k, k, tiled.get(), static_cast<float*>(scales.get()), epi));
    const std::int64_t part_stride = (m + 1) * n;
    DeviceBuffer dd(static_cast<std::size_t>(f32 ? parts * part_stride * 4 : m * out_n * 2));
    WgmmaW8Args g;
    g.a = da.get(), g.m = m, g.k = k, g.lda = k;
    g.w_tiled = tiled.get(), g.scales = static_cast<const float*>(scales.get()), g.n = n;
    g.epilogue = epi, g.d = dd.get(), g.ldd = out_n, g.k_parts = parts, g.part_stride = part_stride;
    if (with_bias) g.bias = static_cast<const float*>(dbias.get());
    ASSERT_OK(wgmma_w8_gemm(stream_, g));
    sync();

    // The quantisation: scale = max|row| / 127 (1 for a zero row), q = round(w / scale).
    std::vector<std::int8_t> qt(static_cast<std::size_t>(n * k));
    ASSERT_CUDA(cudaMemcpy(qt.data(), tiled.get(), qt.size(), cudaMemcpyDeviceToHost));
    const auto q = untile(qt, n, k, geglu);
    const auto sc = scales.download(DType::kF32, static_cast<std::size_t>(n));
    for (std::int64_t r = 0; r < n; ++r) {
      float mx = 0.0f;
      for (std::int64_t c = 0; c < k; ++c) mx = std::max(mx, std::fabs(w[static_cast<std::size_t>(r * k + c)]));
      ASSERT_EQ(sc[static_cast<std::size_t>(r)], mx > 0.0f ? mx / 127.0f : 1.0f) << what << " row " << r;
      for (std::int64_t c = 0; c < k; ++c) {
        const float want = std::rint(w[static_cast<std::size_t>(r * k + c)] / sc[static_cast<std::size_t>(r)]);
        ASSERT_EQ(q[static_cast<std::size_t>(r * k + c)], static_cast<std::int8_t>(want)) << what << " at " << r << ", " << c;
      }
    }

    std::vector<float> got;
    if (f32) {
      const auto all = dd.download(DType::kF32, static_cast<std::size_t>(parts * part_stride));
      got.assign(static_cast<std::size_t>(m * n), 0.0f);
      for (int p = 0; p < parts; ++p) {
        for (std::size_t i = 0; i < got.size(); ++i) got[i] += all[static_cast<std::size_t>(p * part_stride) + i];
      }
    } else {
      got = dd.download(DType::kBF16, static_cast<std::size_t>(m * out_n));
    }
    // Against the dequantised weights (what the kernel computes), and against the bf16 weights
    // (what quantising costs). The GeGLU form: gate and up each rounded to bf16 first.
    std::vector<double> deq(static_cast<std::size_t>(m * n)), full(static_cast<std::size_t>(m * n));
    for (std::int64_t r = 0; r < m; ++r) {
      for (std::int64_t c = 0; c < n; ++c) {
        double s = 0.0, s_bf16 = 0.0;
        for (std::int64_t t = 0; t < k; ++t) {
          const double x = a[static_cast<std::size_t>(r * k + t)];
          s += x * q[static_cast<std::size_t>(c * k + t)];
          s_bf16 += x * w[static_cast<std::size_t>(c * k + t)];
        }
        deq[static_cast<std::size_t>(r * n + c)] = s * sc[static_cast<std::size_t>(c)];
        full[static_cast<std::size_t>(r * n + c)] = s_bf16;
      }
    }
    auto out = [&](const std::vector<double>& prod, std::int64_t r, std::int64_t c) {
      if (!geglu) {
        const double v = prod[static_cast<std::size_t>(r * n + c)] + (with_bias ? bias[static_cast<std::size_t>(c)] : 0.0);
        return gelu ? gelu_ref(v) : v;
      }
      const double gate = rounded({static_cast<float>(prod[static_cast<std::size_t>(r * n + c)])}, DType::kBF16)[0];
      const double up = rounded({static_cast<float>(prod[static_cast<std::size_t>(r * n + out_n + c)])}, DType::kBF16)[0];
      return gelu_ref(gate) * up;
    };
    double num = 0.0, den = 0.0, qnum = 0.0;
    for (std::int64_t r = 0; r < m; ++r) {
      for (std::int64_t c = 0; c < out_n; ++c) {
        const double ref = out(deq, r, c), ref_bf16 = out(full, r, c);
        const double v = got[static_cast<std::size_t>(r * out_n + c)];
        num += (v - ref) * (v - ref);
        den += ref * ref;
        qnum += (ref - ref_bf16) * (ref - ref_bf16);
      }
    }
    const double rel = std::sqrt(num / den), quant = std::sqrt(qnum / den);
    std::printf("  %-40s rel-L2 %.2e against the dequantised product, %.2e int8 against bf16 weights\n", what.c_str(),
                rel, quant);
    EXPECT_LE(rel, f32 ? 1e-5 : 6e-3) << what;
    EXPECT_LE(quant, 1e-2) << what << ": the quantisation moved the product further than expected";
  }
};

TEST_F(CudaWgmmaW8, MatchesTheHostProduct) {
  check(50, 2560, 1024, WgmmaW8Epilogue::kBf16, 1, false, 1);     // pi0.5's q|k|v
  check(50, 8192, 1024, WgmmaW8Epilogue::kBf16, 1, true, 2);      // gate|up's shape, a bias
  check(50, 1024, 2048, WgmmaW8Epilogue::kF32Parts, 4, false, 3);  // o in 4 k parts
  check(51, 1024, 4096, WgmmaW8Epilogue::kF32Parts, 4, false, 4);  // down
  check(7, 128, 640, WgmmaW8Epilogue::kF32Parts, 3, false, 5);     // 10 k blocks in 3 parts, 7 rows
  check(56, 64, 1024, WgmmaW8Epilogue::kBf16, 1, true, 6);         // every row, past the ring
  check(50, 8192, 1024, WgmmaW8Epilogue::kGeglu, 1, false, 7);     // pi0.5's gate|up with its GeGLU
  check(9, 256, 512, WgmmaW8Epilogue::kGeglu, 1, false, 8);        // two feature blocks, 9 rows
  check(51, 6144, 1536, WgmmaW8Epilogue::kGelu, 1, true, 9);       // GR00T's ff1: bias and GELU
  check(51, 1536, 6144, WgmmaW8Epilogue::kF32Parts, 8, false, 10); // GR00T's ff2 in 8 parts
}

// Captured once and replayed: the same output every time.
TEST_F(CudaWgmmaW8, AGraphReplaysBitForBit) {
  const std::int64_t m = 50, n = 1024, k = 1024;
  DeviceBuffer da(rounded(random_values(m * k, -1.0f, 1.0f, 11), DType::kBF16), DType::kBF16);
  DeviceBuffer dw(rounded(random_values(n * k, -0.1f, 0.1f, 12), DType::kBF16), DType::kBF16);
  DeviceBuffer tiled(wgmma_w8_tiled_bytes(n, k)), scales(n * 4), dd(m * n * 2);
  ASSERT_OK(wgmma_w8_quantize(stream_, dw.get(), n, k, k, tiled.get(), static_cast<float*>(scales.get())));
  WgmmaW8Args g;
  g.a = da.get(), g.m = m, g.k = k, g.lda = k;
  g.w_tiled = tiled.get(), g.scales = static_cast<const float*>(scales.get()), g.n = n;
  g.d = dd.get(), g.ldd = n;
  ASSERT_OK(wgmma_w8_gemm(stream_, g));
  sync();
  const auto first = dd.download(DType::kBF16, m * n);
  expect_graph_replays(
      stream_, dd.get(), m * n * 2, 20, first, [&] { return wgmma_w8_gemm(stream_, g); },
      [&] { return dd.download(DType::kBF16, m * n); });
}

TEST_F(CudaWgmmaW8, RefusesWhatItDoesNotFit) {
  DeviceBuffer buf(1 << 20), scales(4096);
  auto* s = static_cast<float*>(scales.get());
  EXPECT_FALSE(wgmma_w8_quantize(stream_, buf.get(), 96, 64, 64, buf.get(), s).is_ok()) << "n not a multiple of 64";
  EXPECT_FALSE(wgmma_w8_quantize(stream_, buf.get(), 64, 64, 32, buf.get(), s).is_ok()) << "row stride below k";
  WgmmaW8Args g;
  g.a = buf.get(), g.m = 57, g.k = 64, g.lda = 64;
  g.w_tiled = buf.get(), g.scales = s, g.n = 64, g.d = buf.get(), g.ldd = 64;
  EXPECT_FALSE(wgmma_w8_gemm(stream_, g).is_ok()) << "57 rows";
  g.m = 8;
  g.k_parts = 2;
  EXPECT_FALSE(wgmma_w8_gemm(stream_, g).is_ok()) << "k parts with the bf16 output";
  g.k_parts = 1;
  g.scales = nullptr;
  EXPECT_FALSE(wgmma_w8_gemm(stream_, g).is_ok()) << "no scales";
}

}  // namespace
}  // namespace edgevla::backends::cuda
