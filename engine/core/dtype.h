// Element types of tensors, their names and sizes, and the 16-bit float conversions.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

namespace tessera {

// New types are appended: the numbering is part of the .tsr format.
// kString elements are 8-byte ids of interned strings (engine/core/strings.h).
enum class DType : uint8_t { kF32, kF16, kBF16, kF64, kI8, kU8, kI32, kI64, kBool, kI16, kU16, kU32, kU64, kString };
inline constexpr int kNumDTypes = 14;

// Short names used in the IR text and the JSON format: f32 f16 bf16 f64 i8 u8 i32 i64 bool i16
// u16 u32 u64 string.
std::string_view dtype_name(DType t);
std::optional<DType> dtype_from_name(std::string_view name);
// Bytes per element (bool is stored as one byte holding 0 or 1).
int dtype_size(DType t);
bool is_float(DType t);    // f32 f16 bf16 f64
bool is_integer(DType t);  // i8 u8 i16 u16 i32 u32 i64 u64
bool is_signed(DType t);   // floats and signed integers

// IEEE half and bfloat16, round to nearest even; NaN stays NaN.
uint16_t float_to_half(float f);
float half_to_float(uint16_t h);
inline uint16_t float_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
inline float bf16_to_float(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Maps a C++ element type to its DType (bool maps to kBool but is stored as uint8_t).
template <class T> struct DTypeOf;
template <> struct DTypeOf<float> { static constexpr DType value = DType::kF32; };
template <> struct DTypeOf<double> { static constexpr DType value = DType::kF64; };
template <> struct DTypeOf<int8_t> { static constexpr DType value = DType::kI8; };
template <> struct DTypeOf<uint8_t> { static constexpr DType value = DType::kU8; };
template <> struct DTypeOf<int32_t> { static constexpr DType value = DType::kI32; };
template <> struct DTypeOf<int64_t> { static constexpr DType value = DType::kI64; };
template <> struct DTypeOf<int16_t> { static constexpr DType value = DType::kI16; };
template <> struct DTypeOf<uint16_t> { static constexpr DType value = DType::kU16; };
template <> struct DTypeOf<uint32_t> { static constexpr DType value = DType::kU32; };
template <> struct DTypeOf<uint64_t> { static constexpr DType value = DType::kU64; };

}  // namespace tessera
