// rope_cache (the pi0 / pi0.5 backbone's RoPE that also writes each layer's keys and values into
// the cache, and into a bound cache's first rows): x rotated exactly as rope() rotates it, the
// cache's keys those rotated values bit for bit, its values x's as they were, rows past the second
// copy's limit untouched, on the 8-, 2- and 1-element paths; and one clear error for each bad
// argument. Without a CUDA device every test skips itself.
#include <string>
#include <vector>

#include "tests/gpu/cuda_test_util.hpp"

namespace edgevla::backends::cuda {
namespace {

// Row r's `width` elements from `at` of a [rows, ld] matrix.
std::vector<float> rows_of(const std::vector<float>& m, std::int64_t rows, std::int64_t ld, std::int64_t at,
                           std::int64_t width) {
  std::vector<float> out;
  for (std::int64_t r = 0; r < rows; ++r) {
    out.insert(out.end(), m.begin() + r * ld + at, m.begin() + r * ld + at + width);
  }
  return out;
}

void expect_same(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  std::size_t differ = 0;
  for (std::size_t i = 0; i < got.size(); ++i) differ += got[i] != want[i];
  EXPECT_EQ(differ, 0u) << what << ": " << differ << " of " << got.size() << " elements differ";
}

TEST_F(CudaKernels, RopeCacheWritesTheRotatedKeysAndTheValues) {
  struct Case {
    std::int64_t rows, heads, kv_heads, h, ld, rows2;  // heads: rotated (queries then keys); rows2 0: no second copy
    const char* what;
  };
  const Case cases[] = {
      {464, 9, 1, 256, 256, 450, "a prefix layer with its bound copy (8 a thread)"},
      {464, 1, 1, 256, 264, 464, "the last layer: keys only (a padded cache row)"},
      {51, 9, 1, 256, 256, 0, "few rows (2 a thread)"},
      {7, 6, 2, 74, 148, 5, "odd half (1 a thread), two kv heads"},
  };
  for (const DType act : kActs) {
    for (const Case& c : cases) {
      const std::string what = std::string("rope_cache act=") + name(act) + ", " + c.what;
      const std::int64_t K = c.kv_heads, h = c.h, ldx = (c.heads + K) * h + (c.h % 16 == 0 ? 0 : 3);
      const std::size_t n = static_cast<std::size_t>(c.rows * ldx);
      const auto x = rounded(random_values(n, -2.0f, 2.0f, 31), act);
      const auto f = inv_freqs(h);
      const std::int32_t first_pos = 3;
      DeviceBuffer ref(x, act), dx(x, act), df(f, DType::kF32), dpos(sizeof(std::int32_t));
      ASSERT_CUDA(cudaMemcpy(dpos.get(), &first_pos, sizeof(first_pos), cudaMemcpyHostToDevice));
      const std::size_t cache_n = static_cast<std::size_t>(c.rows * c.ld);
      const std::vector<float> sentinel(cache_n, 7.0f);
      DeviceBuffer k(sentinel, act), v(sentinel, act), k2(sentinel, act), v2(sentinel, act);
      settle();
      ASSERT_OK(rope(stream_, ref.get(), act, c.rows, c.heads, h, ldx, dpos.as<std::int32_t>(), df.as<float>()));
      RopeCacheOut out{k.get(), v.get(), c.ld};
      out.kv_heads = K;
      if (c.rows2 > 0) {
        out.k2 = k2.get();
        out.v2 = v2.get();
        out.ld2 = c.ld;
        out.rows2 = c.rows2;
      }
      ASSERT_OK(rope_cache(stream_, dx.get(), act, c.rows, c.heads, h, ldx, dpos.as<std::int32_t>(), df.as<float>(), out));
      sync();
      const auto rotated = ref.download(act, n);
      expect_same(dx.download(act, n), rotated, what + ": x");
      const std::int64_t keys = (c.heads - K) * h, values = c.heads * h;
      const auto got_k = k.download(act, cache_n), got_v = v.download(act, cache_n);
      expect_same(rows_of(got_k, c.rows, c.ld, 0, K * h), rows_of(rotated, c.rows, ldx, keys, K * h), what + ": keys");
      expect_same(rows_of(got_v, c.rows, c.ld, 0, K * h), rows_of(x, c.rows, ldx, values, K * h), what + ": values");
      if (c.ld > K * h) {  // a row's padding is left alone
        expect_same(rows_of(got_k, c.rows, c.ld, K * h, c.ld - K * h),
                    std::vector<float>(static_cast<std::size_t>(c.rows * (c.ld - K * h)), 7.0f), what + ": padding");
      }
      if (c.rows2 > 0) {
        const auto got_k2 = k2.download(act, cache_n), got_v2 = v2.download(act, cache_n);
        expect_same(rows_of(got_k2, c.rows2, c.ld, 0, K * h), rows_of(rotated, c.rows2, ldx, keys, K * h),
                    what + ": second keys");
        expect_same(rows_of(got_v2, c.rows2, c.ld, 0, K * h), rows_of(x, c.rows2, ldx, values, K * h),
                    what + ": second values");
        const std::size_t past = static_cast<std::size_t>(c.rows2 * c.ld);
        expect_same(std::vector<float>(got_k2.begin() + past, got_k2.end()), std::vector<float>(cache_n - past, 7.0f),
                    what + ": second keys past rows2");
        expect_same(std::vector<float>(got_v2.begin() + past, got_v2.end()), std::vector<float>(cache_n - past, 7.0f),
                    what + ": second values past rows2");
      }
      if (HasFailure()) return;
    }
  }
}

TEST_F(CudaKernels, RopeCacheRefusesBadArguments) {
  DeviceBuffer x(4096), f(1024), pos(16), k(4096), v(4096);
  const auto* p = pos.as<std::int32_t>();
  const auto* fr = f.as<float>();
  const auto err = [&](std::int64_t heads, std::int64_t ldx, RopeCacheOut out) {
    const Status s = rope_cache(stream_, x.get(), DType::kBF16, 4, heads, 8, ldx, p, fr, out);
    return s.is_ok() ? std::string() : s.to_string();
  };
  RopeCacheOut ok{k.get(), v.get(), 8};
  ok.kv_heads = 1;
  EXPECT_EQ(err(2, 24, ok), "");
  sync();
  RopeCacheOut none = ok;
  none.kv_heads = 0;
  EXPECT_NE(err(2, 24, none).find("kv_heads 0"), std::string::npos);
  RopeCacheOut many = ok;
  many.kv_heads = 3;
  EXPECT_NE(err(2, 40, many).find("kv_heads 3"), std::string::npos);
  EXPECT_NE(err(2, 16, ok).find("values follow the keys"), std::string::npos);  // no room for the values
  RopeCacheOut narrow = ok;
  narrow.ld = 4;
  EXPECT_NE(err(2, 24, narrow).find("cache row stride"), std::string::npos);
  RopeCacheOut half = ok;
  half.k2 = k.get();
  half.ld2 = 8;
  EXPECT_NE(err(2, 24, half).find("k2 and v2"), std::string::npos);
  RopeCacheOut no_v = ok;
  no_v.v = nullptr;
  EXPECT_FALSE(err(2, 24, no_v).empty());
}

}  // namespace
}  // namespace edgevla::backends::cuda
