#include "passes/simplify.h"

#include "passes/dce.h"
#include "tests/passes/pass_test_util.h"

namespace shapeshift::passes {
namespace {

using testing::ExpectOutputs;
using testing::PassTest;

class SimplifyTest : public PassTest {
 protected:
  // Simplify + DCE; the graph must stay valid and compute `expected`.
  void RunAndCheck(const std::vector<Tensor>& inputs) {
    absl::StatusOr<std::vector<Tensor>> before = Interpret(g, inputs);
    ASSERT_TRUE(before.ok()) << before.status();
    ASSERT_TRUE(SimplifyAlgebra(g, env).ok());
    ASSERT_TRUE(EliminateDeadCode(g).ok());
    ASSERT_TRUE(g.Verify().ok()) << g.Verify();
    ExpectOutputs(g, inputs, *before);
  }
};

TEST_F(SimplifyTest, RemovesIdentityDropoutAndUnitArithmetic) {
  Value* x = In("x", {batch, 4});
  Value* v = Op("Identity", {x});
  v = Op("Dropout", {v});
  v = Op("Mul", {v, Scalar(1)});
  v = Op("Mul", {Scalar(1), v});
  v = Op("Add", {v, Floats({4}, {0, 0, 0, 0})});
  v = Op("Sub", {v, Scalar(0)});
  v = Op("Div", {v, Scalar(1)});
  Value* y = Op("Relu", {v});
  g.AddOutput(y);
  RunAndCheck({Random({3, 4}, 1)});
  EXPECT_EQ(g.num_nodes(), 1);
  EXPECT_EQ(y->producer()->input(0), x);
}

TEST_F(SimplifyTest, KeepsUnitAddThatBroadcastsToABiggerShape) {
  Value* x = In("x", {seq});
  Value* y = Op("Relu", {Op("Add", {x, Floats({3, 1}, {0, 0, 0})})});
  g.AddOutput(y);
  RunAndCheck({Random({5}, 2)});
  EXPECT_EQ(Count("Add"), 1);
}

TEST_F(SimplifyTest, RemovesNoOpReshapeExpandAndCast) {
  Value* x = In("x", {batch, 8});
  Value* v = Op("Reshape", {x, Ints({0, 8})});
  v = Op("Expand", {v, Ints({1, 8})});
  v = Op("Cast", {v}, Attr("to", int64_t{1}));
  g.AddOutput(Op("Neg", {v}));
  RunAndCheck({Random({2, 8}, 3)});
  EXPECT_EQ(g.num_nodes(), 1);
}

TEST_F(SimplifyTest, RemovesConcatOfOneInput) {
  Value* x = In("x", {batch, seq, 8});
  Value* y = Op("Neg", {Op("Concat", {x}, Attr("axis", int64_t{1}))});
  g.AddOutput(y);
  RunAndCheck({Random({2, 3, 8}, 6)});
  EXPECT_EQ(Count("Concat"), 0);
  EXPECT_EQ(y->producer()->input(0), x);
}

// Dynamo's Kᵀ: [batch, 4, 6, 16] → [batch*4, 6, 16], perm [0, 2, 1], →
// [batch, 4, 16, 6] is one Transpose of x, perm [0, 1, 3, 2].
TEST_F(SimplifyTest, UnmergesAReshapedTransposeOfLeadingDims) {
  Value* x = In("x", {batch, 4, 6, 16});
  Value* merged = Op("Reshape", {x, Ints({-1, 6, 16})});
  Value* t = Op("Transpose", {merged}, Attr("perm", std::vector<int64_t>{0, 2, 1}));
  Value* y = Op("Reshape", {t, Ints({-1, 4, 16, 6})});
  g.AddOutput(y);
  RunAndCheck({Random({3, 4, 6, 16}, 7)});
  EXPECT_EQ(Count("Reshape"), 0);
  ASSERT_EQ(Count("Transpose"), 1);
  const Node* transpose = g.outputs()[0]->producer();
  EXPECT_EQ(transpose->input(0), x);
  EXPECT_EQ(*transpose->attrs().GetInts("perm"), (std::vector<int64_t>{0, 1, 3, 2}));
}

// Near misses stay: a transpose that moves the merged dim, and a split that
// is not x's leading dims (4 first, then batch).
TEST_F(SimplifyTest, KeepsReshapedTransposesThatMoveOrReorderTheMergedDims) {
  Value* x = In("x", {batch, 4, 6, 16});
  Value* moved = Op("Transpose", {Op("Reshape", {x, Ints({-1, 6, 16})})}, Attr("perm", std::vector<int64_t>{1, 0, 2}));
  g.AddOutput(Op("Neg", {Op("Reshape", {moved, Ints({6, -1, 4, 16})})}));
  Value* kept = Op("Transpose", {Op("Reshape", {x, Ints({-1, 6, 16})})}, Attr("perm", std::vector<int64_t>{0, 2, 1}));
  g.AddOutput(Op("Neg", {Op("Reshape", {kept, Ints({4, -1, 16, 6})})}));
  RunAndCheck({Random({4, 4, 6, 16}, 8)});
  EXPECT_EQ(Count("Transpose"), 2);
  EXPECT_EQ(Count("Reshape"), 4);
}

TEST_F(SimplifyTest, MergesConsecutiveReshapes) {
  Value* x = In("x", {batch, 4, 6});
  Value* r1 = Op("Reshape", {x, Ints({0, 24})});
  Value* r2 = Op("Reshape", {r1, Ints({-1, 6, 4})});
  g.AddOutput(Op("Neg", {r2}));
  RunAndCheck({Random({3, 4, 6}, 4)});
  EXPECT_EQ(Count("Reshape"), 1);
}

TEST_F(SimplifyTest, ComposesTransposesAndDropsIdentityPermutation) {
  Value* x = In("x", {batch, seq, 4, 2});
  Value* t1 = Op("Transpose", {x}, Attr("perm", std::vector<int64_t>{0, 2, 1, 3}));
  Value* t2 = Op("Transpose", {t1}, Attr("perm", std::vector<int64_t>{0, 1, 3, 2}));
  Value* back = Op("Transpose", {Op("Transpose", {x}, Attr("perm", std::vector<int64_t>{1, 0, 2, 3}))},
                   Attr("perm", std::vector<int64_t>{1, 0, 2, 3}));
  g.AddOutput(Op("Neg", {t2}));
  g.AddOutput(Op("Neg", {back}));
  RunAndCheck({Random({2, 3, 4, 2}, 5)});
  EXPECT_EQ(Count("Transpose"), 1);
  EXPECT_EQ(*g.outputs()[0]->producer()->input(0)->producer()->attrs().GetInts("perm"),
            (std::vector<int64_t>{0, 2, 3, 1}));
  EXPECT_EQ(g.outputs()[1]->producer()->input(0), x);
}

TEST_F(SimplifyTest, NeverRenamesAGraphOutput) {
  Value* x = In("x", {4});
  Value* y = Op("Identity", {x});
  g.AddOutput(y);
  RunAndCheck({Random({4}, 6)});
  EXPECT_EQ(g.outputs()[0], y);
}

}  // namespace
}  // namespace shapeshift::passes
