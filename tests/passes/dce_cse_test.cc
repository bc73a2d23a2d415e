#include "passes/cse.h"
#include "passes/dce.h"
#include "tests/passes/pass_test_util.h"

namespace shapeshift::passes {
namespace {

using testing::ExpectOutputs;
using testing::PassTest;

using DceTest = PassTest;

TEST_F(DceTest, RemovesUnreadChainsAndConstantsButKeepsOutputs) {
  Value* x = In("x", {batch});
  Value* dead = Op("Exp", {Op("Add", {x, Scalar(2)})});
  (void)dead;
  g.AddOutput(Op("Neg", {x}));
  ASSERT_EQ(g.num_nodes(), 3);
  absl::StatusOr<bool> changed = EliminateDeadCode(g);
  ASSERT_TRUE(changed.ok());
  EXPECT_TRUE(*changed);
  EXPECT_EQ(g.num_nodes(), 1);
  EXPECT_TRUE(g.constants().empty());
  EXPECT_TRUE(g.Verify().ok());
  EXPECT_FALSE(*EliminateDeadCode(g));  // a fixpoint
}

using CseTest = PassTest;

TEST_F(CseTest, MergesEqualNodesAndEqualConstants) {
  Value* x = In("x", {batch, 4});
  Value* a = Op("Add", {x, Scalar(3)});
  Value* b = Op("Add", {x, Scalar(3)});  // a different but equal constant
  Value* t1 = Op("Transpose", {a}, Attr("perm", std::vector<int64_t>{1, 0}));
  Value* t2 = Op("Transpose", {b}, Attr("perm", std::vector<int64_t>{1, 0}));
  g.AddOutput(Op("Sub", {t1, t2}));
  std::vector<Tensor> in = {Random({2, 4}, 1)};
  absl::StatusOr<std::vector<Tensor>> before = Interpret(g, in);
  ASSERT_TRUE(before.ok());
  // Round 1 merges the constants and the Adds; round 2 the Transposes.
  for (int round = 0; round < 2; ++round) ASSERT_TRUE(EliminateCommonSubexpressions(g).ok());
  ASSERT_TRUE(EliminateDeadCode(g).ok());
  EXPECT_EQ(Count("Add"), 1);
  EXPECT_EQ(Count("Transpose"), 1);
  EXPECT_EQ(g.constants().size(), 1u);
  ExpectOutputs(g, in, *before);
}

TEST_F(CseTest, ComparesTensorAttributesByContent) {
  Value* shape = Ints({2, 3});
  auto fill = [&](float v) {
    return Attr("value", Tensor::FromVector<float>(DType::kF32, {1}, std::vector<float>{v}));
  };
  Value* a = Op("ConstantOfShape", {shape}, fill(2));
  Value* b = Op("ConstantOfShape", {shape}, fill(2));
  Value* c = Op("ConstantOfShape", {shape}, fill(3));
  g.AddOutput(Op("Add", {Op("Add", {a, b}), c}));
  ASSERT_TRUE(EliminateCommonSubexpressions(g).ok());
  ASSERT_TRUE(EliminateDeadCode(g).ok());
  EXPECT_EQ(Count("ConstantOfShape"), 2);
}

TEST_F(CseTest, KeepsNodesThatDifferInAttributes) {
  Value* x = In("x", {4, 4});
  g.AddOutput(Op("Transpose", {x}, Attr("perm", std::vector<int64_t>{1, 0})));
  g.AddOutput(Op("Transpose", {x}, Attr("perm", std::vector<int64_t>{0, 1})));
  absl::StatusOr<bool> changed = EliminateCommonSubexpressions(g);
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(*changed);
}

}  // namespace
}  // namespace shapeshift::passes
