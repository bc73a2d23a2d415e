#include "codegen/cpu/ir_arithmetic.h"

#include <cstdint>
#include <limits>
#include <vector>

#include "codegen/cpu/vector_math.h"
#include "llvm/IR/Intrinsics.h"

namespace shapeshift::codegen::cpu {
namespace {

// True for a float (or splat vector) constant that is not NaN.
bool IsNonNanConstant(llvm::Value* v) {
  auto* k = llvm::dyn_cast<llvm::Constant>(v);
  if (k == nullptr) return false;
  if (v->getType()->isVectorTy()) k = k->getSplatValue();
  auto* fp = llvm::dyn_cast_or_null<llvm::ConstantFP>(k);
  return fp != nullptr && !fp->isNaN();
}

}  // namespace

llvm::Value* IrArithmetic::Unary(UnaryOp op, llvm::Value* x, ScalarType type) {
  llvm::Type* t = x->getType();
  bool is_float = type == ScalarType::kF32;
  switch (op) {
    case UnaryOp::kNeg: return is_float ? b_.CreateFNeg(x) : b_.CreateNeg(x);
    case UnaryOp::kAbs:
      if (is_float) return b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
      return b_.CreateSelect(b_.CreateICmpSLT(x, llvm::Constant::getNullValue(t)), b_.CreateNeg(x), x);
    case UnaryOp::kExp: return EmitExp(b_, x);
    case UnaryOp::kLog: return EmitLog(b_, x);
    case UnaryOp::kSqrt: return b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x);
    case UnaryOp::kRsqrt:
      return b_.CreateFDiv(llvm::ConstantFP::get(t, 1.0), b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x));
    case UnaryOp::kTanh: return EmitTanh(b_, x);
    case UnaryOp::kErf: return EmitErf(b_, x);
    case UnaryOp::kSigmoid: return EmitSigmoid(b_, x);
    case UnaryOp::kRecip: return b_.CreateFDiv(llvm::ConstantFP::get(t, 1.0), x);
    // llvm.sin/cos become one sinf/cosf call per lane (libm, from the
    // process): exact argument reduction for every f32, where a vector
    // polynomial's Cody-Waite reduction fails beyond ~1e5 (rotary
    // embeddings only need them on [positions, head_dim] tables).
    case UnaryOp::kSin: return b_.CreateUnaryIntrinsic(llvm::Intrinsic::sin, x);
    case UnaryOp::kCos: return b_.CreateUnaryIntrinsic(llvm::Intrinsic::cos, x);
    case UnaryOp::kFloor: return b_.CreateUnaryIntrinsic(llvm::Intrinsic::floor, x);
    case UnaryOp::kCeil: return b_.CreateUnaryIntrinsic(llvm::Intrinsic::ceil, x);
    case UnaryOp::kRound: return b_.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, x);
  }
  return nullptr;
}

llvm::Value* IrArithmetic::Binary(BinaryOp op, llvm::Value* a, llvm::Value* c, ScalarType type) {
  if (type == ScalarType::kF32) {
    switch (op) {
      case BinaryOp::kAdd: return b_.CreateFAdd(a, c);
      case BinaryOp::kSub: return b_.CreateFSub(a, c);
      case BinaryOp::kMul: return b_.CreateFMul(a, c);
      case BinaryOp::kDiv: return b_.CreateFDiv(a, c);
      case BinaryOp::kMax: return FloatMaxMin(/*is_max=*/true, a, c);
      case BinaryOp::kMin: return FloatMaxMin(/*is_max=*/false, a, c);
      case BinaryOp::kRem: return b_.CreateFRem(a, c);  // fmodf: exact
    }
  }
  switch (op) {
    case BinaryOp::kAdd: return b_.CreateAdd(a, c);
    case BinaryOp::kSub: return b_.CreateSub(a, c);
    case BinaryOp::kMul: return b_.CreateMul(a, c);
    case BinaryOp::kMax: return b_.CreateSelect(b_.CreateICmpSGT(a, c), a, c);
    case BinaryOp::kMin: return b_.CreateSelect(b_.CreateICmpSLT(a, c), a, c);
    case BinaryOp::kDiv:
    case BinaryOp::kRem: return IntegerDivision(op == BinaryOp::kDiv, a, c);
  }
  return nullptr;
}

// a / c (truncating) or a % c without the two x86 traps (kernel_ir.h):
// the divisor is replaced by 1 where it is 0 or -1, then those lanes get
// their defined results: 0 for a division by zero, -a (wrapping) and 0
// for a division by -1.
llvm::Value* IrArithmetic::IntegerDivision(bool quotient, llvm::Value* a, llvm::Value* c) {
  llvm::Type* t = a->getType();
  llvm::Value* zero = llvm::Constant::getNullValue(t);
  llvm::Value* one = llvm::ConstantInt::get(t, 1);
  llvm::Value* by_zero = b_.CreateICmpEQ(c, zero);
  llvm::Value* by_minus_one = b_.CreateICmpEQ(c, llvm::Constant::getAllOnesValue(t));
  llvm::Value* safe = b_.CreateSelect(b_.CreateOr(by_zero, by_minus_one), one, c);
  if (!quotient) return b_.CreateSelect(by_minus_one, zero, b_.CreateSelect(by_zero, zero, b_.CreateSRem(a, safe)));
  llvm::Value* q = b_.CreateSDiv(a, safe);
  return b_.CreateSelect(by_zero, zero, b_.CreateSelect(by_minus_one, b_.CreateNeg(a), q));
}


// f32 max/min that propagate NaN from either operand (the kernel IR's
// semantics: ONNX Runtime's Max/Min/Relu/Clip, numpy.maximum). Neither
// llvm.maxnum/minnum (which return the non-NaN operand: Relu(NaN) was 0)
// nor x86's vmaxps/vminps (which return the second operand when either is
// NaN) propagates by itself, and LLVM 14 scalarizes llvm.maximum on
// vectors. `select(x > y, x, y)` is exactly vmaxps(x, y): NaN from y. So
// with a non-NaN constant operand one instruction suffices (the constant
// goes first, Relu is one vmaxps); otherwise a NaN in `a` is restored by
// one compare and blend. No fast-math flags anywhere here: nnan would let
// LLVM delete the NaN handling.
llvm::Value* IrArithmetic::FloatMaxMin(bool is_max, llvm::Value* a, llvm::Value* c) {
  auto beats = [&](llvm::Value* x, llvm::Value* y) { return is_max ? b_.CreateFCmpOGT(x, y) : b_.CreateFCmpOLT(x, y); };
  if (IsNonNanConstant(a)) return b_.CreateSelect(beats(a, c), a, c);
  if (IsNonNanConstant(c)) return b_.CreateSelect(beats(c, a), c, a);
  llvm::Value* picked = b_.CreateSelect(beats(a, c), a, c);  // NaN when c is NaN
  return b_.CreateSelect(b_.CreateFCmpUNO(a, a), a, picked);
}

llvm::Value* IrArithmetic::Compare(CompareOp op, llvm::Value* a, llvm::Value* c, ScalarType operand_type) {
  if (operand_type == ScalarType::kF32) {
    switch (op) {
      case CompareOp::kLt: return b_.CreateFCmpOLT(a, c);
      case CompareOp::kLe: return b_.CreateFCmpOLE(a, c);
      case CompareOp::kGt: return b_.CreateFCmpOGT(a, c);
      case CompareOp::kGe: return b_.CreateFCmpOGE(a, c);
      case CompareOp::kEq: return b_.CreateFCmpOEQ(a, c);
      case CompareOp::kNe: return b_.CreateFCmpUNE(a, c);
    }
  }
  switch (op) {
    case CompareOp::kLt: return b_.CreateICmpSLT(a, c);
    case CompareOp::kLe: return b_.CreateICmpSLE(a, c);
    case CompareOp::kGt: return b_.CreateICmpSGT(a, c);
    case CompareOp::kGe: return b_.CreateICmpSGE(a, c);
    case CompareOp::kEq: return b_.CreateICmpEQ(a, c);
    case CompareOp::kNe: return b_.CreateICmpNE(a, c);
  }
  return nullptr;
}

llvm::Value* IrArithmetic::Cast(llvm::Value* x, ScalarType from, ScalarType to, llvm::Type* dst) {
  if (from == to) return x;
  llvm::Value* zero = llvm::Constant::getNullValue(x->getType());
  if (to == ScalarType::kBool) {
    return from == ScalarType::kF32 ? b_.CreateFCmpUNE(x, zero) : b_.CreateICmpNE(x, zero);
  }
  if (from == ScalarType::kBool) return to == ScalarType::kF32 ? b_.CreateUIToFP(x, dst) : b_.CreateZExt(x, dst);
  if (from == ScalarType::kF32) return b_.CreateFPToSI(x, dst);
  if (to == ScalarType::kF32) return b_.CreateSIToFP(x, dst);
  return b_.CreateSExtOrTrunc(x, dst);
}

llvm::Value* IrArithmetic::Combine(ReduceOp op, ScalarType type, llvm::Value* acc, llvm::Value* x) {
  switch (op) {
    case ReduceOp::kSum: return Binary(BinaryOp::kAdd, acc, x, type);
    case ReduceOp::kProd: return Binary(BinaryOp::kMul, acc, x, type);
    case ReduceOp::kMax: break;
  }
  return Binary(BinaryOp::kMax, acc, x, type);
}

llvm::Value* IrArithmetic::Identity(ReduceOp op, ScalarType type, llvm::Type* t) {
  if (op == ReduceOp::kSum) return llvm::Constant::getNullValue(t);
  if (op == ReduceOp::kProd) {
    return type == ScalarType::kF32 ? llvm::ConstantFP::get(t, 1.0) : llvm::ConstantInt::get(t, 1);
  }
  if (type == ScalarType::kF32) return llvm::ConstantFP::getInfinity(t, /*Negative=*/true);
  int64_t lowest = type == ScalarType::kI64 ? std::numeric_limits<int64_t>::min()
                                            : std::numeric_limits<int32_t>::min();
  return llvm::ConstantInt::get(t, lowest, /*isSigned=*/true);
}

llvm::Value* IrArithmetic::HorizontalReduce(ReduceOp op, ScalarType type, llvm::Value* vec) {
  if (type == ScalarType::kF32) {
    // llvm.vector.reduce.fmax has maxnum semantics (drops NaN): halve the
    // vector with the NaN-propagating max instead.
    if (op == ReduceOp::kMax) return MaxReduceKeepingNan(vec);
    llvm::CallInst* sum = op == ReduceOp::kProd ? b_.CreateFMulReduce(llvm::ConstantFP::get(b_.getFloatTy(), 1.0), vec)
                                                : b_.CreateFAddReduce(llvm::ConstantFP::get(b_.getFloatTy(), 0.0), vec);
    llvm::FastMathFlags reassoc;
    reassoc.setAllowReassoc();
    sum->setFastMathFlags(reassoc);  // a tree, not a lane-by-lane chain
    return sum;
  }
  if (op == ReduceOp::kProd) return b_.CreateMulReduce(vec);
  return op == ReduceOp::kSum ? b_.CreateAddReduce(vec) : b_.CreateIntMaxReduce(vec, /*IsSigned=*/true);
}

llvm::Value* IrArithmetic::MaxReduceKeepingNan(llvm::Value* vec) {
  auto* type = llvm::dyn_cast<llvm::FixedVectorType>(vec->getType());
  if (type == nullptr) return vec;
  int width = static_cast<int>(type->getNumElements());
  for (; width > 1 && width % 2 == 0; width /= 2) {
    std::vector<int> low, high;
    for (int i = 0; i < width / 2; ++i) low.push_back(i), high.push_back(i + width / 2);
    vec = FloatMaxMin(/*is_max=*/true, b_.CreateShuffleVector(vec, low), b_.CreateShuffleVector(vec, high));
  }
  llvm::Value* result = b_.CreateExtractElement(vec, uint64_t{0});
  for (int i = 1; i < width; ++i) {  // the odd lanes of a width that is not a power of two
    result = FloatMaxMin(/*is_max=*/true, result, b_.CreateExtractElement(vec, static_cast<uint64_t>(i)));
  }
  return result;
}

}  // namespace shapeshift::codegen::cpu
