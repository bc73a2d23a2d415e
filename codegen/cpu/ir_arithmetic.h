// The kernel IR's operations on LLVM values, scalar or <W x T> vectors: the
// one place their semantics (kernel_ir.h) meet LLVM — f32 max/min that
// propagate NaN, integer division that never traps, ordered compares (but
// !=), casts, and the reductions' identities and horizontal forms.
//
// Why apart from llvm_lowering.cc: the lowering decides where values come
// from (loads, lets, vector lanes, masked tails); what an operation *is*
// does not depend on any of that, and is what a reader checking NaN or
// division semantics wants to find alone. Internal to cpu/.
#ifndef SHAPESHIFT_CODEGEN_CPU_IR_ARITHMETIC_H_
#define SHAPESHIFT_CODEGEN_CPU_IR_ARITHMETIC_H_

#include "codegen/kernel_ir.h"
#include "llvm/IR/IRBuilder.h"

namespace shapeshift::codegen::cpu {

class IrArithmetic {
 public:
  explicit IrArithmetic(llvm::IRBuilder<>& b) : b_(b) {}

  // Null for an op no enumerator names (the caller reports it).
  llvm::Value* Unary(UnaryOp op, llvm::Value* x, ScalarType type);
  llvm::Value* Binary(BinaryOp op, llvm::Value* a, llvm::Value* c, ScalarType type);
  llvm::Value* Compare(CompareOp op, llvm::Value* a, llvm::Value* c, ScalarType operand_type);
  // `dst`: the LLVM type of `to` at x's width.
  llvm::Value* Cast(llvm::Value* x, ScalarType from, ScalarType to, llvm::Type* dst);

  // acc = reduce(acc, x); the reduction's identity as a constant of type `t`;
  // a vector's lanes reduced to one scalar.
  llvm::Value* Combine(ReduceOp op, ScalarType type, llvm::Value* acc, llvm::Value* x);
  llvm::Value* Identity(ReduceOp op, ScalarType type, llvm::Type* t);
  llvm::Value* HorizontalReduce(ReduceOp op, ScalarType type, llvm::Value* vec);

 private:
  llvm::Value* IntegerDivision(bool quotient, llvm::Value* a, llvm::Value* c);
  llvm::Value* FloatMaxMin(bool is_max, llvm::Value* a, llvm::Value* c);
  llvm::Value* MaxReduceKeepingNan(llvm::Value* vec);

  llvm::IRBuilder<>& b_;
};

}  // namespace shapeshift::codegen::cpu

#endif  // SHAPESHIFT_CODEGEN_CPU_IR_ARITHMETIC_H_
