// The GEMM tests' host reference (cuda_gemm_test.cpp, cuda_gemm_plans_test.cpp): a case's shape and
// strides, A·Bᵀ in double, and the expected D after alpha, beta, bias and GELU.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "tests/gpu/cuda_test_util.hpp"

namespace edgevla::backends::cuda {

struct GemmCase {
  std::int64_t m, n, k, lda, ldb, ldd;
};

// alpha·A·Bᵀ in double, A [m, lda], B [n, ldb].
inline std::vector<double> matmul_ref(const GemmCase& c, const std::vector<float>& a, const std::vector<float>& b) {
  std::vector<double> out(static_cast<std::size_t>(c.m * c.n));
  for (std::int64_t i = 0; i < c.m; ++i) {
    for (std::int64_t j = 0; j < c.n; ++j) {
      double s = 0.0;
      const float* ar = a.data() + i * c.lda;
      const float* br = b.data() + j * c.ldb;
      for (std::int64_t p = 0; p < c.k; ++p) s += static_cast<double>(ar[p]) * br[p];
      out[static_cast<std::size_t>(i * c.n + j)] = s;
    }
  }
  return out;
}

// The expected D over the whole buffer (columns past n keep their initial values d0):
// alpha·acc + beta·d0 (+ bias) (then GELU); `rms` is the root mean square of the written part.
inline std::vector<double> expected_d(const GemmCase& c, const std::vector<double>& acc, const std::vector<float>& d0,
                               const std::vector<float>* bias, float alpha, float beta, bool gelu, double& rms) {
  std::vector<double> ref = to_double(d0);
  double sq = 0.0;
  for (std::int64_t i = 0; i < c.m; ++i) {
    for (std::int64_t j = 0; j < c.n; ++j) {
      double r = alpha * acc[static_cast<std::size_t>(i * c.n + j)] + beta * d0[static_cast<std::size_t>(i * c.ldd + j)];
      if (bias != nullptr) r += (*bias)[static_cast<std::size_t>(j)];
      if (gelu) r = gelu_ref(r);
      ref[static_cast<std::size_t>(i * c.ldd + j)] = r;
      sq += r * r;
    }
  }
  rms = std::sqrt(sq / static_cast<double>(c.m * c.n));
  return ref;
}

}  // namespace edgevla::backends::cuda
