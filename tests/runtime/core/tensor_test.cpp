#include "runtime/core/tensor.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <numeric>

#include "tests/support/test_util.hpp"

namespace edgevla {
namespace {

TEST(DType, NamesRoundTripAndSizes) {
  for (int i = 0; i < kNumDTypes; ++i) {
    const auto d = static_cast<DType>(i);
    auto parsed = parse_dtype(dtype_name(d));
    ASSERT_TRUE(parsed.has_value());
    EXPECT_EQ(*parsed, d);
  }
  EXPECT_EQ(dtype_size(DType::kBF16), 2u);
  EXPECT_EQ(dtype_size(DType::kF32), 4u);
  EXPECT_EQ(dtype_size(DType::kI64), 8u);
  auto bad = parse_dtype("float32");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.status().message().find("f32"), std::string::npos);  // lists accepted names
}

TEST(DType, HalfAndBfloat16Conversions) {
  for (float v : {0.0f, 1.0f, -2.5f, 65504.0f, 6.1035156e-05f, 5.9604645e-08f, 0.333251953125f}) {
    EXPECT_EQ(half_to_float(float_to_half(v)), v) << v;
  }
  EXPECT_TRUE(std::isinf(half_to_float(float_to_half(1e6f))));
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(NAN))));
  EXPECT_EQ(bfloat16_to_float(float_to_bfloat16(1.0f)), 1.0f);
  EXPECT_EQ(bfloat16_to_float(float_to_bfloat16(-3.140625f)), -3.140625f);
  // Rounds to nearest: 1 + 2^-8 is exactly between two bf16 values, ties to even (1.0).
  EXPECT_EQ(bfloat16_to_float(float_to_bfloat16(1.0f + 1.0f / 256)), 1.0f);
}

TEST(Shape, FromRejectsTooManyDimsAndNegatives) {
  std::vector<std::int64_t> nine(9, 1);
  EXPECT_FALSE(Shape::from(nine).has_value());
  std::vector<std::int64_t> neg = {2, -1};
  EXPECT_FALSE(Shape::from(neg).has_value());
  EXPECT_EQ((Shape{2, 3, 4}).numel(), 24);
  EXPECT_EQ((Shape{}).numel(), 1);
  EXPECT_EQ((Shape{2, 3}).to_string(), "[2,3]");
}

TEST(Tensor, FromBufferChecksBounds) {
  auto buf = *Buffer::allocate_heap(100);
  EXPECT_TRUE(Tensor::from_buffer(buf, DType::kF32, Shape{25}).has_value());
  auto too_big = Tensor::from_buffer(buf, DType::kF32, Shape{26});
  ASSERT_FALSE(too_big.has_value());
  EXPECT_EQ(too_big.status().code(), StatusCode::kOutOfRange);
  EXPECT_FALSE(Tensor::from_buffer(buf, DType::kF32, Shape{24}, std::nullopt, 8).has_value());
  EXPECT_TRUE(Tensor::from_buffer(buf, DType::kF32, Shape{23}, std::nullopt, 8).has_value());
  EXPECT_FALSE(Tensor::from_buffer(buf, DType::kF32, Shape{2}, std::nullopt, 2).has_value());  // misaligned
  EXPECT_FALSE(Tensor::from_buffer(nullptr, DType::kF32, Shape{1}).has_value());
}

TEST(Tensor, ViewsShareTheBufferAndCopyOnlyWhenAsked) {
  std::vector<float> v(24);
  std::iota(v.begin(), v.end(), 0.0f);
  Tensor t = *Tensor::from_values<float>(v, Shape{2, 3, 4});
  Tensor r = *t.reshape(Shape{6, 4});
  EXPECT_EQ(r.buffer(), t.buffer());
  Tensor s = *t.slice(1, 1, 3);  // [2,2,4], strided
  EXPECT_EQ(s.buffer(), t.buffer());
  EXPECT_FALSE(s.is_contiguous());
  EXPECT_FALSE(s.reshape(Shape{16}).has_value());
  Tensor c = *s.contiguous();
  EXPECT_NE(c.buffer(), t.buffer());
  ASSERT_TRUE(c.is_contiguous());
  // s[1][0][2] = t[1][1][2] = 1*12 + 1*4 + 2 = 18
  EXPECT_EQ(c.data<float>()[1 * 8 + 0 * 4 + 2], 18.0f);
  Tensor sel = *t.select(0, 1);
  EXPECT_EQ(sel.shape(), (Shape{3, 4}));
  EXPECT_EQ(sel.data<float>()[0], 12.0f);
  EXPECT_FALSE(t.slice(1, 2, 5).has_value());
  EXPECT_FALSE(t.select(3, 0).has_value());
}

TEST(Tensor, AbsurdShapesAreErrorsNotOverflows) {
  auto t = Tensor::empty(DType::kF64, Shape{1ll << 30, 1ll << 30, 1ll << 30});
  ASSERT_FALSE(t.has_value());
  EXPECT_NE(t.status().message().find("too large"), std::string::npos);
  EXPECT_FALSE(Tensor::empty(DType::kU8, Shape{-1}).has_value());
  EXPECT_EQ(Tensor::empty(DType::kU8, Shape{0, 5})->numel(), 0);
}

TEST(Tensor, SummaryCountsNonFinite) {
  std::vector<float> v = {1.0f, NAN, 3.0f, INFINITY, -1.0f};
  auto s = summarize(*Tensor::from_values<float>(v, Shape{5}));
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->min, -1.0);
  EXPECT_EQ(s->max, 3.0);
  EXPECT_DOUBLE_EQ(s->mean, 1.0);
  EXPECT_EQ(s->non_finite, 2);
}

TEST(Buffer, MapFileIsReadOnlyAndNamesMissingFiles) {
  const std::string path = ::testing::TempDir() + "/edgevla_map_test.bin";
  {
    std::ofstream f(path, std::ios::binary);
    const float x[4] = {1, 2, 3, 4};
    f.write(reinterpret_cast<const char*>(x), sizeof x);
  }
  auto b = Buffer::map_file(path);
  ASSERT_TRUE(b.has_value()) << b.status().to_string();
  EXPECT_EQ((*b)->kind(), BufferKind::kMappedFile);
  EXPECT_FALSE((*b)->writable());
  Tensor t = *Tensor::from_buffer(*b, DType::kF32, Shape{4});
  EXPECT_EQ(t.data<float>()[3], 4.0f);
  EXPECT_TRUE(t.mutable_bytes().empty());
  auto missing = Buffer::map_file(path + ".nope");
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.status().message().find(".nope"), std::string::npos);
  std::remove(path.c_str());
}

TEST(Allocator, CudaWithoutBackendIsAClearError) {
  auto t = Tensor::empty(DType::kF32, Shape{4}, Device::cuda(0));
  ASSERT_FALSE(t.has_value());
  EXPECT_EQ(t.status().code(), StatusCode::kNotFound);
  EXPECT_NE(t.status().message().find("cuda:0"), std::string::npos);
  EXPECT_EQ(parse_device("cuda:1")->index, 1);
  EXPECT_FALSE(parse_device("tpu").has_value());
}

}  // namespace
}  // namespace edgevla
