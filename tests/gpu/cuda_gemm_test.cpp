// The cuda backend's cuBLASLt GEMMs against a double-precision host reference in every dtype
// combination, k parts, the few-rows kernel, a CUDA graph capture and replay of kernels and GEMMs,
// and a short timing printout (the plans' choices: cuda_gemm_plans_test.cpp).
// Without a CUDA device every test skips itself (the test main then reports "not run").
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tests/gpu/cuda_test_util.hpp"
#include "tests/gpu/gemm_reference.hpp"

namespace edgevla::backends::cuda {
namespace {

// ---- GEMM -----------------------------------------------------------------------------------

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
    bool bias_copy = false;  // also hand the bias in D's dtype (GemmArgs::bias_d; bf16 D only)
  };
  const Variant variants[] = {
      {1.0f, 0.0f, false, Epilogue::kNone, "plain"},
      {1.0f, 0.0f, true, Epilogue::kNone, "bias"},
      {1.0f, 1.0f, false, Epilogue::kNone, "beta=1"},
      {0.5f, 1.0f, true, Epilogue::kNone, "alpha=0.5 beta=1 bias"},
      {1.0f, 0.0f, false, Epilogue::kGeluTanh, "gelu"},
      {1.0f, 0.0f, true, Epilogue::kGeluTanh, "bias gelu"},
      {1.0f, 0.0f, true, Epilogue::kNone, "bias (bf16 copy)", true},
      {1.0f, 0.0f, true, Epilogue::kGeluTanh, "bias gelu (bf16 copy)", true},
  };
  for (const GemmCase& c : cases) {
    const auto a_src = random_values(static_cast<std::size_t>(c.m * c.lda), -1.0f, 1.0f, 30);
    const auto b_src = random_values(static_cast<std::size_t>(c.n * c.ldb), -1.0f, 1.0f, 31);
    // bf16-exact bias values: the bf16 copy holds the same numbers.
    const auto bias = rounded(random_values(static_cast<std::size_t>(c.n), -1.0f, 1.0f, 32), DType::kBF16);
    const auto d0_src = random_values(static_cast<std::size_t>(c.m * c.ldd), -1.0f, 1.0f, 33);
    DeviceBuffer dbias(bias, DType::kF32), dbias16(bias, DType::kBF16);
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
          g.bias_d = v.bias_copy && dt == DType::kBF16 ? dbias16.get() : nullptr;
          g.epilogue = v.ep;
          ASSERT_OK(b.gemm(stream_, g));
          sync();
          double rms = 0.0;
          const std::vector<double> ref =
              expected_d(c, acc, d0, v.bias ? &bias : nullptr, v.alpha, v.beta, v.ep == Epilogue::kGeluTanh, rms);
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

// ---- k split into parts ---------------------------------------------------------------------

// k_split_args' batched products, summed on the host, give the product (each part an f32 GEMM
// over its k slice); k_parts answers a count it can run, the same one again, and within the
// caller's maximum; a batched GEMM refuses a bias (it would be added to every part).
TEST_F(CudaKernels, KSplitPartsSumToTheProduct) {
  auto blas = Blas::create();
  ASSERT_TRUE(blas.has_value()) << blas.status().to_string();
  Blas& b = **blas;
  const GemmCase cases[] = {
      {50, 1024, 2048, 2048, 2048, 1024},  // pi0.5's expert o projection
      {50, 1536, 6144, 6144, 6144, 1536},  // GR00T's DiT ff2
      {9, 72, 512, 520, 512, 80},          // small, strided views
  };
  for (const GemmCase& c : cases) {
    const auto a_src = random_values(static_cast<std::size_t>(c.m * c.lda), -1.0f, 1.0f, 40);
    const auto b_src = random_values(static_cast<std::size_t>(c.n * c.ldb), -1.0f, 1.0f, 41);
    for (const DType ab : {DType::kBF16, DType::kF32}) {
      const auto a = rounded(a_src, ab);
      const auto bw = rounded(b_src, ab);
      const auto acc = matmul_ref(c, a, bw);
      double sq = 0.0;
      for (const double v : acc) sq += v * v;
      const double rms = std::sqrt(sq / static_cast<double>(acc.size()));
      DeviceBuffer da(a, ab), db(bw, ab);
      DeviceBuffer dd(static_cast<std::size_t>(8 * c.m * c.ldd) * 4);
      GemmArgs g;
      g.m = c.m, g.n = c.n, g.k = c.k;
      g.a = da.get(), g.a_type = ab, g.lda = c.lda;
      g.b = db.get(), g.b_type = ab, g.ldb = c.ldb;
      g.d = dd.get(), g.d_type = DType::kF32, g.ldd = c.ldd;
      for (const int parts : {1, 2, 4, 8}) {
        const std::string what = "parts=" + std::to_string(parts) + " m=" + std::to_string(c.m) +
                                 " n=" + std::to_string(c.n) + " k=" + std::to_string(c.k) + " ab=" + name(ab);
        ASSERT_CUDA(cudaMemset(dd.get(), 0xff, static_cast<std::size_t>(8 * c.m * c.ldd) * 4));  // NaN
        settle();  // the legacy-stream memset finishes before the test stream's GEMM
        ASSERT_OK(b.gemm(stream_, k_split_args(g, parts)));
        sync();
        const auto all = dd.download(DType::kF32, static_cast<std::size_t>(parts * c.m * c.ldd));
        std::vector<double> sum(acc.size(), 0.0);
        for (int p = 0; p < parts; ++p) {
          for (std::int64_t i = 0; i < c.m; ++i) {
            for (std::int64_t j = 0; j < c.n; ++j) {
              sum[static_cast<std::size_t>(i * c.n + j)] += all[static_cast<std::size_t>((p * c.m + i) * c.ldd + j)];
            }
          }
        }
        expect_close(std::vector<float>(sum.begin(), sum.end()), acc, Tolerance{1e-5, 2e-5 * rms, 1e-5}, what);
        if (HasFailure()) return;
      }
      auto picked = b.k_parts(stream_, g, 8);
      ASSERT_TRUE(picked.has_value()) << picked.status().to_string();
      const int p = *picked;
      std::printf("[ info ] k_parts m=%lld n=%lld k=%lld %s: %d\n", static_cast<long long>(c.m),
                  static_cast<long long>(c.n), static_cast<long long>(c.k), name(ab), p);
      EXPECT_TRUE(p == 1 || p == 2 || p == 4 || p == 8) << p;
      EXPECT_TRUE(p == 1 || (c.k % p == 0 && (c.k / p) % 64 == 0)) << p;
      auto again = b.k_parts(stream_, g, 8);
      ASSERT_TRUE(again.has_value());
      EXPECT_EQ(*again, p);
      auto one = b.k_parts(stream_, g, 1);
      ASSERT_TRUE(one.has_value());
      EXPECT_EQ(*one, 1);
    }
  }
  const GemmCase& c = cases[2];
  DeviceBuffer da(static_cast<std::size_t>(c.m * c.lda) * 2), db(static_cast<std::size_t>(c.n * c.ldb) * 2),
      dd(static_cast<std::size_t>(2 * c.m * c.ldd) * 4), dbias(static_cast<std::size_t>(c.n) * 4);
  GemmArgs g;
  g.m = c.m, g.n = c.n, g.k = c.k, g.a = da.get(), g.lda = c.lda, g.b = db.get(), g.ldb = c.ldb, g.d = dd.get(),
  g.d_type = DType::kF32, g.ldd = c.ldd;
  GemmArgs split = k_split_args(g, 2);
  split.bias = dbias.as<float>();
  const Status st = b.gemm(stream_, split);
  EXPECT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("batched GEMM takes no bias"), std::string::npos) << st.message();
  g.bias = dbias.as<float>();
  auto refused = b.k_parts(stream_, g, 8);
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.status().message().find("consumer of the parts adds the bias"), std::string::npos);
}

// ---- the few-rows kernel --------------------------------------------------------------------

// skinny_gemm called directly (Blas picks it only where it times faster), against the same
// double reference: row counts across the 8-row tiles, n past a 64-row block, k split over
// 1, 2, 3 (uneven), 4 and 8 blocks (a cluster of that many), strided views, both D dtypes and
// every alpha/beta/bias variant, each run twice (a launch leaves nothing the next depends on).
TEST_F(CudaKernels, SkinnyGemmMatchesReference) {
  struct SkinnyCase {
    GemmCase c;
    int k_chunk;
  };
  const SkinnyCase cases[] = {
      {{1, 1024, 2048, 2048, 2048, 1024}, 256},   // one row, 8 splits
      {{50, 2560, 1024, 1024, 1024, 2560}, 256},  // the expert's q|k|v, 4 splits
      {{50, 1000, 1024, 1032, 1040, 1008}, 512},  // n past a block, strided views
      {{64, 96, 1024, 1024, 1024, 96}, 1024},     // a full 64 rows, no split
      {{33, 200, 4096, 4096, 4096, 200}, 512},    // 8 splits
      {{9, 130, 512, 512, 512, 130}, 512},        // 9 rows: a second, nearly empty tile
      {{50, 2560, 1024, 1024, 1024, 2560}, 384},  // uneven shares: 384, 384, 256
      {{7, 64, 128, 128, 128, 64}, 128},          // one stage, one tile
  };
  struct Variant {
    float alpha, beta;
    bool bias;
    const char* label;
  };
  const Variant variants[] = {{1.0f, 0.0f, false, "plain"},
                              {1.0f, 0.0f, true, "bias"},
                              {1.0f, 1.0f, false, "beta=1"},
                              {0.5f, 1.0f, true, "alpha=0.5 beta=1 bias"}};
  for (const SkinnyCase& sc : cases) {
    const GemmCase& c = sc.c;
    const auto a = rounded(random_values(static_cast<std::size_t>(c.m * c.lda), -1.0f, 1.0f, 60), DType::kBF16);
    const auto w = rounded(random_values(static_cast<std::size_t>(c.n * c.ldb), -1.0f, 1.0f, 61), DType::kBF16);
    const auto bias = random_values(static_cast<std::size_t>(c.n), -1.0f, 1.0f, 62);
    const auto d0_src = random_values(static_cast<std::size_t>(c.m * c.ldd), -1.0f, 1.0f, 63);
    const auto acc = matmul_ref(c, a, w);
    DeviceBuffer da(a, DType::kBF16), dw(w, DType::kBF16), dbias(bias, DType::kF32);
    for (const DType dt : {DType::kF32, DType::kBF16}) {
      const auto d0 = rounded(d0_src, dt);
      for (const Variant& v : variants) {
        for (int run = 0; run < 2; ++run) {
          const std::string what = "skinny m=" + std::to_string(c.m) + " n=" + std::to_string(c.n) + " k=" +
                                   std::to_string(c.k) + " k_chunk=" + std::to_string(sc.k_chunk) + " d=" + name(dt) +
                                   " " + v.label + " run " + std::to_string(run);
          DeviceBuffer dd(d0, dt);
          SkinnyGemmArgs g;
          g.m = c.m, g.n = c.n, g.k = c.k;
          g.a = da.get(), g.lda = c.lda, g.w = dw.get(), g.ldw = c.ldb;
          g.d = dd.get(), g.d_type = dt, g.ldd = c.ldd;
          g.alpha = v.alpha, g.beta = v.beta, g.bias = v.bias ? dbias.as<float>() : nullptr;
          g.k_chunk = sc.k_chunk;
          ASSERT_OK(skinny_gemm(stream_, g));
          sync();
          double rms = 0.0;
          const std::vector<double> ref = expected_d(c, acc, d0, v.bias ? &bias : nullptr, v.alpha, v.beta, false, rms);
          const Tolerance tol = dt == DType::kF32 ? Tolerance{1e-5, 2e-5 * rms, 1e-5} : Tolerance{1e-2, 1e-2 * rms, 1e-2};
          expect_close(dd.download(dt, d0.size()), ref, tol, what);
          if (HasFailure()) return;
        }
      }
    }
  }
  // Bad arguments are refused by name, before any launch.
  SkinnyGemmArgs bad;
  bad.m = 65, bad.n = 64, bad.k = 256, bad.lda = 256, bad.ldw = 256, bad.ldd = 64;
  EXPECT_NE(skinny_gemm_unsupported(bad), nullptr);
  const Status st = skinny_gemm(stream_, bad);
  EXPECT_FALSE(st.is_ok());
  EXPECT_NE(st.to_string().find("m must be 1..64"), std::string::npos) << st.to_string();
  SkinnyGemmArgs many = bad;
  many.m = 8, many.k = 4096, many.lda = 4096, many.ldw = 4096, many.k_chunk = 256;
  const char* why = skinny_gemm_unsupported(many);
  ASSERT_NE(why, nullptr);
  EXPECT_NE(std::string(why).find("at most 8"), std::string::npos) << why;
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
