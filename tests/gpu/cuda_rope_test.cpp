// The cuda backend's rotary-embedding kernels (rope, rope_into_cache, rope_table) against host
// references written here and against each other, in f32 and bf16 (the element-wise and norm
// kernels are in cuda_kernels_test.cpp, the same executable). Without a CUDA device every test
// skips itself.
#include <cstdint>
#include <string>
#include <vector>

#include "tests/gpu/cuda_test_util.hpp"

namespace edgevla::backends::cuda {
namespace {

// Its own suite: the shared fixture lives in this file's anonymous namespace, a class apart from
// cuda_kernels_test.cpp's, and one suite takes one fixture class.
class CudaRope : public CudaKernels {};

TEST_F(CudaRope, RopeMatchesReference) {
  struct Case {
    std::int64_t rows, heads, h, ldx;
    std::int32_t first_pos;
  };
  const Case cases[] = {
      {1, 8, 256, 8 * 256, 37},          // one decode row, Gemma's head_dim
      {51, 8, 256, 10 * 256, 816},       // q of a fused q|k|v row (stride past the heads)
      {968, 1, 256, 10 * 256, 0},        // k of the fused row, the whole prefix
      {464, 9, 256, 10 * 256, 0},        // q and k of a prefix: enough pairs for 8 a thread
      {7, 16, 72, 16 * 72, 5},           // head_dim 72 (scalar path: h/2 = 36)
      {5, 3, 74, 3 * 74 + 1, 1000},      // odd half and odd stride
  };
  for (const DType act : kActs) {
    for (const Case& c : cases) {
      const std::string what = std::string("rope act=") + name(act) + " rows=" + std::to_string(c.rows) +
                               " heads=" + std::to_string(c.heads) + " h=" + std::to_string(c.h) +
                               " ldx=" + std::to_string(c.ldx) + " first_pos=" + std::to_string(c.first_pos);
      const std::size_t n = static_cast<std::size_t>(c.rows * c.ldx);
      const auto x = rounded(random_values(n, -2.0f, 2.0f, 10), act);
      const auto f = inv_freqs(c.h);
      DeviceBuffer dx(x, act), df(f, DType::kF32), dpos(sizeof(std::int32_t));
      ASSERT_CUDA(cudaMemcpy(dpos.get(), &c.first_pos, sizeof(c.first_pos), cudaMemcpyHostToDevice));
      settle();
      ASSERT_OK(rope(stream_, dx.get(), act, c.rows, c.heads, c.h, c.ldx, dpos.as<std::int32_t>(), df.as<float>()));
      sync();
      // Elements past heads·h in each row must be untouched: they are part of the reference.
      expect_close(dx.download(act, n), rope_ref(x, c.rows, c.heads, c.h, c.ldx, c.first_pos, f), tolerance_for(act),
                   what);
      if (HasFailure()) return;
    }
  }
}

// rope_into_cache: a fused q|k|v row's queries rotated in place, its keys rotated into one cache
// and its values copied into another, bit for bit what rope() over q and k plus copies give; the
// row's keys and values themselves left as they were.
TEST_F(CudaRope, RopeIntoCacheIsRopeAndCopies) {
  struct Case {
    std::int64_t rows, q_heads, kv_heads, h, ldx, ld_cache;
    std::int32_t first_pos;
  };
  const Case cases[] = {
      {464, 8, 1, 256, 10 * 256, 256, 0},    // Gemma's prefix: 8 query heads, 1 key|value head
      {51, 8, 1, 256, 10 * 256, 256, 816},   // a short prefix at an offset
      {968, 0, 1, 256, 10 * 256, 256, 0},    // a last layer: keys and values only
      {7, 4, 2, 72, 8 * 72 + 3, 2 * 72 + 1, 5},  // head dim 72, odd strides (scalar path)
  };
  for (const DType act : kActs) {
    for (const Case& c : cases) {
      const std::string what = std::string("rope_into_cache act=") + name(act) + " rows=" + std::to_string(c.rows) +
                               " q_heads=" + std::to_string(c.q_heads) + " kv_heads=" + std::to_string(c.kv_heads) +
                               " h=" + std::to_string(c.h);
      const std::size_t n = static_cast<std::size_t>(c.rows * c.ldx), nc = static_cast<std::size_t>(c.rows * c.ld_cache);
      const auto x = rounded(random_values(n, -2.0f, 2.0f, 11), act);
      const auto f = inv_freqs(c.h);
      DeviceBuffer fused(x, act), plain(x, act), df(f, DType::kF32), dpos(sizeof(std::int32_t));
      const std::vector<float> zeros(nc, 0.0f);
      DeviceBuffer kc(zeros, act), vc(zeros, act);
      ASSERT_CUDA(cudaMemcpy(dpos.get(), &c.first_pos, sizeof(c.first_pos), cudaMemcpyHostToDevice));
      settle();
      ASSERT_OK(rope_into_cache(stream_, fused.get(), act, c.rows, c.q_heads, c.kv_heads, c.h, c.ldx, kc.get(),
                                vc.get(), c.ld_cache, dpos.as<std::int32_t>(), df.as<float>()));
      ASSERT_OK(rope(stream_, plain.get(), act, c.rows, c.q_heads + c.kv_heads, c.h, c.ldx, dpos.as<std::int32_t>(),
                     df.as<float>()));
      sync();
      const auto got = fused.download(act, n), rotated = plain.download(act, n);
      const auto keys = kc.download(act, nc), values = vc.download(act, nc);
      const std::int64_t qh = c.q_heads * c.h, kvh = c.kv_heads * c.h;
      for (std::int64_t r = 0; r < c.rows; ++r) {
        for (std::int64_t e = 0; e < c.ldx; ++e) {
          const std::size_t i = static_cast<std::size_t>(r * c.ldx + e);
          // Queries as rope() leaves them; keys, values and the rest of the row untouched.
          ASSERT_EQ(got[i], e < qh ? rotated[i] : x[i]) << what << " row " << r << " element " << e;
        }
        for (std::int64_t e = 0; e < c.ld_cache; ++e) {
          const std::size_t i = static_cast<std::size_t>(r * c.ld_cache + e);
          const std::size_t k = static_cast<std::size_t>(r * c.ldx + qh + e);
          ASSERT_EQ(keys[i], e < kvh ? rotated[k] : 0.0f) << what << " key row " << r << " element " << e;
          ASSERT_EQ(values[i], e < kvh ? x[k + static_cast<std::size_t>(kvh)] : 0.0f)
              << what << " value row " << r << " element " << e;
        }
      }
    }
  }
}

// The angles' table (rope_table): cos and sin of (first_pos + r) · inv_freq[k], the f32 product
// as rope() forms it, against the host's double functions of that product.
TEST_F(CudaRope, RopeTableHoldsTheAngles) {
  for (const auto& [rows, h, first_pos] : {std::tuple{50, 256, 816}, std::tuple{1, 64, 0}, std::tuple{17, 74, 1000}}) {
    const auto f = inv_freqs(h);
    const std::int64_t half = h / 2;
    DeviceBuffer df(f, DType::kF32), dpos(sizeof(std::int32_t)), table(static_cast<std::size_t>(rows * h) * 4);
    ASSERT_CUDA(cudaMemcpy(dpos.get(), &first_pos, sizeof(first_pos), cudaMemcpyHostToDevice));
    ASSERT_OK(rope_table(stream_, rows, half, dpos.as<std::int32_t>(), df.as<float>(), table.as<float>()));
    sync();
    const auto got = table.download(DType::kF32, static_cast<std::size_t>(rows * h));
    double worst = 0.0;
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t k = 0; k < half; ++k) {
        const double angle = static_cast<float>(first_pos + r) * f[static_cast<std::size_t>(k)];
        const std::size_t at = static_cast<std::size_t>((r * half + k) * 2);
        worst = std::max({worst, std::abs(got[at] - std::cos(angle)), std::abs(got[at + 1] - std::sin(angle))});
      }
    }
    EXPECT_LE(worst, 2e-6) << "rows " << rows << " h " << h << " from " << first_pos;
  }
  EXPECT_FALSE(rope_table(stream_, 4, 8, nullptr, nullptr, nullptr).is_ok());
}

}  // namespace
}  // namespace edgevla::backends::cuda
