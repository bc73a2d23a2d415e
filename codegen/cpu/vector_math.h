// Vectorizable f32 transcendental functions emitted as LLVM IR.
//
// LLVM has no vector exp/log/tanh/erf that lower to inline code (the
// intrinsics become scalar libm calls per lane), so softmax, GELU and
// sigmoid would fall off a cliff. These emitters produce branch-free IR that
// works for a scalar float or any <N x float>, so the same code serves the
// vector body and the scalar remainder of a loop.
//
// Accuracy over all finite f32 inputs (checked against std:: in double by
// tests/codegen/vector_math_test.cc; rel = |got - want| / |want|):
//  - Exp: Cody-Waite reduction by ln 2 + degree-7 Taylor on |r| <= ln2/2,
//    rel < 1e-6; overflow to inf above 88.72, gradual underflow to 0. The
//    final p * 2^n is one vscalefps for <16 x float> under AVX-512F (14 vector
//    instructions in all), integer exponent arithmetic elsewhere.
//  - Log: exponent split, m in [sqrt(1/2), sqrt(2)), series in s=(m-1)/(m+1)
//    to s^11, abs < 2e-7 near 1 and rel < 1e-6 elsewhere; denormals handled;
//    log(0) = -inf, log(x<0) = NaN.
//  - Tanh: odd Taylor polynomial to x^11 for |x| < 0.3, else
//    1 - 2/(exp(2|x|)+1); rel < 1e-6.
//  - Erf: odd Taylor polynomial to x^13 for |x| < 0.5, else Abramowitz &
//    Stegun 7.1.26 (abs error <= 1.5e-7); rel < 1e-6.
//  - Sigmoid: 1 / (1 + exp(-x)); rel < 1e-6 where the result is normal.
//  - OnePlusTanh(u) = 1 + tanh(u) computed as 2 / (1 + exp(-2u)): GELU's
//    tanh form needs exactly this; one exp and one division instead of
//    tanh's exp, division and polynomial, and no cancellation for u << 0
//    (where 1 + tanh(u) loses every digit). rel < 1e-6 where normal.
// NaN inputs give NaN.
#ifndef SHAPESHIFT_CODEGEN_CPU_VECTOR_MATH_H_
#define SHAPESHIFT_CODEGEN_CPU_VECTOR_MATH_H_

#include "llvm/IR/IRBuilder.h"

namespace shapeshift::codegen::cpu {

llvm::Value* EmitExp(llvm::IRBuilder<>& b, llvm::Value* x);
llvm::Value* EmitLog(llvm::IRBuilder<>& b, llvm::Value* x);
llvm::Value* EmitTanh(llvm::IRBuilder<>& b, llvm::Value* x);
llvm::Value* EmitErf(llvm::IRBuilder<>& b, llvm::Value* x);
llvm::Value* EmitSigmoid(llvm::IRBuilder<>& b, llvm::Value* x);
llvm::Value* EmitOnePlusTanh(llvm::IRBuilder<>& b, llvm::Value* u);

}  // namespace shapeshift::codegen::cpu

#endif  // SHAPESHIFT_CODEGEN_CPU_VECTOR_MATH_H_
