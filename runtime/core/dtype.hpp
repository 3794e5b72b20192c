// Element types a tensor can hold, with their wire names ("f32", "bf16", ...).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "runtime/core/status.hpp"

namespace edgevla {

enum class DType : std::uint8_t {
  kBool,
  kU8,
  kI8,
  kU16,
  kI16,
  kU32,
  kI32,
  kU64,
  kI64,
  kF16,
  kBF16,
  kF32,
  kF64,
};

inline constexpr int kNumDTypes = 13;

std::size_t dtype_size(DType dtype);
std::string_view dtype_name(DType dtype);
// Parses a wire name; the error lists the accepted names.
Expected<DType> parse_dtype(std::string_view name);
bool is_floating(DType dtype);

template <class T>
struct DTypeOf;
template <> struct DTypeOf<bool> { static constexpr DType value = DType::kBool; };
template <> struct DTypeOf<std::uint8_t> { static constexpr DType value = DType::kU8; };
template <> struct DTypeOf<std::int8_t> { static constexpr DType value = DType::kI8; };
template <> struct DTypeOf<std::uint16_t> { static constexpr DType value = DType::kU16; };
template <> struct DTypeOf<std::int16_t> { static constexpr DType value = DType::kI16; };
template <> struct DTypeOf<std::uint32_t> { static constexpr DType value = DType::kU32; };
template <> struct DTypeOf<std::int32_t> { static constexpr DType value = DType::kI32; };
template <> struct DTypeOf<std::uint64_t> { static constexpr DType value = DType::kU64; };
template <> struct DTypeOf<std::int64_t> { static constexpr DType value = DType::kI64; };
template <> struct DTypeOf<float> { static constexpr DType value = DType::kF32; };
template <> struct DTypeOf<double> { static constexpr DType value = DType::kF64; };

// Scalar conversions used by summaries (topic echo) and tests; f16/bf16 decoded exactly.
float half_to_float(std::uint16_t bits);
float bfloat16_to_float(std::uint16_t bits);
std::uint16_t float_to_bfloat16(float value);
std::uint16_t float_to_half(float value);

}  // namespace edgevla
