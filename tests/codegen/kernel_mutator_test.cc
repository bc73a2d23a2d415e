#include "codegen/kernel_mutator.h"

#include <string>
#include <vector>

#include "codegen/kernel_library.h"
#include "codegen/kernel_print.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/codegen/test_util.h"

namespace shapeshift::codegen {
namespace {

using ::testing::HasSubstr;

// Sub -> Add everywhere; counts the nodes it is asked about.
class SubToAdd final : public ValueMutator {
 public:
  int visits = 0;

 private:
  Value VisitLoad(const ValueNode& v, const Value& self) override { return ++visits, ValueMutator::VisitLoad(v, self); }
  Value VisitBinary(const ValueNode& v, BinaryOp op, const Value& self) override {
    ++visits;
    return op == BinaryOp::kSub ? v.operands[0] + v.operands[1] : self;
  }
};

// The 60-step chain of KernelIrTest (2^60 nodes as a tree) rewritten in
// one visit per distinct node, into a DAG of the same size whose nodes
// are still shared by their readers.
TEST(KernelMutatorTest, ASharedChainIsRewrittenLinearly) {
  Kernel k = testing::SharedChainKernel(60);
  const Value& before = k.body[0].value;
  SubToAdd mutator;
  Value after = mutator.Mutate(before);
  EXPECT_EQ(mutator.visits, 121);
  std::vector<const Value*> nodes = PostOrder(after);
  EXPECT_EQ(nodes.size(), 121u);
  // Every level: (v*v) + v with the three reads one node.
  const Value* v = &after;
  for (int level = 0; level < 60; ++level) {
    ASSERT_EQ((*v)->kind, ValueKind::kBinary);
    ASSERT_EQ(static_cast<BinaryOp>((*v)->op), BinaryOp::kAdd);
    const Value& product = (*v)->operands[0];
    ASSERT_EQ(product->operands[0], product->operands[1]);
    ASSERT_EQ(product->operands[0], (*v)->operands[1]);
    v = &(*v)->operands[1];
  }
  EXPECT_EQ((*v)->kind, ValueKind::kLoad);
  Kernel rewritten = k;
  rewritten.body[0].value = after;
  EXPECT_TRUE(Verify(rewritten).ok());
  EXPECT_THAT(Print(rewritten), HasSubstr("y[p] = (($58 * $58) + $58) where $0 = ((x[p] * x[p]) + x[p]); "));
}

TEST(KernelMutatorTest, AnIdentityRewriteKeepsEveryNode) {
  Kernel k = LayerNormKernel(1e-5f);
  StmtMutator identity;
  Kernel same = identity.MutateKernel(k);
  EXPECT_EQ(Print(same), Print(k));
  EXPECT_TRUE(StructurallyEqual(same, k));
  ASSERT_EQ(same.body.size(), k.body.size());
  for (size_t i = 0; i < k.body.size(); ++i) EXPECT_EQ(same.body[i].value, k.body[i].value);  // pointer-equal
}

// Rewrites index expressions (loop bounds, load and store indices) and
// drops a Let's name to a new one: a statement hook and MutateIndex.
class ShiftRows final : public StmtMutator {
  SymExpr MutateIndex(const SymExpr& e) override {
    return e.Substitute({{"p", SymExpr::Symbol("p") + 1}});
  }
  Stmt VisitLet(const Stmt& original, Stmt&& s) override {
    s.name = original.name + "_shifted";
    return std::move(s);
  }
  Value VisitVar(const ValueNode& v, const Value& self) override {
    return v.name == "e" ? Var("e_shifted", v.type) : self;
  }
};

TEST(KernelMutatorTest, StatementsIndicesAndNamesAreRewritten) {
  Kernel k;
  k.name = "shift";
  BufferRef x = k.AddInput("x");
  BufferRef y = k.AddOutput("y");
  SymExpr n = k.AddDim("n");
  k.parallel_extent = n;
  SymExpr p = k.ParallelVar();
  SymExpr j = SymExpr::Symbol("j");
  k.body = {Loop("j", 0, n, {Let("e", Exp(Load(x, p * n + j))), Store(y, p * n + j, Var("e", ScalarType::kF32))})};
  Kernel shifted = ShiftRows().MutateKernel(k);
  EXPECT_EQ(Print(shifted),
            "kernel shift(in x: f32, out y: f32) dims(n)\n"
            "parallel p in [0, n):\n"
            "  for j in [0, n):\n"
            "    let e_shifted = exp(x[n*p + j + n])\n"
            "    y[n*p + j + n] = e_shifted\n");
  EXPECT_TRUE(Verify(shifted).ok()) << Verify(shifted);
}

}  // namespace
}  // namespace shapeshift::codegen
