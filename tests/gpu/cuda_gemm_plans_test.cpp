// The cuda backend's GEMM plans: what Blas reports it runs, the plan file carrying picks to the next
// process (also onto the many-rows kernel), and cuBLASLt's picks at nearby row counts, each
// against a double-precision host reference. Without a CUDA device every test skips itself.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "runtime/backends/cuda/kernels/wide_gemm.hpp"
#include "tests/gpu/cuda_test_util.hpp"
#include "tests/gpu/gemm_reference.hpp"

namespace edgevla::backends::cuda {
namespace {

// Blas offers the skinny kernel beside cuBLASLt's algorithms: either way the result is right,
// and the plan report names what runs each planned shape.
TEST_F(CudaKernels, BlasPlanReportNamesWhatRuns) {
  auto blas_or = Blas::create();
  ASSERT_TRUE(blas_or.has_value()) << blas_or.status().to_string();
  Blas& blas = **blas_or;
  const GemmCase c{50, 8192, 1024, 1024, 1024, 8192};
  const auto a = rounded(random_values(static_cast<std::size_t>(c.m * c.lda), -1.0f, 1.0f, 70), DType::kBF16);
  const auto w = rounded(random_values(static_cast<std::size_t>(c.n * c.ldb), -1.0f, 1.0f, 71), DType::kBF16);
  const auto acc = matmul_ref(c, a, w);
  DeviceBuffer da(a, DType::kBF16), dw(w, DType::kBF16), dd(static_cast<std::size_t>(c.m * c.ldd) * 4);
  GemmArgs g;
  g.m = c.m, g.n = c.n, g.k = c.k, g.a = da.get(), g.lda = c.lda, g.b = dw.get(), g.ldb = c.ldb;
  g.d = dd.get(), g.d_type = DType::kF32, g.ldd = c.ldd;
  ASSERT_OK(blas.gemm(stream_, g));
  sync();
  double sq = 0.0;
  for (const double x : acc) sq += x * x;
  const double rms = std::sqrt(sq / static_cast<double>(acc.size()));
  expect_close(dd.download(DType::kF32, acc.size()), acc, Tolerance{1e-5, 2e-5 * rms, 1e-5}, "blas 50x8192x1024");
  const std::string report = blas.plan_report();
  std::printf("[ info ] %s", report.c_str());
  EXPECT_NE(report.find("gemm m=50 n=8192 k=1024 bf16->f32: "), std::string::npos) << report;
  EXPECT_TRUE(report.find("edgevla skinny") != std::string::npos || report.find("cuBLASLt") != std::string::npos)
      << report;
}

// EDGEVLA_GEMM_PLAN_FILE: the first Blas times a shape and appends its pick; a second one reads
// the pick from the file (no timing) and computes the same result.
TEST_F(CudaKernels, PlanFileCarriesPicksToTheNextProcess) {
  const std::string file = ::testing::TempDir() + "edgevla_plans_" + std::to_string(::getpid()) + ".txt";
  std::remove(file.c_str());
  ::setenv("EDGEVLA_GEMM_PLAN_FILE", file.c_str(), 1);
  const GemmCase c{50, 4096, 1024, 1024, 1024, 4096};
  const auto a = rounded(random_values(static_cast<std::size_t>(c.m * c.lda), -1.0f, 1.0f, 72), DType::kBF16);
  const auto w = rounded(random_values(static_cast<std::size_t>(c.n * c.ldb), -1.0f, 1.0f, 73), DType::kBF16);
  const auto acc = matmul_ref(c, a, w);
  DeviceBuffer da(a, DType::kBF16), dw(w, DType::kBF16), dd(static_cast<std::size_t>(c.m * c.ldd) * 4);
  GemmArgs g;
  g.m = c.m, g.n = c.n, g.k = c.k, g.a = da.get(), g.lda = c.lda, g.b = dw.get(), g.ldb = c.ldb;
  g.d = dd.get(), g.d_type = DType::kF32, g.ldd = c.ldd;
  std::string reports[2];
  for (std::string& report : reports) {
    auto blas_or = Blas::create();
    ASSERT_TRUE(blas_or.has_value()) << blas_or.status().to_string();
    ASSERT_CUDA(cudaMemset(dd.get(), 0, static_cast<std::size_t>(c.m * c.ldd) * 4));
    settle();  // else the legacy-stream memset may land after the test stream's GEMM
    ASSERT_OK((*blas_or)->gemm(stream_, g));
    sync();
    expect_close(dd.download(DType::kF32, acc.size()), acc, Tolerance{1e-5, 1e-3, 1e-5}, "plan file gemm");
    report = (*blas_or)->plan_report();
  }
  ::unsetenv("EDGEVLA_GEMM_PLAN_FILE");
  std::ifstream in(file);
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) ++lines;
  std::remove(file.c_str());
  EXPECT_EQ(lines, 1) << "one pick appended by the first Blas, none by the second";
  EXPECT_EQ(reports[0].find("from the plan file"), std::string::npos) << reports[0];
  EXPECT_NE(reports[1].find("from the plan file"), std::string::npos) << reports[1];
}

// EDGEVLA_GEMM_NEAR_ROWS: cuBLASLt's picks at row counts near a shape's are offered beside its
// own. At some of these row counts that lengthens the candidate list; there, a plan file naming
// the last candidate (one found at a nearby row count) makes Blas run it, against the host.
TEST_F(CudaKernels, NearRowCountsAddCandidatesThatComputeTheSameProduct) {
  const auto candidates_in = [](const std::string& report) {
    const std::size_t at = report.find(" of ");
    return at == std::string::npos ? -1 : std::atoi(report.c_str() + at + 4);
  };
  int lengthened = 0;
  for (const std::int64_t m : {200, 212, 224, 648}) {
    const GemmCase c{m, 1024, 512, 512, 512, 1024};
    const auto a = rounded(random_values(static_cast<std::size_t>(c.m * c.lda), -1.0f, 1.0f, 81), DType::kBF16);
    const auto w = rounded(random_values(static_cast<std::size_t>(c.n * c.ldb), -0.2f, 0.2f, 82), DType::kBF16);
    const auto acc = matmul_ref(c, a, w);
    DeviceBuffer da(a, DType::kBF16), dw(w, DType::kBF16);
    const std::string file = ::testing::TempDir() + "edgevla_near_plans_" + std::to_string(::getpid()) + ".txt";
    std::remove(file.c_str());
    ::setenv("EDGEVLA_GEMM_PLAN_FILE", file.c_str(), 1);
    // A fresh Blas (cuBLASLt's candidates only) with the near rows on or off runs the shape once,
    // checked against the host; its plan report.
    const auto run_once = [&](bool near, const char* what) -> std::string {
      ::setenv("EDGEVLA_GEMM_NEAR_ROWS", near ? "1" : "0", 1);  // read by each Blas at its creation
      auto blas = Blas::create();
      if (!blas.has_value()) return "Blas::create: " + blas.status().to_string();
      (*blas)->set_own_kernels(false);
      DeviceBuffer dd(static_cast<std::size_t>(c.m * c.ldd) * 2);
      GemmArgs g;
      g.m = c.m, g.n = c.n, g.k = c.k, g.a = da.get(), g.lda = c.lda, g.b = dw.get(), g.ldb = c.ldb;
      g.d = dd.get(), g.d_type = DType::kBF16, g.ldd = c.ldd;
      const Status st = (*blas)->gemm(stream_, g);
      if (!st.is_ok()) return "gemm: " + st.to_string();
      sync();
      expect_close(dd.download(DType::kBF16, acc.size()), acc, tolerance_for(DType::kBF16), what);
      return (*blas)->plan_report();
    };
    const std::string reports[2] = {run_once(false, "timed pick"), run_once(true, "timed pick, near rows")};
    const int counts[2] = {candidates_in(reports[0]), candidates_in(reports[1])};  // without / with
    ASSERT_GT(counts[0], 0) << reports[0];
    ASSERT_GT(counts[1], 0) << reports[1];
    EXPECT_GE(counts[1], counts[0]) << "m=" << m;
    std::printf("[ info ] m=%lld: %d candidates, %d with the near rows\n", static_cast<long long>(m), counts[0],
                counts[1]);
    if (counts[1] > counts[0]) {
      ++lengthened;
      // The near-rows pick (the key carries " near") rewritten to the last candidate.
      std::string key;
      {
        std::ifstream in(file);
        std::string line;
        while (std::getline(in, line)) {
          if (line.find(" near | ") != std::string::npos) key = line.substr(0, line.find(" | "));
        }
      }
      ASSERT_FALSE(key.empty()) << "no near-rows pick in the plan file";
      {
        std::ofstream out(file, std::ios::trunc);
        out << key << " | " << counts[1] - 1 << " 0 0.001 0\n";
      }
      const std::string report = run_once(true, "a near-rows candidate");
      EXPECT_NE(report.find("cuBLASLt candidate " + std::to_string(counts[1] - 1) + " of"), std::string::npos)
          << report;
    }
    ::unsetenv("EDGEVLA_GEMM_PLAN_FILE");
    std::remove(file.c_str());
  }
  ::unsetenv("EDGEVLA_GEMM_NEAR_ROWS");
  EXPECT_GT(lengthened, 0) << "no shape gained a candidate from the row counts near it";
}

// The many-rows kernel (wide_gemm.hpp) as a plan's pick, where EDGEVLA_CUDA_WIDE_GEMM=1 offers it:
// a plan file naming it for a shape makes Blas run it there (whether timing picks it depends on
// the device), for the bf16 output with a bias and GELU and for the f32 residual add (beta 1),
// each against the host.
TEST_F(CudaKernels, PlanFileCanPickTheManyRowsKernel) {
  if (!wide_gemm_available()) GTEST_SKIP() << "the many-rows kernel runs on compute capability 9.0 (sm_90a code) only";
  ::setenv("EDGEVLA_CUDA_WIDE_GEMM", "1", 1);  // read by each Blas at its creation
  const GemmCase c{300, 256, 192, 192, 192, 256};
  const auto a = rounded(random_values(static_cast<std::size_t>(c.m * c.lda), -1.0f, 1.0f, 74), DType::kBF16);
  const auto w = rounded(random_values(static_cast<std::size_t>(c.n * c.ldb), -0.2f, 0.2f, 75), DType::kBF16);
  const auto bias = random_values(static_cast<std::size_t>(c.n), -0.5f, 0.5f, 76);
  const auto d0 = random_values(static_cast<std::size_t>(c.m * c.ldd), -1.0f, 1.0f, 77);
  const auto acc = matmul_ref(c, a, w);
  DeviceBuffer da(a, DType::kBF16), dw(w, DType::kBF16), dbias(bias, DType::kF32);
  for (const bool residual : {false, true}) {
    const std::string file = ::testing::TempDir() + "edgevla_wide_plans_" + std::to_string(::getpid()) + ".txt";
    std::remove(file.c_str());
    ::setenv("EDGEVLA_GEMM_PLAN_FILE", file.c_str(), 1);
    const DType dt = residual ? DType::kF32 : DType::kBF16;
    DeviceBuffer dd(d0, dt);
    GemmArgs g;
    g.m = c.m, g.n = c.n, g.k = c.k, g.a = da.get(), g.lda = c.lda, g.b = dw.get(), g.ldb = c.ldb;
    g.d = dd.get(), g.d_type = dt, g.ldd = c.ldd, g.bias = static_cast<const float*>(dbias.get());
    g.beta = residual ? 1.0f : 0.0f;
    g.epilogue = residual ? Epilogue::kNone : Epilogue::kGeluTanh;
    {
      auto first = Blas::create();  // times the shape and appends its pick
      ASSERT_TRUE(first.has_value()) << first.status().to_string();
      ASSERT_OK((*first)->gemm(stream_, g));
      sync();
    }
    // The stored pick rewritten to the many-rows kernel at 136 rows a block.
    std::string key;
    {
      std::ifstream in(file);
      std::string line;
      while (std::getline(in, line)) key = line.substr(0, line.find(" | "));
    }
    ASSERT_FALSE(key.empty()) << "the first Blas wrote no pick";
    {
      std::ofstream out(file, std::ios::trunc);
      out << key << " | -1 0 0.001 136\n";
    }
    DeviceBuffer fresh(d0, dt);
    g.d = fresh.get();
    auto second = Blas::create();
    ASSERT_TRUE(second.has_value()) << second.status().to_string();
    ASSERT_OK((*second)->gemm(stream_, g));
    sync();
    ::unsetenv("EDGEVLA_GEMM_PLAN_FILE");
    std::remove(file.c_str());
    const std::string report = (*second)->plan_report();
    EXPECT_NE(report.find("edgevla wide rows=136"), std::string::npos) << report;
    double rms = 0.0;
    const auto ref = expected_d(c, acc, d0, &bias, 1.0f, g.beta, !residual, rms);
    const auto got = fresh.download(dt, ref.size());
    double num = 0.0, den = 0.0;
    for (std::size_t i = 0; i < ref.size(); ++i) {
      num += (got[i] - ref[i]) * (got[i] - ref[i]);
      den += ref[i] * ref[i];
    }
    EXPECT_LE(std::sqrt(num / den), residual ? 1e-5 : 6e-3) << (residual ? "residual" : "bias + gelu");
  }
  ::unsetenv("EDGEVLA_CUDA_WIDE_GEMM");
}

}  // namespace
}  // namespace edgevla::backends::cuda
