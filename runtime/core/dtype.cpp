#include "runtime/core/dtype.hpp"

#include <array>
#include <bit>
#include <cmath>
#include <string>

namespace edgevla {
namespace {

struct DTypeInfo {
  DType dtype;
  std::string_view name;
  std::size_t size;
  bool floating;
};

constexpr std::array<DTypeInfo, kNumDTypes> kInfo = {{
    {DType::kBool, "bool", 1, false},
    {DType::kU8, "u8", 1, false},
    {DType::kI8, "i8", 1, false},
    {DType::kU16, "u16", 2, false},
    {DType::kI16, "i16", 2, false},
    {DType::kU32, "u32", 4, false},
    {DType::kI32, "i32", 4, false},
    {DType::kU64, "u64", 8, false},
    {DType::kI64, "i64", 8, false},
    {DType::kF16, "f16", 2, true},
    {DType::kBF16, "bf16", 2, true},
    {DType::kF32, "f32", 4, true},
    {DType::kF64, "f64", 8, true},
}};

const DTypeInfo& info(DType d) { return kInfo[static_cast<std::size_t>(d)]; }

}  // namespace

std::size_t dtype_size(DType d) { return info(d).size; }
std::string_view dtype_name(DType d) { return info(d).name; }
bool is_floating(DType d) { return info(d).floating; }

Expected<DType> parse_dtype(std::string_view name) {
  for (const auto& i : kInfo) {
    if (i.name == name) return i.dtype;
  }
  std::string accepted;
  for (const auto& i : kInfo) {
    if (!accepted.empty()) accepted += ", ";
    accepted += i.name;
  }
  return invalid_argument("unknown dtype '" + std::string(name) + "' (accepted: " + accepted + ")");
}

float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = (h >> 15) & 1u;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  const std::uint32_t mant = h & 0x3ffu;
  float v;
  if (exp == 0) {
    v = std::ldexp(static_cast<float>(mant), -24);
  } else if (exp == 31) {
    v = mant ? std::nanf("") : INFINITY;
  } else {
    v = std::ldexp(static_cast<float>(mant | 0x400u), static_cast<int>(exp) - 25);
  }
  return sign ? -v : v;
}

float bfloat16_to_float(std::uint16_t bits) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

std::uint16_t float_to_bfloat16(float value) {
  std::uint32_t u = std::bit_cast<std::uint32_t>(value);
  if (std::isnan(value)) return static_cast<std::uint16_t>((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even
  return static_cast<std::uint16_t>(u >> 16);
}

std::uint16_t float_to_half(float value) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(value);
  const std::uint16_t sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
  if (std::isnan(value)) return sign | 0x7e00u;
  const float a = std::fabs(value);
  if (a >= 65520.0f) return sign | 0x7c00u;
  if (a < std::ldexp(1.0f, -24)) {
    return sign | static_cast<std::uint16_t>(std::nearbyint(a * std::ldexp(1.0f, 24)));
  }
  int e;
  std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  if (e < -13) {      // subnormal half
    return sign | static_cast<std::uint16_t>(std::nearbyint(a * std::ldexp(1.0f, 24)));
  }
  // Normal: 10 mantissa bits. Round in float space, then carry into the exponent if needed.
  const float scaled = std::nearbyint(std::ldexp(a, 11 - e));  // in [1024, 2048]
  std::uint32_t m = static_cast<std::uint32_t>(scaled);
  int exp = e - 1 + 15;
  if (m == 2048u) {
    m = 1024u;
    ++exp;
  }
  if (exp >= 31) return sign | 0x7c00u;
  return sign | static_cast<std::uint16_t>((exp << 10) | (m & 0x3ffu));
}

}  // namespace edgevla
