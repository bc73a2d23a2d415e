// Kernel-IR expressions for the ONNX ops whose special values need more
// than one IR op: Pow (C99 pow's special cases, as ONNX Runtime computes it
// with std::pow), Clip (ONNX Runtime's bounds), LeakyRelu and PRelu, Mod's
// two sign conventions and Sign.
//
// Why a file of its own: the element emitter maps ops to values; the
// special-value cases of these four are a page of Selects that must match
// the reference interpreter (graph/reference/) and ONNX Runtime exactly,
// and the committed ORT cases (tests/data/special_values/) check them.
#ifndef SHAPESHIFT_CODEGEN_LOWER_SPECIAL_MATH_H_
#define SHAPESHIFT_CODEGEN_LOWER_SPECIAL_MATH_H_

#include <optional>

#include "codegen/kernel_ir.h"

namespace shapeshift::codegen::lower {

// x^y for f32 with pow's special cases: x^0 = 1 and 1^y = 1 (even for NaN),
// x^1 = x exactly,
// (-1)^±inf = 1, a negative finite x to a finite non-integer y is NaN, odd
// integer powers keep x's sign (-0 and -inf included), zeros and infinities
// give 0 or inf by the sign of y. Elsewhere exp(y * log|x|) (relative error
// about |y log x| * 1e-7).
Value Pow(Value x, Value y);
// x^e for a constant e: exact products for e in {1, 2, 3}, 1/x for -1,
// sqrt(x) for 0.5 (with (-inf)^0.5 = +inf), 1 for 0, else Pow(x, e).
Value PowByConstant(Value x, double e);

// Clip with ONNX Runtime's semantics: an absent bound is the f32 range's end
// (so Clip(-inf) without a min is -FLT_MAX), a NaN element stays NaN and a
// NaN bound is ignored: x < lo ? lo : x, then x > hi ? hi : x.
Value Clip(Value x, std::optional<Value> lo, std::optional<Value> hi);

// x < 0 ? slope * x : x (LeakyRelu's alpha, PRelu's slope); NaN stays NaN.
Value LeakyRelu(Value x, Value slope);

// ONNX Mod. c_fmod (fmod=1): the truncated remainder, with the dividend's
// sign (C fmod for f32: exact; fmod(x, 0) and fmod(inf, y) are NaN).
// Otherwise (fmod=0, integers): the floored remainder, with the divisor's
// sign (Python's %). An integer remainder by 0 is 0 (kernel_ir.h: never a trap).
Value Mod(Value a, Value b, bool c_fmod);

// ONNX Sign: 1, -1 or 0 (also for -0); NaN stays NaN.
Value Sign(Value x);

}  // namespace shapeshift::codegen::lower

#endif  // SHAPESHIFT_CODEGEN_LOWER_SPECIAL_MATH_H_
