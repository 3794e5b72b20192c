// GPU tests of the heads kernel (runtime/backends/cuda/kernels/wgmma_heads.hpp): a head's
// projections and its attention in one kernel, against a host reference in double (q, k and v
// rounded to bf16 as the kernel's products are), for self-attention (q|k|v) and cross-attention
// (q, the keys and values given) at GR00T's full and small DiT shapes, with key counts across
// the kernel's shared-memory chunks, a replayed graph bit for bit, and the shapes it refuses. It
// runs on compute capability 9.0 only (sm_90a code); elsewhere the tests skip themselves.
#include "runtime/backends/cuda/kernels/wgmma_heads.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/backends/cuda/kernels/wgmma_gemm.hpp"
#include "tests/gpu/cuda_test_util.hpp"

namespace edgevla::backends::cuda {
namespace {

struct Case {
  WgmmaHeadsMode mode;
  std::int64_t m, heads, hd, k, lda;
  std::int32_t keys;  // kCross
};

std::string describe(const Case& c) {
  return std::string(c.mode == WgmmaHeadsMode::kSelf ? "self" : "cross") + " m " + std::to_string(c.m) + " heads " +
         std::to_string(c.heads) + " of " + std::to_string(c.hd) + " k " + std::to_string(c.k) +
         (c.mode == WgmmaHeadsMode::kCross ? " keys " + std::to_string(c.keys) : "");
}

class CudaWgmmaHeads : public CudaKernels {
 protected:
  void SetUp() override {
    CudaKernels::SetUp();
    if (IsSkipped()) return;
    if (!wgmma_gemm_available()) GTEST_SKIP() << "the heads kernel runs on compute capability 9.0 (sm_90a code) only";
  }

  // Inputs of one case on the host and the device; run() enqueues the kernel.
  struct Setup {
    Case c;
    std::int64_t width = 0, n = 0, ld_kv = 0;
    std::vector<float> a, w, bias, kv;
    std::unique_ptr<DeviceBuffer> da, dw, tiled, dbias, dkv, dcount, dout;
    WgmmaHeadsArgs args;
  };

  std::unique_ptr<Setup> prepare(const Case& c, std::uint32_t seed) {
    auto s = std::make_unique<Setup>();
    s->c = c;
    s->width = c.heads * c.hd;
    s->n = (c.mode == WgmmaHeadsMode::kSelf ? 3 : 1) * s->width;
    s->a = rounded(random_values(static_cast<std::size_t>(c.m * c.lda), -2.0f, 2.0f, seed), DType::kBF16);
    s->w = rounded(random_values(static_cast<std::size_t>(s->n * c.k), -0.06f, 0.06f, seed + 1), DType::kBF16);
    s->bias = random_values(static_cast<std::size_t>(s->n), -0.5f, 0.5f, seed + 2);
    s->da = std::make_unique<DeviceBuffer>(s->a, DType::kBF16);
    s->dw = std::make_unique<DeviceBuffer>(s->w, DType::kBF16);
    s->tiled = std::make_unique<DeviceBuffer>(static_cast<std::size_t>(s->n * c.k * 2));
    s->dbias = std::make_unique<DeviceBuffer>(s->bias, DType::kF32);
    s->dout = std::make_unique<DeviceBuffer>(static_cast<std::size_t>(c.m * s->width * 2));
    EXPECT_OK(wgmma_heads_tile_weight(stream_, s->dw->get(), s->n, c.k, c.k, c.hd, s->tiled->get()));
    WgmmaHeadsArgs& g = s->args;
    g.mode = c.mode, g.a = s->da->get(), g.m = c.m, g.k = c.k, g.lda = c.lda;
    g.w_tiled = s->tiled->get(), g.bias = s->dbias->as<float>(), g.heads = c.heads, g.head_dim = c.hd;
    g.scale = 1.0f / std::sqrt(static_cast<float>(c.hd));
    g.out = s->dout->get(), g.ldo = s->width;
    if (c.mode == WgmmaHeadsMode::kCross) {
      // Keys then values in one row per token, a longer row than both (as the engine's cross k|v).
      s->ld_kv = 2 * s->width + 16;
      const std::int64_t rows = std::max<std::int32_t>(c.keys, 1);
      s->kv = rounded(random_values(static_cast<std::size_t>(rows * s->ld_kv), -2.0f, 2.0f, seed + 3), DType::kBF16);
      s->dkv = std::make_unique<DeviceBuffer>(s->kv, DType::kBF16);
      s->dcount = std::make_unique<DeviceBuffer>(sizeof(std::int32_t));
      EXPECT_EQ(cudaMemcpy(s->dcount->get(), &c.keys, sizeof c.keys, cudaMemcpyHostToDevice), cudaSuccess);
      g.keys = s->dkv->get();
      g.values = static_cast<const unsigned char*>(s->dkv->get()) + s->width * 2;
      g.ld_kv = s->ld_kv;
      g.key_count = s->dcount->as<std::int32_t>();
    }
    settle();
    return s;
  }

  // The host reference: products plus bias rounded to bf16, attention in double.
  static std::vector<double> reference(const Setup& s) {
    const Case& c = s.c;
    auto product = [&](std::int64_t row, std::int64_t feature) {
      double v = s.bias[static_cast<std::size_t>(feature)];
      for (std::int64_t t = 0; t < c.k; ++t) v += static_cast<double>(s.a[row * c.lda + t]) * s.w[feature * c.k + t];
      return static_cast<double>(rounded({static_cast<float>(v)}, DType::kBF16)[0]);
    };
    const bool self = c.mode == WgmmaHeadsMode::kSelf;
    const std::int64_t keys = self ? c.m : c.keys;
    std::vector<double> out(static_cast<std::size_t>(c.m * s.width), 0.0);
    for (std::int64_t h = 0; h < c.heads; ++h) {
      std::vector<double> q(static_cast<std::size_t>(c.m * c.hd)), kk(static_cast<std::size_t>(keys * c.hd)),
          vv(static_cast<std::size_t>(keys * c.hd));
      for (std::int64_t r = 0; r < c.m; ++r) {
        for (std::int64_t d = 0; d < c.hd; ++d) q[r * c.hd + d] = product(r, h * c.hd + d);
      }
      for (std::int64_t t = 0; t < keys; ++t) {
        for (std::int64_t d = 0; d < c.hd; ++d) {
          if (self) {
            kk[t * c.hd + d] = product(t, s.width + h * c.hd + d);
            vv[t * c.hd + d] = product(t, 2 * s.width + h * c.hd + d);
          } else {
            kk[t * c.hd + d] = s.kv[t * s.ld_kv + h * c.hd + d];
            vv[t * c.hd + d] = s.kv[t * s.ld_kv + s.width + h * c.hd + d];
          }
        }
      }
      const double scale = 1.0 / std::sqrt(static_cast<double>(c.hd));
      for (std::int64_t r = 0; r < c.m; ++r) {
        std::vector<double> p(static_cast<std::size_t>(keys));
        double mx = -INFINITY, sum = 0.0;
        for (std::int64_t t = 0; t < keys; ++t) {
          double dot = 0.0;
          for (std::int64_t d = 0; d < c.hd; ++d) dot += q[r * c.hd + d] * kk[t * c.hd + d];
          p[t] = dot * scale;
          mx = std::max(mx, p[t]);
        }
        for (double& x : p) sum += (x = std::exp(x - mx));
        for (std::int64_t d = 0; d < c.hd; ++d) {
          double o = 0.0;
          for (std::int64_t t = 0; t < keys; ++t) o += p[t] * vv[t * c.hd + d];
          out[r * s.width + h * c.hd + d] = keys > 0 ? o / sum : 0.0;
        }
      }
    }
    return out;
  }

  void check(const Case& c, std::uint32_t seed) {
    const std::string what = describe(c);
    auto s = prepare(c, seed);
    ASSERT_OK(wgmma_heads_attention(stream_, s->args));
    sync();
    const auto got = s->dout->download(DType::kBF16, static_cast<std::size_t>(c.m * s->width));
    const auto ref = reference(*s);
    double num = 0.0, den = 0.0;
    for (std::size_t i = 0; i < ref.size(); ++i) {
      num += (got[i] - ref[i]) * (got[i] - ref[i]);
      den += ref[i] * ref[i];
    }
    std::printf("  %-48s rel-L2 %.2e%s\n", what.c_str(), std::sqrt(num / den),
                c.mode == WgmmaHeadsMode::kCross
                    ? (" (clusters of " + std::to_string(wgmma_heads_cross_split(c.heads, c.hd)) + ")").c_str()
                    : "");
    // The output's bf16 rounding and the probabilities rounded to bf16 for p · v.
    expect_close(got, ref, Tolerance{1e-2, 2e-2, 2e-2}, what);
  }
};

TEST_F(CudaWgmmaHeads, SelfAttentionMatchesTheHost) {
  check({WgmmaHeadsMode::kSelf, 51, 32, 48, 1536, 1536, 0}, 1);  // GR00T's full DiT
  check({WgmmaHeadsMode::kSelf, 51, 8, 32, 256, 256, 0}, 2);     // its small config
  check({WgmmaHeadsMode::kSelf, 56, 4, 48, 640, 648, 0}, 3);     // every row; a longer row stride
  check({WgmmaHeadsMode::kSelf, 1, 2, 32, 64, 64, 0}, 4);        // one row attends to itself
}

TEST_F(CudaWgmmaHeads, CrossAttentionMatchesTheHost) {
  check({WgmmaHeadsMode::kCross, 51, 32, 48, 1536, 1536, 81}, 11);   // one view's image tokens
  check({WgmmaHeadsMode::kCross, 51, 32, 48, 1536, 1536, 162}, 12);  // two views'
  check({WgmmaHeadsMode::kCross, 51, 8, 32, 256, 256, 37}, 13);      // small config, a text block
  check({WgmmaHeadsMode::kCross, 51, 4, 48, 512, 512, 300}, 14);     // two chunks of keys
  check({WgmmaHeadsMode::kCross, 17, 2, 32, 320, 320, 600}, 15);     // three chunks; k in uneven slices
  check({WgmmaHeadsMode::kCross, 51, 2, 48, 256, 256, 1}, 16);       // one key
}

TEST_F(CudaWgmmaHeads, AGraphReplaysBitForBit) {
  for (const Case& c : {Case{WgmmaHeadsMode::kSelf, 51, 32, 48, 1536, 1536, 0},
                        Case{WgmmaHeadsMode::kCross, 51, 32, 48, 1536, 1536, 162}}) {
    SCOPED_TRACE(describe(c));
    auto s = prepare(c, 21);
    ASSERT_OK(wgmma_heads_attention(stream_, s->args));
    sync();
    const std::size_t count = static_cast<std::size_t>(c.m * s->width);
    const auto eager = s->dout->download(DType::kBF16, count);
    ASSERT_CUDA(cudaMemset(s->dout->get(), 0, count * 2));
    settle();
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    ASSERT_CUDA(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    ASSERT_OK(wgmma_heads_attention(stream_, s->args));
    ASSERT_CUDA(cudaStreamEndCapture(stream_, &graph));
    ASSERT_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    for (int i = 0; i < 3; ++i) ASSERT_CUDA(cudaGraphLaunch(exec, stream_));
    sync();
    EXPECT_EQ(s->dout->download(DType::kBF16, count), eager);
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
  }
}

TEST_F(CudaWgmmaHeads, RefusesShapesItDoesNotRun) {
  EXPECT_TRUE(wgmma_heads_fits(51, 32, 48, 1536, WgmmaHeadsMode::kSelf));
  EXPECT_FALSE(wgmma_heads_fits(57, 32, 48, 1536, WgmmaHeadsMode::kSelf));   // rows past one tile
  EXPECT_FALSE(wgmma_heads_fits(51, 32, 64, 2048, WgmmaHeadsMode::kSelf));   // head dim
  EXPECT_FALSE(wgmma_heads_fits(51, 32, 48, 1500, WgmmaHeadsMode::kSelf));   // k not of 64
  EXPECT_FALSE(wgmma_heads_fits(51, 2, 32, 192, WgmmaHeadsMode::kCross));    // fewer k blocks than slices
  WgmmaHeadsArgs g;
  g.m = 51, g.heads = 2, g.head_dim = 48, g.k = 256, g.lda = 256;
  const Status st = wgmma_heads_attention(stream_, g);
  EXPECT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("null pointer"), std::string::npos) << st.to_string();
  DeviceBuffer w(16);
  EXPECT_FALSE(wgmma_heads_tile_weight(stream_, w.get(), 100, 64, 64, 48, w.get()).is_ok());  // not whole heads
}

}  // namespace
}  // namespace edgevla::backends::cuda
