// bf16 / fp16 storage types: round to nearest even from float and double, exact back to float, specials.
// Expected bit patterns are derived by hand from the formats (bf16: the high half of the float32 bits;
// fp16: 1 sign, 5 exponent (bias 15), 10 mantissa bits).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include <linea/core/storage.hpp>

using namespace linea;

namespace {
float from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
}  // namespace

TEST_CASE("bf16: round to nearest even, exact widening, specials") {
  CHECK(bf16(1.0f).bits == 0x3F80);
  CHECK(bf16(-2.0f).bits == 0xC000);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even (1.0); 1 + 3·2^-8 ties up to 1 + 2^-6.
  CHECK(bf16(from_bits(0x3F808000)).bits == 0x3F80);
  CHECK(bf16(from_bits(0x3F818000)).bits == 0x3F82);
  CHECK(bf16(from_bits(0x3F808001)).bits == 0x3F81);  // just above halfway rounds up
  // From double: 1 + 2^-8 + 2^-40 is above halfway although its nearest float is exactly halfway.
  CHECK(bf16(1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40)).bits == 0x3F81);
  CHECK(bf16(1.0 + std::ldexp(1.0, -8)).bits == 0x3F80);
  CHECK(static_cast<float>(bf16::from_bits(0x3F81)) == 1.0f + 1.0f / 128);
  CHECK(std::isinf(static_cast<float>(bf16(std::numeric_limits<float>::infinity()))));
  CHECK(std::isnan(static_cast<float>(bf16(std::numeric_limits<float>::quiet_NaN()))));
  CHECK(std::isinf(static_cast<float>(bf16(3.4e38f))));  // beyond bf16's largest finite after rounding
  CHECK(static_cast<double>(bf16(0.1)) == static_cast<double>(bf16(0.1f)));
}

TEST_CASE("fp16: round to nearest even, subnormals, overflow, exact widening") {
  CHECK(fp16(1.0f).bits == 0x3C00);
  CHECK(fp16(-2.0f).bits == 0xC000);
  CHECK(fp16(65504.0f).bits == 0x7BFF);             // largest finite
  CHECK(fp16(65519.0f).bits == 0x7BFF);             // below the halfway point to 65536
  CHECK(fp16(65520.0f).bits == 0x7C00);             // halfway: ties to even = Inf
  CHECK(fp16(1.0f + std::ldexp(1.0f, -11)).bits == 0x3C00);  // halfway between 1 and 1 + 2^-10: even
  CHECK(fp16(1.0f + 3 * std::ldexp(1.0f, -11)).bits == 0x3C02);
  CHECK(fp16(std::ldexp(1.0f, -24)).bits == 0x0001);  // smallest subnormal
  CHECK(fp16(std::ldexp(1.0f, -25)).bits == 0x0000);  // half of it: ties to even = 0
  CHECK(fp16(std::ldexp(3.0f, -25)).bits == 0x0002);  // 1.5 ulps: ties to even = 2
  CHECK(fp16(std::ldexp(1.0f, -14)).bits == 0x0400);  // smallest normal
  CHECK(static_cast<float>(fp16::from_bits(0x0001)) == std::ldexp(1.0f, -24));
  CHECK(static_cast<float>(fp16::from_bits(0x3555)) == 0x1.554p-2f);
  CHECK(std::isinf(static_cast<float>(fp16::from_bits(0x7C00))));
  CHECK(std::isnan(static_cast<float>(fp16(std::numeric_limits<float>::quiet_NaN()))));
  CHECK(fp16(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)).bits == 0x3C01);  // from double: one rounding
  // Every half value converts to float and back unchanged.
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const fp16 x = fp16::from_bits(static_cast<std::uint16_t>(h));
    const float f = static_cast<float>(x);
    if (std::isnan(f)) continue;
    if (fp16(f).bits != x.bits) {
      CHECK(fp16(f).bits == x.bits);
      break;
    }
  }
}

TEST_CASE("16-bit storage accumulates in float32") {
  CHECK(std::is_same_v<accumulate_t<bf16>, float>);
  CHECK(std::is_same_v<accumulate_t<fp16>, float>);
}
