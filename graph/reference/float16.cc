// 16-bit float conversions; see float16.h.
#include "graph/reference/float16.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace shapeshift {

float HalfBitsToFloat(uint16_t bits) {
  const bool negative = (bits >> 15) & 1;
  const int exponent = (bits >> 10) & 0x1f;
  const int mantissa = bits & 0x3ff;
  float magnitude;
  if (exponent == 0) {
    magnitude = std::ldexp(static_cast<float>(mantissa), -24);
  } else if (exponent == 31) {
    magnitude = mantissa ? std::numeric_limits<float>::quiet_NaN()
                         : std::numeric_limits<float>::infinity();
  } else {
    magnitude = std::ldexp(static_cast<float>(mantissa | 0x400), exponent - 25);
  }
  return negative ? -magnitude : magnitude;
}

uint16_t DoubleToHalfBits(double value) {
  const uint16_t sign = std::signbit(value) ? 0x8000 : 0;
  if (std::isnan(value)) return sign | 0x7e00;
  const double magnitude = std::fabs(value);
  // 65520 = largest finite half (65504) plus half an ulp: rounds to infinity.
  if (magnitude >= 65520.0) return sign | 0x7c00;
  if (magnitude < std::ldexp(1.0, -14)) {
    // Subnormal: a multiple of 2^-24; rounding up to 0x400 yields the
    // smallest normal, which is the right answer.
    return sign | static_cast<uint16_t>(std::nearbyint(std::ldexp(magnitude, 24)));
  }
  int exponent;
  const double fraction = std::frexp(magnitude, &exponent);  // magnitude = fraction * 2^exponent
  int biased = exponent - 1 + 15;
  // fraction in [0.5, 1): the 10 mantissa bits follow the implicit leading 1.
  double mantissa = std::nearbyint((fraction * 2.0 - 1.0) * 1024.0);
  if (mantissa == 1024.0) {
    mantissa = 0;
    ++biased;
  }
  if (biased >= 31) return sign | 0x7c00;
  return sign | static_cast<uint16_t>(biased << 10) | static_cast<uint16_t>(mantissa);
}

float BFloat16BitsToFloat(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &wide, sizeof f);
  return f;
}

uint16_t FloatToBFloat16Bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  if (std::isnan(value)) return static_cast<uint16_t>((bits >> 16) | 0x40);
  const uint32_t rounding = 0x7fff + ((bits >> 16) & 1);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

}  // namespace shapeshift
