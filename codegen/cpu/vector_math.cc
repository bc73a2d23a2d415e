#include "codegen/cpu/vector_math.h"

#include <cmath>
#include <initializer_list>
#include <limits>
#include <span>

#include "codegen/cpu/math_coefficients.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/IntrinsicsX86.h"

namespace shapeshift::codegen::cpu {
namespace {

llvm::Value* C(llvm::IRBuilder<>& b, llvm::Type* t, double v) { return llvm::ConstantFP::get(t, v); }

llvm::Type* I32Like(llvm::IRBuilder<>& b, llvm::Type* t) { return t->getWithNewType(b.getInt32Ty()); }

llvm::Value* IntC(llvm::IRBuilder<>& b, llvm::Type* float_like, int32_t v) {
  return llvm::ConstantInt::get(I32Like(b, float_like), v, /*isSigned=*/true);
}

llvm::Value* Intrinsic1(llvm::IRBuilder<>& b, llvm::Intrinsic::ID id, llvm::Value* x) {
  return b.CreateUnaryIntrinsic(id, x);
}

llvm::Value* Intrinsic2(llvm::IRBuilder<>& b, llvm::Intrinsic::ID id, llvm::Value* x, llvm::Value* y) {
  return b.CreateBinaryIntrinsic(id, x, y);
}

llvm::Value* MulAdd(llvm::IRBuilder<>& b, llvm::Value* x, llvm::Value* y, llvm::Value* z) {
  return b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {x->getType()}, {x, y, z});
}

// c[0] + x*(c[1] + x*(c[2] + ...)), Horner form.
llvm::Value* Polynomial(llvm::IRBuilder<>& b, llvm::Value* x, std::span<const double> coeffs) {
  const double* c = coeffs.data();
  int n = static_cast<int>(coeffs.size());
  llvm::Value* acc = C(b, x->getType(), c[n - 1]);
  for (int i = n - 2; i >= 0; --i) acc = MulAdd(b, acc, x, C(b, x->getType(), c[i]));
  return acc;
}
llvm::Value* Polynomial(llvm::IRBuilder<>& b, llvm::Value* x, std::initializer_list<double> coeffs) {
  return Polynomial(b, x, std::span<const double>(coeffs.begin(), coeffs.size()));
}

// 2^n for integer-valued n in [-126, 127], built from the exponent bits.
llvm::Value* Pow2(llvm::IRBuilder<>& b, llvm::Value* n_int, llvm::Type* float_like) {
  llvm::Value* bits = b.CreateShl(b.CreateAdd(n_int, IntC(b, float_like, 127)), IntC(b, float_like, 23));
  return b.CreateBitCast(bits, float_like);
}

llvm::Value* IsNan(llvm::IRBuilder<>& b, llvm::Value* x) { return b.CreateFCmpUNO(x, x); }

// min(x, hi) / max(x, lo) for a non-NaN constant bound, written as the
// compare-and-select x86's vminps/vmaxps compute, so each is one instruction
// (llvm.minnum/maxnum need two more to pick the non-NaN operand). A NaN x
// comes out unchanged.
llvm::Value* MinKeepNan(llvm::IRBuilder<>& b, llvm::Value* x, double hi) {
  llvm::Value* bound = C(b, x->getType(), hi);
  return b.CreateSelect(b.CreateFCmpOLT(bound, x), bound, x);
}
llvm::Value* MaxKeepNan(llvm::IRBuilder<>& b, llvm::Value* x, double lo) {
  llvm::Value* bound = C(b, x->getType(), lo);
  return b.CreateSelect(b.CreateFCmpOGT(bound, x), bound, x);
}

// True for a <16 x float> in a function compiled for AVX-512F, where
// vscalefps computes p * 2^n in one instruction, overflow and gradual
// underflow included.
bool HasScalef(llvm::IRBuilder<>& b, llvm::Value* x) {
  auto* vec = llvm::dyn_cast<llvm::FixedVectorType>(x->getType());
  if (vec == nullptr || vec->getNumElements() != 16 || !vec->getElementType()->isFloatTy()) return false;
  llvm::Function* fn = b.GetInsertBlock()->getParent();
  return fn->getFnAttribute("target-features").getValueAsString().contains("+avx512f");
}

llvm::Value* Scalef16(llvm::IRBuilder<>& b, llvm::Value* p, llvm::Value* n) {
  llvm::Function* scalef = llvm::Intrinsic::getDeclaration(b.GetInsertBlock()->getModule(),
                                                           llvm::Intrinsic::x86_avx512_mask_scalef_ps_512);
  // All lanes (mask -1), current rounding mode (4).
  return b.CreateCall(scalef, {p, n, p, b.getInt16(0xffff), b.getInt32(4)});
}

}  // namespace

llvm::Value* EmitExp(llvm::IRBuilder<>& b, llvm::Value* x) {
  llvm::Type* t = x->getType();
  llvm::Value* xc = MaxKeepNan(b, MinKeepNan(b, x, 88.8), -104.0);
  llvm::Value* n = Intrinsic1(b, llvm::Intrinsic::floor, MulAdd(b, xc, C(b, t, M_LOG2E), C(b, t, 0.5)));
  // r = x - n*ln2 in two steps; 0.693359375 has few mantissa bits so n*hi is exact.
  llvm::Value* r = MulAdd(b, n, C(b, t, -math::kLn2High), xc);
  r = MulAdd(b, n, C(b, t, -math::kLn2Low), r);
  llvm::Value* p = Polynomial(b, r, math::kExpTaylor);
  // A NaN x stays NaN through the clamps, the polynomial and vscalefps.
  if (HasScalef(b, x)) return Scalef16(b, p, n);
  // n reaches [-150, 128]: scale in two halves so each factor is a normal float.
  llvm::Value* ni = b.CreateFPToSI(n, I32Like(b, t));
  llvm::Value* n1 = b.CreateAShr(ni, IntC(b, t, 1));
  llvm::Value* n2 = b.CreateSub(ni, n1);
  llvm::Value* result = b.CreateFMul(b.CreateFMul(p, Pow2(b, n1, t)), Pow2(b, n2, t));
  result = b.CreateSelect(b.CreateFCmpOGT(x, C(b, t, 88.72283935546875)),
                          C(b, t, std::numeric_limits<double>::infinity()), result);
  return b.CreateSelect(IsNan(b, x), x, result);  // fptosi of NaN is poison
}

llvm::Value* EmitLog(llvm::IRBuilder<>& b, llvm::Value* x) {
  llvm::Type* t = x->getType();
  llvm::Type* it = I32Like(b, t);
  // Denormals: scale by 2^23 so the exponent field is meaningful.
  llvm::Value* denormal = b.CreateFCmpOLT(x, C(b, t, 1.17549435e-38));
  llvm::Value* xs = b.CreateSelect(denormal, b.CreateFMul(x, C(b, t, 8388608.0)), x);
  llvm::Value* e_adjust = b.CreateSelect(denormal, IntC(b, t, -23), IntC(b, t, 0));
  llvm::Value* bits = b.CreateBitCast(xs, it);
  llvm::Value* e = b.CreateSub(b.CreateAnd(b.CreateLShr(bits, IntC(b, t, 23)), IntC(b, t, 0xff)),
                               IntC(b, t, 127));
  e = b.CreateAdd(e, e_adjust);
  llvm::Value* m = b.CreateBitCast(
      b.CreateOr(b.CreateAnd(bits, IntC(b, t, 0x007fffff)), IntC(b, t, 0x3f800000)), t);
  llvm::Value* big = b.CreateFCmpOGT(m, C(b, t, M_SQRT2));
  m = b.CreateSelect(big, b.CreateFMul(m, C(b, t, 0.5)), m);
  e = b.CreateSelect(big, b.CreateAdd(e, IntC(b, t, 1)), e);
  llvm::Value* f = b.CreateFSub(m, C(b, t, 1.0));
  llvm::Value* s = b.CreateFDiv(f, b.CreateFAdd(f, C(b, t, 2.0)));
  llvm::Value* s2 = b.CreateFMul(s, s);
  llvm::Value* series = Polynomial(b, s2, {2.0, 2.0 / 3, 2.0 / 5, 2.0 / 7, 2.0 / 9, 2.0 / 11});
  llvm::Value* log_m = b.CreateFMul(s, series);
  llvm::Value* ef = b.CreateSIToFP(e, t);
  llvm::Value* result = MulAdd(b, ef, C(b, t, math::kLn2High), MulAdd(b, ef, C(b, t, math::kLn2Low), log_m));
  double inf = std::numeric_limits<double>::infinity();
  result = b.CreateSelect(b.CreateFCmpOEQ(x, C(b, t, inf)), x, result);
  result = b.CreateSelect(b.CreateFCmpOEQ(x, C(b, t, 0.0)), C(b, t, -inf), result);
  result = b.CreateSelect(b.CreateFCmpOLT(x, C(b, t, 0.0)), C(b, t, std::nan("")), result);
  return b.CreateSelect(IsNan(b, x), x, result);
}

llvm::Value* EmitTanh(llvm::IRBuilder<>& b, llvm::Value* x) {
  llvm::Type* t = x->getType();
  llvm::Value* a = Intrinsic1(b, llvm::Intrinsic::fabs, x);
  llvm::Value* x2 = b.CreateFMul(x, x);
  llvm::Value* odd = Polynomial(b, x2, {-1.0 / 3, 2.0 / 15, -17.0 / 315, 62.0 / 2835, -1382.0 / 155925});
  llvm::Value* small = MulAdd(b, b.CreateFMul(x, x2), odd, x);
  llvm::Value* e2a = EmitExp(b, b.CreateFAdd(a, a));
  llvm::Value* large = b.CreateFSub(C(b, t, 1.0), b.CreateFDiv(C(b, t, 2.0), b.CreateFAdd(e2a, C(b, t, 1.0))));
  large = Intrinsic2(b, llvm::Intrinsic::copysign, large, x);
  return b.CreateSelect(b.CreateFCmpOLT(a, C(b, t, 0.3)), small, large);
}

llvm::Value* EmitErf(llvm::IRBuilder<>& b, llvm::Value* x) {
  llvm::Type* t = x->getType();
  llvm::Value* a = Intrinsic1(b, llvm::Intrinsic::fabs, x);
  llvm::Value* x2 = b.CreateFMul(x, x);
  // erf(x) = 2/sqrt(pi) * sum (-1)^k x^(2k+1) / (k! (2k+1))
  llvm::Value* series = Polynomial(b, x2, math::kErfTaylor);
  llvm::Value* small = b.CreateFMul(b.CreateFMul(x, C(b, t, M_2_SQRTPI)), series);
  llvm::Value* tt = b.CreateFDiv(C(b, t, 1.0), MulAdd(b, a, C(b, t, math::kErfP), C(b, t, 1.0)));
  llvm::Value* poly = b.CreateFMul(tt, Polynomial(b, tt, math::kErfPoly));
  llvm::Value* large = b.CreateFSub(C(b, t, 1.0), b.CreateFMul(poly, EmitExp(b, b.CreateFNeg(x2))));
  large = Intrinsic2(b, llvm::Intrinsic::copysign, large, x);
  return b.CreateSelect(b.CreateFCmpOLT(a, C(b, t, 0.5)), small, large);
}

llvm::Value* EmitOnePlusTanh(llvm::IRBuilder<>& b, llvm::Value* u) {
  llvm::Type* t = u->getType();
  llvm::Value* e = EmitExp(b, b.CreateFMul(u, C(b, t, -2.0)));
  return b.CreateFDiv(C(b, t, 2.0), b.CreateFAdd(C(b, t, 1.0), e));
}

llvm::Value* EmitSigmoid(llvm::IRBuilder<>& b, llvm::Value* x) {
  llvm::Type* t = x->getType();
  llvm::Value* e = EmitExp(b, b.CreateFNeg(x));
  return b.CreateFDiv(C(b, t, 1.0), b.CreateFAdd(C(b, t, 1.0), e));
}

}  // namespace shapeshift::codegen::cpu
