#include "passes/constant_folding.h"
#include "passes/dce.h"
#include "passes/op_classes.h"
#include "passes/shape_value_folding.h"
#include "tests/passes/pass_test_util.h"

namespace shapeshift::passes {
namespace {

using testing::ExpectOutputs;
using testing::PassTest;

using ConstantFoldingTest = PassTest;

TEST_F(ConstantFoldingTest, FoldsConstantSubgraphs) {
  Value* x = In("x", {batch, 4});
  Value* scale = Op("Sqrt", {Op("Identity", {Scalar(16)})});
  g.AddOutput(Op("Div", {x, scale}));
  std::vector<Tensor> in = {Random({3, 4}, 1)};
  absl::StatusOr<std::vector<Tensor>> before = Interpret(g, in);
  ASSERT_TRUE(before.ok());
  for (int round = 0; round < 2; ++round) ASSERT_TRUE(FoldConstants(g, 1 << 16).ok());
  ASSERT_TRUE(EliminateDeadCode(g).ok());
  EXPECT_EQ(g.num_nodes(), 1);
  Value* folded = g.outputs()[0]->producer()->input(1);
  ASSERT_TRUE(folded->is_constant());
  EXPECT_EQ(folded->constant()->GetAsDouble(0), 4.0);
  ExpectOutputs(g, in, *before);
}

TEST_F(ConstantFoldingTest, LeavesLargeResultsAndRuntimeInputsAlone) {
  Value* big = Op("Expand", {Scalar(1), Ints({64, 64})});
  Value* x = In("x", {64, 64});
  g.AddOutput(Op("Add", {x, Op("Exp", {big})}));
  absl::StatusOr<bool> changed = FoldConstants(g, /*max_folded_elements=*/1000);
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(*changed);
  EXPECT_EQ(g.num_nodes(), 3);
}

using ShapeValueFoldingTest = PassTest;

// The exporter idiom: Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), ..., [4], [16])).
TEST_F(ShapeValueFoldingTest, ReshapeTargetBecomesAConstantAndShapeChainDies) {
  Value* x = In("x", {batch, seq, 64});
  Value* shape = Op("Shape", {x});
  auto dim = [&](int64_t i) {
    Value* scalar = Op("Gather", {shape, g.AddConstant("", Tensor::ScalarI64(i))}, Attr("axis", int64_t{0}));
    return Op("Unsqueeze", {scalar, Ints({0})});
  };
  Value* b = dim(0);
  Value* s = dim(1);
  Value* target = Op("Concat", {b, s, Ints({4}), Ints({16})}, Attr("axis", int64_t{0}));
  g.AddOutput(Op("Neg", {Op("Reshape", {x, target})}));
  std::vector<Tensor> in = {Random({2, 3, 64}, 1)};
  absl::StatusOr<std::vector<Tensor>> before = Interpret(g, in);
  ASSERT_TRUE(before.ok()) << before.status();
  ASSERT_TRUE(FoldShapeValues(g, env).ok());
  ASSERT_TRUE(EliminateDeadCode(g).ok());
  EXPECT_EQ(Count("Shape"), 0);
  EXPECT_EQ(Count("Concat"), 0);
  const Node* reshape = g.outputs()[0]->producer()->input(0)->producer();
  ASSERT_TRUE(reshape->input(1)->is_constant());
  EXPECT_EQ(reshape->input(1)->constant()->values<int64_t>()[2], 4);
  EXPECT_TRUE(env.guards().empty());  // every dim equality was proven, none specialized
  ExpectOutputs(g, in, *before);
}

TEST_F(ShapeValueFoldingTest, ExpandTargetKeepsInputDimsAsOnes) {
  Value* x = In("x", {batch, 1, seq});
  Value* shape = Op("Shape", {x});
  Value* b = Op("Slice", {shape, Ints({0}), Ints({1})});
  Value* s = Op("Slice", {shape, Ints({2}), Ints({3})});
  Value* target = Op("Concat", {b, Ints({3}), s}, Attr("axis", int64_t{0}));
  g.AddOutput(Op("Neg", {Op("Expand", {x, target})}));
  std::vector<Tensor> in = {Random({2, 1, 5}, 2)};
  absl::StatusOr<std::vector<Tensor>> before = Interpret(g, in);
  ASSERT_TRUE(before.ok()) << before.status();
  ASSERT_TRUE(FoldShapeValues(g, env).ok());
  ASSERT_TRUE(EliminateDeadCode(g).ok());
  EXPECT_EQ(Count("Shape"), 0);
  const Node* expand = g.outputs()[0]->producer()->input(0)->producer();
  ASSERT_TRUE(expand->input(1)->is_constant());
  EXPECT_EQ(std::vector<int64_t>(expand->input(1)->constant()->values<int64_t>().begin(),
                                 expand->input(1)->constant()->values<int64_t>().end()),
            (std::vector<int64_t>{1, 3, 1}));
  ExpectOutputs(g, in, *before);
}

TEST_F(ShapeValueFoldingTest, SymbolicRangeLimitStaysACompileTimeShapeValue) {
  Value* ids = In("ids", {batch, seq}, DType::kI64);
  Value* len = Op("Gather", {Op("Shape", {ids}), g.AddConstant("", Tensor::ScalarI64(1))}, Attr("axis", int64_t{0}));
  Value* positions = Op("Range", {g.AddConstant("", Tensor::ScalarI64(0)), len, g.AddConstant("", Tensor::ScalarI64(1))});
  g.AddOutput(Op("Add", {ids, positions}));
  ASSERT_TRUE(FoldShapeValues(g, env).ok());
  ASSERT_TRUE(EliminateDeadCode(g).ok());
  absl::flat_hash_set<const Node*> compile_time = CompileTimeNodes(g);
  int shapes = 0;
  for (const Node* n : g.nodes()) {
    if (n->op_type() == "Shape" || n->op_type() == "Gather") {
      ++shapes;
      EXPECT_TRUE(compile_time.contains(n)) << n->name();
    }
    if (n->op_type() == "Range" || n->op_type() == "Add") EXPECT_FALSE(compile_time.contains(n));
  }
  EXPECT_EQ(shapes, 2);
}

}  // namespace
}  // namespace shapeshift::passes
