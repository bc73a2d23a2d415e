#include "codegen/lower/special_math.h"

#include <cmath>
#include <limits>
#include <memory>

namespace shapeshift::codegen::lower {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kF32Max = std::numeric_limits<float>::max();
// Every f32 of magnitude >= 2^24 is an even integer; below it, the integer
// part survives a round trip through i64.
constexpr double kIntegerF32 = 16777216.0;

Value False() {
  auto node = std::make_shared<ValueNode>();
  node->kind = ValueKind::kConst;
  node->type = ScalarType::kBool;
  node->i_value = 0;
  return node;
}

Value And(Value a, Value b) { return Select(a, b, False()); }
Value Lt(Value a, Value b) { return Compare(CompareOp::kLt, a, b); }
Value Gt(Value a, Value b) { return Compare(CompareOp::kGt, a, b); }
Value Eq(Value a, Value b) { return Compare(CompareOp::kEq, a, b); }
Value Ne(Value a, Value b) { return Compare(CompareOp::kNe, a, b); }
Value Abs(Value x) { return Unary(UnaryOp::kAbs, x); }
// The integer part of a finite f32 below 2^24 in magnitude.
Value Trunc(Value x) { return Cast(ScalarType::kF32, Cast(ScalarType::kI64, x)); }

}  // namespace

Value Pow(Value x, Value y) {
  // |y| < 2^24, else 0: safe to convert to i64 (NaN and inf are not).
  Value small_y = Select(Lt(Abs(y), F32(kIntegerF32)), y, F32(0));
  Value not_integer = Ne(Trunc(small_y), small_y);  // false for |y| >= 2^24
  Value half = small_y * F32(0.5);
  Value odd = And(Eq(Trunc(small_y), small_y), Ne(Trunc(half), half));
  // Negative sign bit, -0 and -inf included: x + 1/x < 0.
  Value negative = Lt(x + Unary(UnaryOp::kRecip, x), F32(0));
  Value magnitude = Exp(y * Unary(UnaryOp::kLog, Abs(x)));
  Value r = Select(And(negative, odd), Unary(UnaryOp::kNeg, magnitude), magnitude);
  // A negative finite base to a finite non-integer power.
  r = Select(And(And(Lt(x, F32(0)), Gt(x, F32(-kInf))), not_integer), F32(std::nan("")), r);
  r = Select(And(Eq(x, F32(-1)), Eq(Abs(y), F32(kInf))), F32(1), r);
  r = Select(Eq(y, F32(1)), x, r);  // exact (exp(log(FLT_MAX)) rounds to inf)
  return Select(Eq(x, F32(1)), F32(1), Select(Eq(y, F32(0)), F32(1), r));
}

Value PowByConstant(Value x, double e) {
  if (e == 1) return x;
  if (e == 2) return x * x;
  if (e == 3) return x * x * x;
  if (e == -1) return Unary(UnaryOp::kRecip, x);
  if (e == 0) return F32(1);
  if (e == 0.5) return Select(Eq(x, F32(-kInf)), F32(kInf), Unary(UnaryOp::kSqrt, x));
  return Pow(x, F32(e));
}

Value Clip(Value x, std::optional<Value> lo, std::optional<Value> hi) {
  if (x->type == ScalarType::kF32) {
    if (!lo) lo = F32(-kF32Max);
    if (!hi) hi = F32(kF32Max);
  }
  if (lo) x = Select(Lt(x, *lo), *lo, x);
  if (hi) x = Select(Gt(x, *hi), *hi, x);
  return x;
}

Value LeakyRelu(Value x, Value slope) { return Select(Lt(x, F32(0)), slope * x, x); }

Value Mod(Value a, Value b, bool c_fmod) {
  Value r = Binary(BinaryOp::kRem, a, b);
  if (c_fmod) return r;
  Value zero = a->type == ScalarType::kI64 ? I64(0) : Cast(a->type, I64(0));
  // The truncated remainder has the dividend's sign; move it to the divisor's.
  Value signs_differ = Ne(Lt(r, zero), Lt(b, zero));
  return Select(And(Ne(r, zero), signs_differ), r + b, r);
}

Value Sign(Value x) {
  if (x->type == ScalarType::kF32) {
    return Select(Gt(x, F32(0)), F32(1), Select(Lt(x, F32(0)), F32(-1), Select(Ne(x, x), x, F32(0))));
  }
  Value zero = x->type == ScalarType::kI64 ? I64(0) : Cast(x->type, I64(0));
  Value one = x->type == ScalarType::kI64 ? I64(1) : Cast(x->type, I64(1));
  Value minus_one = x->type == ScalarType::kI64 ? I64(-1) : Cast(x->type, I64(-1));
  return Select(Gt(x, zero), one, Select(Lt(x, zero), minus_one, zero));
}

}  // namespace shapeshift::codegen::lower
