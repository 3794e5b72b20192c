// edgevla's chained few-rows GEMM (chain_gemm.hpp) against a double-precision host product of
// the same bf16 values, in bf16 and f32-parts output; its launch plan; the shapes it refuses; and
// a chain of three GEMMs run plainly, chained (DependentLaunchScope) and replayed from a captured
// graph, which must agree bit for bit. Without a CUDA device every test skips itself (the test
// main then reports "not run").
#include <cstdio>
#include <cstring>
#include <string>

#include "runtime/backends/cuda/kernels/chain_gemm.hpp"
// The shared helpers include some this file has no use for (gelu_ref).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "tests/gpu/cuda_test_util.hpp"
#pragma GCC diagnostic pop

namespace edgevla::backends::cuda {
namespace {

class CudaChainGemm : public CudaKernels {};

// Written to D before a run: what is left outside the product must still read this.
constexpr float kSentinel = -512.0f;  // exact in bf16 and f32

// A[m, lda] · W[n, ldw]ᵀ over k in [k0, k1), in double: [m, n].
std::vector<double> product(const std::vector<float>& a, std::int64_t lda, const std::vector<float>& w,
                            std::int64_t ldw, std::int64_t m, std::int64_t n, std::int64_t k0, std::int64_t k1) {
  std::vector<double> out(static_cast<std::size_t>(m * n));
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      const float* ar = a.data() + i * lda;
      const float* wr = w.data() + j * ldw;
      double s = 0.0;
      for (std::int64_t p = k0; p < k1; ++p) s += static_cast<double>(ar[p]) * wr[p];
      out[static_cast<std::size_t>(i * n + j)] = s;
    }
  }
  return out;
}

double max_abs(const std::vector<double>& v) {
  double m = 0.0;
  for (const double x : v) m = std::max(m, std::fabs(x));
  return m;
}

double rms(const std::vector<double>& v) {
  double sq = 0.0;
  for (const double x : v) sq += x * x;
  return std::sqrt(sq / static_cast<double>(std::max<std::size_t>(v.size(), 1)));
}

// f32 parts: f32 accumulation of exact bf16 products; only the order of the sums differs.
Tolerance parts_tolerance(const std::vector<double>& ref) { return Tolerance{1e-5, 2e-5 * rms(ref), 1e-5}; }

// bf16 D: one bf16 rounding of the f32 sum.
Tolerance bf16_tolerance(const std::vector<double>& ref) { return Tolerance{1e-2, 2e-2 * max_abs(ref), 0.0}; }

std::vector<unsigned char> raw(const DeviceBuffer& b, std::size_t bytes) {
  std::vector<unsigned char> out(bytes);
  EXPECT_EQ(cudaMemcpy(out.data(), b.get(), bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  return out;
}

// Device addresses that are never dereferenced: for chain_gemm_unsupported only.
template <class T>
T* fake_pointer(std::uintptr_t at) {
  return reinterpret_cast<T*>(at);
}

ChainGemmArgs fake_args(std::int64_t m, std::int64_t n, std::int64_t k, ChainGemmShape s) {
  ChainGemmArgs g;
  g.m = m, g.n = n, g.k = k;
  g.a = fake_pointer<const void>(0x100000), g.lda = k;
  g.w = fake_pointer<const void>(0x200000), g.ldw = k;
  g.d = fake_pointer<void>(0x300000), g.ldd = n;
  g.parts = s.parts, g.block_n = s.block_n;
  return g;
}

// ---- numerics -------------------------------------------------------------------------------

TEST_F(CudaChainGemm, MatchesTheHostProduct) {
  struct Case {
    std::int64_t m, n, k;
    int parts, block_n;
    std::int64_t lda, ldw, ldd;
    bool bias;
  };
  const Case cases[] = {
      {50, 2560, 1024, 1, 32, 1024, 1024, 2560, false},  // the action expert's q|k|v
      {50, 8192, 1024, 2, 128, 1024, 1024, 8192, false}, // its gate|up, 2 parts
      {50, 1024, 2048, 4, 32, 2048, 2048, 1024, false},  // its o projection, 4 parts
      {50, 1024, 4096, 4, 32, 4096, 4096, 1024, false},  // its down projection
      {50, 1024, 2048, 8, 64, 2048, 2048, 1024, false},  // 8 parts, 64-row blocks
      {1, 256, 512, 1, 128, 512, 512, 256, false},       // one row, 128-row blocks
      {64, 128, 256, 2, 32, 256, 256, 128, false},       // a full 64 rows, one chunk per part
      {17, 512, 384, 1, 32, 384, 384, 512, false},       // three 128-wide chunks
      {50, 1536, 1536, 2, 32, 1536, 1536, 1536, false},  // GR00T's DiT width
      {50, 1024, 2048, 4, 32, 2112, 2176, 1056, false},  // strided views, parts
      {33, 512, 1024, 1, 32, 1088, 1152, 544, true},     // strided views and a bias
      {50, 2560, 1024, 1, 32, 1024, 1024, 2560, true},   // q|k|v with a bias
  };
  std::uint32_t seed = 100;
  for (const Case& c : cases) {
    const DType dt = c.parts > 1 ? DType::kF32 : DType::kBF16;
    const std::string what = "chain_gemm m=" + std::to_string(c.m) + " n=" + std::to_string(c.n) + " k=" +
                             std::to_string(c.k) + " parts=" + std::to_string(c.parts) +
                             " block_n=" + std::to_string(c.block_n) + " d=" + name(dt) + (c.bias ? " bias" : "");
    const auto a = rounded(random_values(static_cast<std::size_t>(c.m * c.lda), -1.0f, 1.0f, ++seed), DType::kBF16);
    const auto w = rounded(random_values(static_cast<std::size_t>(c.n * c.ldw), -1.0f, 1.0f, ++seed), DType::kBF16);
    const auto bias = random_values(static_cast<std::size_t>(c.n), -1.0f, 1.0f, ++seed);
    // The parts back to back, then one more row: rows past m of the last part stay untouched.
    const std::size_t d_elems = static_cast<std::size_t>((c.parts * c.m + 1) * c.ldd);
    DeviceBuffer da(a, DType::kBF16), dw(w, DType::kBF16), dbias(bias, DType::kF32),
        dd(std::vector<float>(d_elems, kSentinel), dt);
    ChainGemmArgs g;
    g.m = c.m, g.n = c.n, g.k = c.k;
    g.a = da.get(), g.lda = c.lda, g.w = dw.get(), g.ldw = c.ldw, g.d = dd.get(), g.ldd = c.ldd;
    g.bias = c.bias ? dbias.as<float>() : nullptr;
    g.parts = c.parts, g.block_n = c.block_n;
    const char* why = chain_gemm_unsupported(g);
    ASSERT_EQ(why, nullptr) << what << ": " << why;
    ASSERT_OK(chain_gemm(stream_, g));
    sync();
    const auto got = dd.download(dt, d_elems);

    // Split what came back into the parts' [m, n] and count writes outside them.
    const std::size_t mn = static_cast<std::size_t>(c.m * c.n);
    std::vector<std::vector<float>> parts(static_cast<std::size_t>(c.parts), std::vector<float>(mn));
    std::size_t stray = 0;
    for (std::size_t idx = 0; idx < d_elems; ++idx) {
      const std::int64_t e = static_cast<std::int64_t>(idx);
      const std::int64_t p = e / (c.m * c.ldd), row = e % (c.m * c.ldd) / c.ldd, col = e % c.ldd;
      if (p < c.parts && col < c.n) {
        parts[static_cast<std::size_t>(p)][static_cast<std::size_t>(row * c.n + col)] = got[idx];
      } else if (got[idx] != kSentinel) {
        ++stray;
      }
    }
    EXPECT_EQ(stray, 0u) << what << ": elements outside [m, n] (ldd padding, rows past m) were written";

    const std::int64_t ks = c.k / c.parts;
    std::vector<double> full(mn, 0.0);
    std::vector<float> summed(mn, 0.0f);
    for (int p = 0; p < c.parts; ++p) {
      const auto slice = product(a, c.lda, w, c.ldw, c.m, c.n, p * ks, (p + 1) * ks);
      for (std::size_t i = 0; i < mn; ++i) full[i] += slice[i];
      if (c.parts > 1) {
        expect_close(parts[static_cast<std::size_t>(p)], slice, parts_tolerance(slice),
                     what + " part " + std::to_string(p));
      }
    }
    if (c.bias) {
      for (std::size_t i = 0; i < mn; ++i) full[i] += bias[i % static_cast<std::size_t>(c.n)];
    }
    if (c.parts == 1) {
      expect_close(parts[0], full, bf16_tolerance(full), what);
    } else {
      for (std::size_t i = 0; i < mn; ++i) {
        double s = 0.0;
        for (const auto& part : parts) s += part[i];
        summed[i] = static_cast<float>(s);
      }
      expect_close(summed, full, parts_tolerance(full), what + " (parts summed)");
    }
    if (HasFailure()) return;
  }
}

// ---- plan and refusals ----------------------------------------------------------------------

TEST_F(CudaChainGemm, PlanPicksOneWave) {
  const int sms = 132;  // H100 / H200
  const ChainGemmShape qkv = chain_gemm_plan(50, 2560, 1024, sms, 1);
  ASSERT_EQ(qkv.parts, 1);
  ASSERT_GT(qkv.block_n, 0);
  EXPECT_LE(2560 / qkv.block_n * qkv.parts, sms);
  const ChainGemmShape o = chain_gemm_plan(50, 1024, 2048, sms, 8);
  ASSERT_GT(o.parts, 1);
  ASSERT_GT(o.block_n, 0);
  EXPECT_LE(o.parts, 8);
  EXPECT_LE(1024 / o.block_n * o.parts, sms);
  EXPECT_EQ(chain_gemm_plan(50, 1000, 1024, sms, 8).parts, 0) << "n not a multiple of 32";

  // Every shape the plan answers is one chain_gemm takes, on large and small devices.
  struct Shape {
    std::int64_t m, n, k;
    int max_parts;
  };
  const Shape shapes[] = {{50, 2560, 1024, 1}, {50, 8192, 1024, 1}, {50, 1024, 2048, 8}, {50, 1024, 4096, 8},
                          {50, 1536, 1536, 8}, {50, 1536, 6144, 8}, {1, 256, 512, 8},    {64, 128, 256, 2},
                          {17, 512, 384, 4}};
  for (const int n_sms : {132, 16}) {
    for (const Shape& s : shapes) {
      const std::string what = "plan m=" + std::to_string(s.m) + " n=" + std::to_string(s.n) + " k=" +
                               std::to_string(s.k) + " max_parts=" + std::to_string(s.max_parts) +
                               " sms=" + std::to_string(n_sms);
      const ChainGemmShape p = chain_gemm_plan(s.m, s.n, s.k, n_sms, s.max_parts);
      ASSERT_GT(p.parts, 0) << what;
      EXPECT_LE(p.parts, s.max_parts) << what;
      const char* why = chain_gemm_unsupported(fake_args(s.m, s.n, s.k, p));
      EXPECT_EQ(why, nullptr) << what << " (parts " << p.parts << ", block_n " << p.block_n << "): " << why;
    }
  }
}

TEST_F(CudaChainGemm, RefusesBadShapes) {
  const ChainGemmArgs base = fake_args(50, 1024, 1024, ChainGemmShape{32, 1});
  ASSERT_EQ(chain_gemm_unsupported(base), nullptr) << chain_gemm_unsupported(base);
  const auto refused = [](const ChainGemmArgs& g, const char* what) {
    EXPECT_NE(chain_gemm_unsupported(g), nullptr) << what << " was accepted";
  };
  ChainGemmArgs g = base;
  g.m = 65;
  refused(g, "m = 65");
  g = base, g.m = 0;
  refused(g, "m = 0");
  g = base, g.k = 1024 + 64, g.lda = g.ldw = g.k;
  refused(g, "k not a multiple of 128");
  g = base, g.k = 1536, g.lda = g.ldw = g.k, g.parts = 8;
  refused(g, "k not a multiple of 128 · parts");
  g = base, g.n = 1000, g.ldd = 1000;
  refused(g, "n not a multiple of block_n");
  g = base, g.n = 1056, g.ldd = 1056, g.block_n = 48;
  refused(g, "block_n = 48");
  g = base, g.k = 1536, g.lda = g.ldw = g.k, g.parts = 3;
  refused(g, "parts = 3");
  g = base, g.parts = 4, g.bias = fake_pointer<const float>(0x400000);
  refused(g, "a bias with parts > 1");
  g = base, g.a = static_cast<const unsigned char*>(base.a) + 2;
  refused(g, "a misaligned by 2 bytes");
  g = base, g.lda = 1028;
  refused(g, "lda not a multiple of 8");

  // chain_gemm itself answers an error and launches nothing (real buffers, in case it did).
  const std::int64_t m = 65, n = 1024, k = 2048;
  DeviceBuffer da(static_cast<std::size_t>(m * k) * 2), dw(static_cast<std::size_t>(n * k) * 2),
      dd(static_cast<std::size_t>(m * n) * 2);
  g = base, g.m = m, g.a = da.get(), g.w = dw.get(), g.d = dd.get();
  const Status st = chain_gemm(stream_, g);
  EXPECT_FALSE(st.is_ok());
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.to_string();
  sync();
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

// ---- chained launches -----------------------------------------------------------------------

// X [50, 1024] → Y bf16 [50, 2048] → P f32 parts [4][50, 1024], and Z bf16 [50, 1024] from the
// first 1024 columns of Y (a strided view): each GEMM
// reads its weights before it waits for the one in front. A missing or early wait reads Y while
// it is written (or the other input's Y) and changes the results.
TEST_F(CudaChainGemm, ChainedRunsMatchPlainRuns) {
  const std::int64_t m = 50, width = 1024, wide = 2048;
  const int parts = 4;
  const auto w1 = rounded(random_values(static_cast<std::size_t>(wide * width), -0.05f, 0.05f, 81), DType::kBF16);
  const auto w2 = rounded(random_values(static_cast<std::size_t>(width * wide), -0.05f, 0.05f, 82), DType::kBF16);
  const auto w3 = rounded(random_values(static_cast<std::size_t>(width * wide), -0.05f, 0.05f, 83), DType::kBF16);
  const auto x0 = rounded(random_values(static_cast<std::size_t>(m * width), -1.0f, 1.0f, 84), DType::kBF16);
  const auto x1 = rounded(random_values(static_cast<std::size_t>(m * width), -1.0f, 1.0f, 85), DType::kBF16);
  const std::size_t x_bytes = static_cast<std::size_t>(m * width) * 2, y_bytes = static_cast<std::size_t>(m * wide) * 2,
                    p_bytes = static_cast<std::size_t>(parts * m * width) * 4, z_bytes = x_bytes;
  DeviceBuffer dx0(x0, DType::kBF16), dx1(x1, DType::kBF16), dx(x_bytes), dw1(w1, DType::kBF16),
      dw2(w2, DType::kBF16), dw3(w3, DType::kBF16), dy(y_bytes), dp(p_bytes), dz(z_bytes);
  const DeviceBuffer* inputs[2] = {&dx0, &dx1};

  const auto gemm = [&](const DeviceBuffer& a, std::int64_t k, const DeviceBuffer& w, std::int64_t n,
                        const DeviceBuffer& d, int p, std::int64_t lda = 0) {
    ChainGemmArgs g;
    g.m = m, g.n = n, g.k = k;
    g.a = a.get(), g.lda = lda > 0 ? lda : k, g.w = w.get(), g.ldw = k, g.d = d.get(), g.ldd = n;
    g.parts = p, g.block_n = 32;
    return chain_gemm(stream_, g);
  };
  const auto chain = [&]() -> Status {
    EDGEVLA_RETURN_IF_ERROR(gemm(dx, width, dw1, wide, dy, 1));
    EDGEVLA_RETURN_IF_ERROR(gemm(dy, wide, dw2, width, dp, parts));
    return gemm(dy, width, dw3, width, dz, 1, wide);
  };
  // The input for the next run, copied on the stream (outside any captured graph).
  const auto load = [&](int which) {
    return cudaMemcpyAsync(dx.get(), inputs[which]->get(), x_bytes, cudaMemcpyDeviceToDevice, stream_);
  };
  struct Outputs {
    std::vector<unsigned char> y, p, z;
  };
  const auto read = [&]() {
    EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    return Outputs{raw(dy, y_bytes), raw(dp, p_bytes), raw(dz, z_bytes)};
  };
  const auto expect_same = [](const Outputs& got, const Outputs& ref, const std::string& what) {
    EXPECT_TRUE(got.y == ref.y) << what << ": Y differs from the plain run";
    EXPECT_TRUE(got.p == ref.p) << what << ": the parts differ from the plain run";
    EXPECT_TRUE(got.z == ref.z) << what << ": Z differs from the plain run";
  };

  // Plain runs (no scope) for both inputs: the references, checked against the host.
  Outputs refs[2];
  for (int which = 0; which < 2; ++which) {
    ASSERT_CUDA(load(which));
    ASSERT_OK(chain());
    refs[which] = read();
  }
  EXPECT_FALSE(refs[0].z == refs[1].z) << "the two inputs must give different results";
  {
    const auto y = unpack(refs[0].y, DType::kBF16);
    const auto pf = unpack(refs[0].p, DType::kF32);
    const auto y_ref = product(x0, width, w1, width, m, wide, 0, width);
    expect_close(y, y_ref, bf16_tolerance(y_ref), "plain run: Y");
    const auto z_ref = product(y, wide, w3, width, m, width, 0, width);  // from the Y the device wrote
    expect_close(unpack(refs[0].z, DType::kBF16), z_ref, bf16_tolerance(z_ref), "plain run: Z");
    const auto p_ref = product(y, wide, w2, wide, m, width, 0, wide);
    std::vector<float> summed(p_ref.size());
    for (std::size_t i = 0; i < summed.size(); ++i) {
      double s = 0.0;
      for (int p = 0; p < parts; ++p) s += pf[static_cast<std::size_t>(p) * summed.size() + i];
      summed[i] = static_cast<float>(s);
    }
    expect_close(summed, p_ref, parts_tolerance(p_ref), "plain run: parts summed");
    if (HasFailure()) return;
  }

  DependentLaunchScope scope(true);
  EXPECT_EQ(dependent_launch_active(), dependent_launch_supported());
  std::printf("[ info ] chained launches %s\n",
              dependent_launch_active() ? "on" : "not taken by this device (plain launches)");
  for (int r = 0; r < 10; ++r) {
    ASSERT_CUDA(load(r % 2));
    ASSERT_OK(chain());
    expect_same(read(), refs[r % 2], "chained run " + std::to_string(r));
    if (HasFailure()) return;
  }

  cudaGraph_t graph = nullptr;
  ASSERT_CUDA(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  const Status captured = chain();
  const cudaError_t end = cudaStreamEndCapture(stream_, &graph);
  ASSERT_OK(captured);
  ASSERT_CUDA(end);
  cudaGraphExec_t exec = nullptr;
  ASSERT_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (int r = 0; r < 50; ++r) {
    EXPECT_EQ(load(r % 2), cudaSuccess);
    EXPECT_EQ(cudaGraphLaunch(exec, stream_), cudaSuccess);
    expect_same(read(), refs[r % 2], "graph replay " + std::to_string(r));
    if (HasFailure()) break;
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

}  // namespace
}  // namespace edgevla::backends::cuda
