// Mutator bases for the kernel IR: rewrite values and statements, keeping
// a value's sharing.
//
// Why a base: a value is a DAG (kernel_ir.h), and a rewrite that recurses
// as over a tree turns a chain of k reuses into 2^k nodes (and time). The
// base rewrites each distinct node once per value, bottom up, and hands
// every reader the same rewritten node, so the result is a DAG of at most
// the input's size; a node none of whose parts changed is kept as is (no
// allocation, pointer-equal), so an identity rewrite is free.
//
// A mutator overrides only the Visit* of the kinds it rewrites (unlike the
// visitors of kernel_visitor.h, keeping a node is a right default for any
// kind, a new one included). Every Visit* receives the node with its
// operands already rewritten — `self` is that node as a Value — and returns
// it or its replacement. Index expressions (loads, index values, store
// indices and loop bounds) go through MutateIndex. Rewrites are memoized
// per Mutate() call, i.e. per value: a node that two statements share is
// rewritten once for each, so a rewrite may depend on the statement (its
// scope) but not on where inside one value a node sits.
#ifndef SHAPESHIFT_CODEGEN_KERNEL_MUTATOR_H_
#define SHAPESHIFT_CODEGEN_KERNEL_MUTATOR_H_

#include <vector>

#include "codegen/kernel_ir.h"
#include "codegen/kernel_visitor.h"

namespace shapeshift::codegen {

class ValueMutator : public ValueVisitor<Value, const Value&> {
 public:
  // `root` rewritten (null stays null).
  Value Mutate(const Value& root);

 protected:
  // Default: unchanged.
  virtual SymExpr MutateIndex(const SymExpr& index) { return index; }

  // Defaults: `self` (a load or index value with MutateIndex applied).
  Value VisitConst(const ValueNode& v, const Value& self) override { return self; }
  Value VisitLoad(const ValueNode& v, const Value& self) override { return WithIndex(self); }
  Value VisitLoadAt(const ValueNode& v, const Value& self) override { return self; }
  Value VisitIndex(const ValueNode& v, const Value& self) override { return WithIndex(self); }
  Value VisitVar(const ValueNode& v, const Value& self) override { return self; }
  Value VisitUnary(const ValueNode& v, UnaryOp op, const Value& self) override { return self; }
  Value VisitBinary(const ValueNode& v, BinaryOp op, const Value& self) override { return self; }
  Value VisitCompare(const ValueNode& v, CompareOp op, const Value& self) override { return self; }
  Value VisitSelect(const ValueNode& v, const Value& self) override { return self; }
  Value VisitCast(const ValueNode& v, const Value& self) override { return self; }

 private:
  Value WithIndex(const Value& self);
};

// Rewrites statement lists: each statement's loop bounds and store index
// through MutateIndex, its value and `at` through Mutate, its body
// recursively; then its kind's Visit* sees the original and the rebuilt
// statement and returns the statement that takes its place.
class StmtMutator : public ValueMutator, protected StmtVisitor<Stmt, Stmt&&> {
 public:
  std::vector<Stmt> MutateBlock(const std::vector<Stmt>& body);
  Stmt MutateStmt(const Stmt& s);
  // The kernel with its body rewritten (and its parallel extent through
  // MutateIndex); names, buffers and dims are kept.
  Kernel MutateKernel(const Kernel& kernel);

 protected:
  using ValueMutator::Visit;
  using StmtVisitor<Stmt, Stmt&&>::Visit;
  using ValueMutator::VisitInvalid;
  using StmtVisitor<Stmt, Stmt&&>::VisitInvalid;

  // Defaults: the rebuilt statement.
  Stmt VisitLoop(const Stmt& original, Stmt&& s) override { return std::move(s); }
  Stmt VisitStore(const Stmt& original, Stmt&& s) override { return std::move(s); }
  Stmt VisitStoreAt(const Stmt& original, Stmt&& s) override { return std::move(s); }
  Stmt VisitLet(const Stmt& original, Stmt&& s) override { return std::move(s); }
  Stmt VisitAccumulator(const Stmt& original, Stmt&& s) override { return std::move(s); }
  Stmt VisitAccumulate(const Stmt& original, Stmt&& s) override { return std::move(s); }
};

}  // namespace shapeshift::codegen

#endif  // SHAPESHIFT_CODEGEN_KERNEL_MUTATOR_H_
