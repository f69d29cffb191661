// linea/core/storage.hpp — 16-bit storage types: bf16 (bfloat16) and fp16 (IEEE binary16).
//
// They are storage only: every conversion is explicit, and the library computes in float32
// (accumulate_t<bf16> = accumulate_t<fp16> = float; SPEC §1, §5: tolerance 1e-2).
//
//   linea::bf16 x{0.1f};            // round to nearest, ties to even
//   float y = static_cast<float>(x);  // exact
//
// Conversions from float and from double both round once, to nearest even: double goes through float with
// round-to-odd, which float's 13 (bf16: 16) spare bits make exact ("round to odd" double rounding fact).
// NaN stays NaN (quiet), ±Inf stays ±Inf, values beyond the largest finite become ±Inf. Host and device.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "../config.hpp"
#include "numeric.hpp"

namespace linea {

namespace detail {

LINEA_HD inline std::uint32_t float_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
LINEA_HD inline float bits_float(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// double → float rounded to odd: truncate toward zero, then set the last bit when anything was dropped.
// Rounding that result once more to a format with at least two fewer bits equals one direct rounding.
LINEA_HD inline float to_float_round_odd(double d) {
  if (d != d) return static_cast<float>(d);  // NaN
  float f = static_cast<float>(d);           // nearest
  if (std::fabs(static_cast<double>(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);  // toward zero
  if (static_cast<double>(f) != d) return bits_float(float_bits(f) | 1u);
  return f;
}

// float → bfloat16 bits, round to nearest even: add 0x7FFF plus the lowest kept bit, keep the high half.
LINEA_HD inline std::uint16_t bf16_bits_from_float(float f) {
  const std::uint32_t u = float_bits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((u >> 16) | 0x0040u);  // quiet NaN
  const std::uint32_t lsb = (u >> 16) & 1u;
  return static_cast<std::uint16_t>((u + 0x7FFFu + lsb) >> 16);
}

// float → binary16 bits, round to nearest even.
LINEA_HD inline std::uint16_t fp16_bits_from_float(float f) {
  std::uint32_t u = float_bits(f);
  const std::uint32_t sign = (u >> 16) & 0x8000u;
  u &= 0x7FFFFFFFu;
  std::uint32_t h;
  if (u >= 0x47800000u) {  // |f| ≥ 65536 (or Inf/NaN): beyond every finite half after rounding
    h = u > 0x7F800000u ? 0x7E00u : 0x7C00u;
  } else if (u < 0x38800000u) {  // |f| < 2^-14: a subnormal half (or zero)
    // Adding 0.5 aligns the half's 10 subnormal bits with the float mantissa's bottom; the float adder
    // rounds to nearest even for us.
    const float aligned = bits_float(u) + 0.5f;
    h = float_bits(aligned) - 0x3F000000u;
  } else {
    const std::uint32_t odd = (u >> 13) & 1u;
    u += 0xC8000000u + 0x0FFFu + odd;  // rebias the exponent (−112 · 2^23), then round the 13 dropped bits
    h = u >> 13;                       // a carry into the exponent rounds up to the next binade or to Inf
  }
  return static_cast<std::uint16_t>(h | sign);
}

LINEA_HD inline float fp16_bits_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1Fu, mant = h & 0x3FFu;
  if (exp == 0) {  // zero or subnormal: mant · 2^-24, exact in float
    const float m = static_cast<float>(mant) * 5.9604644775390625e-8f;
    return bits_float(float_bits(m) | sign);
  }
  if (exp == 31) return bits_float(sign | 0x7F800000u | (mant << 13));
  return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
}

}  // namespace detail

// bfloat16: float32's sign and exponent, 7 mantissa bits.
struct bf16 {
  std::uint16_t bits = 0;

  bf16() = default;
  LINEA_HD explicit bf16(float f) : bits(detail::bf16_bits_from_float(f)) {}
  LINEA_HD explicit bf16(double d) : bits(detail::bf16_bits_from_float(detail::to_float_round_odd(d))) {}
  template <class I, std::enable_if_t<std::is_integral_v<I>, int> = 0>
  LINEA_HD explicit bf16(I i) : bf16(static_cast<double>(i)) {}

  LINEA_HD explicit operator float() const { return detail::bits_float(static_cast<std::uint32_t>(bits) << 16); }
  LINEA_HD explicit operator double() const { return static_cast<double>(static_cast<float>(*this)); }

  LINEA_HD static bf16 from_bits(std::uint16_t b) {
    bf16 x;
    x.bits = b;
    return x;
  }
  friend LINEA_HD bool operator==(bf16 a, bf16 b) { return static_cast<float>(a) == static_cast<float>(b); }
};

// IEEE binary16: 5 exponent bits, 10 mantissa bits (largest finite 65504).
struct fp16 {
  std::uint16_t bits = 0;

  fp16() = default;
  LINEA_HD explicit fp16(float f) : bits(detail::fp16_bits_from_float(f)) {}
  LINEA_HD explicit fp16(double d) : bits(detail::fp16_bits_from_float(detail::to_float_round_odd(d))) {}
  template <class I, std::enable_if_t<std::is_integral_v<I>, int> = 0>
  LINEA_HD explicit fp16(I i) : fp16(static_cast<double>(i)) {}

  LINEA_HD explicit operator float() const { return detail::fp16_bits_to_float(bits); }
  LINEA_HD explicit operator double() const { return static_cast<double>(static_cast<float>(*this)); }

  LINEA_HD static fp16 from_bits(std::uint16_t b) {
    fp16 x;
    x.bits = b;
    return x;
  }
  friend LINEA_HD bool operator==(fp16 a, fp16 b) { return static_cast<float>(a) == static_cast<float>(b); }
};

// 16-bit storage accumulates in float32.
template <>
struct accumulate_type<bf16> {
  using type = float;
};
template <>
struct accumulate_type<fp16> {
  using type = float;
};

// A storage type's short name for messages and benchmark names.
template <class T>
struct storage_name;
template <>
struct storage_name<float> {
  static constexpr const char* value = "f32";
};
template <>
struct storage_name<double> {
  static constexpr const char* value = "f64";
};
template <>
struct storage_name<bf16> {
  static constexpr const char* value = "bf16";
};
template <>
struct storage_name<fp16> {
  static constexpr const char* value = "fp16";
};

}  // namespace linea
