// IEEE binary16 (f16) and bfloat16 conversions. Kernels do not compute in
// 16-bit types, but Cast converts to and from them and Tensor prints them;
// conversions to 16 bits round to nearest, ties to even.
#ifndef SHAPESHIFT_GRAPH_REFERENCE_FLOAT16_H_
#define SHAPESHIFT_GRAPH_REFERENCE_FLOAT16_H_

#include <cstdint>

namespace shapeshift {

float HalfBitsToFloat(uint16_t bits);
uint16_t DoubleToHalfBits(double value);
float BFloat16BitsToFloat(uint16_t bits);
uint16_t FloatToBFloat16Bits(float value);

}  // namespace shapeshift

#endif  // SHAPESHIFT_GRAPH_REFERENCE_FLOAT16_H_
