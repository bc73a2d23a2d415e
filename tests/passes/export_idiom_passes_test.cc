// The small exporter-idiom passes on hand-built graphs: cumsum-as-matmul,
// split-to-slices, uniform-gather and the runtime-scalar step of
// shape-value folding, each against the interpreter, and the inputs each
// must leave alone.
#include "passes/cumsum_as_matmul.h"
#include "passes/shape_value_folding.h"
#include "passes/split_to_slices.h"
#include "passes/uniform_gather.h"
#include "tests/passes/pass_test_util.h"

namespace shapeshift::passes {
namespace {

class ExportIdiomPassesTest : public testing::PassTest {
 protected:
  Attributes CastTo(DType t) { return Attr("to", static_cast<int64_t>(DTypeToOnnx(t))); }
  static Tensor Ids() { return Tensor::FromVector<int64_t>(DType::kI64, {2, 4}, {5, 1, 7, 1, 1, 9, 9, 2}); }
};

TEST_F(ExportIdiomPassesTest, CumSumOfAMaskBecomesAMatmul) {
  Value* ids = In("ids", {batch, seq}, DType::kI64);
  Value* mask = Op("Cast", {Op("Not", {Op("Equal", {ids, Ints({1})})})}, CastTo(DType::kI32));
  Value* count = Op("CumSum", {mask, Ints({1})});
  g.AddOutput(count);
  std::vector<Tensor> expected = Interpret(g, {Ids()}).value();
  ASSERT_TRUE(RewriteMaskCumSumAsMatmul(g, env).value());
  EXPECT_EQ(Count("CumSum"), 0);
  EXPECT_EQ(Count("MatMul"), 1);
  testing::ExpectOutputs(g, {Ids()}, expected, 0);
}

TEST_F(ExportIdiomPassesTest, CumSumOfArbitraryIntegersStays) {
  Value* ids = In("ids", {batch, seq}, DType::kI64);
  g.AddOutput(Op("CumSum", {ids, Ints({1})}));  // sums of ids need not be exact in f32
  EXPECT_FALSE(RewriteMaskCumSumAsMatmul(g, env).value());
  EXPECT_EQ(Count("CumSum"), 1);
}

TEST_F(ExportIdiomPassesTest, StaticSplitBecomesSlicesUnlessAnOutputIsVisible) {
  Value* x = In("x", {batch, SymExpr(6)});
  Node* split = g.AddNode("Split", {x, Ints({2, 4})}, 2, Attr("axis", int64_t{1}));
  ASSERT_TRUE(InferNode(*split, env, g.opset()).ok());
  g.AddOutput(Op("Relu", {split->output(0)}));
  g.AddOutput(Op("Neg", {split->output(1)}));
  Tensor input = Random({3, 6}, 1);
  std::vector<Tensor> expected = Interpret(g, {input}).value();
  ASSERT_TRUE(SplitToSlices(g, env).value());
  EXPECT_EQ(Count("Split"), 0);
  EXPECT_EQ(Count("Slice"), 2);
  testing::ExpectOutputs(g, {input}, expected, 0);

  Graph visible(17);
  Value* y = visible.AddInput("y", TensorType(DType::kF32, {batch, SymExpr(6)}));
  Node* s = visible.AddNode("Split", {y}, 2, Attr("axis", int64_t{1}));
  ASSERT_TRUE(InferNode(*s, env, visible.opset()).ok());
  visible.AddOutput(s->output(0));
  visible.AddOutput(s->output(1));
  EXPECT_FALSE(SplitToSlices(visible, env).value());
}

TEST_F(ExportIdiomPassesTest, GatherElementsFromAZeroBufferIsZeros) {
  Value* ids = In("ids", {batch, seq}, DType::kI64);
  Value* buffer = g.AddConstant("", Tensor::FromVector<int64_t>(DType::kI64, {1, 10}, std::vector<int64_t>(10, 0)));
  Value* expanded = Op("Expand", {buffer, Op("Concat", {Op("Gather", {Op("Shape", {ids}), Ints({0})}), Ints({10})},
                                            Attr("axis", int64_t{0}))});
  Value* positions = Op("Add", {Op("Mul", {ids, Ints({0})}), Ints({3})});
  g.AddOutput(Op("Neg", {Op("GatherElements", {expanded, positions}, Attr("axis", int64_t{1}))}));
  std::vector<Tensor> expected = Interpret(g, {Ids()}).value();
  ASSERT_TRUE(RewriteUniformGathers(g, env).value());
  EXPECT_EQ(Count("GatherElements"), 0);
  testing::ExpectOutputs(g, {Ids()}, expected, 0);
}

TEST_F(ExportIdiomPassesTest, GatherElementsFromVaryingDataStays) {
  Value* ids = In("ids", {batch, seq}, DType::kI64);
  Value* table = g.AddConstant("", Tensor::FromVector<int64_t>(DType::kI64, {1, 4}, {0, 1, 2, 3}));
  g.AddOutput(Op("Neg", {Op("GatherElements", {table, ids}, Attr("axis", int64_t{1}))}));
  EXPECT_FALSE(RewriteUniformGathers(g, env).value());
}

TEST_F(ExportIdiomPassesTest, ShapeValueReadAsDataBecomesARangeGenerator) {
  Value* x = In("x", {batch, seq});
  Value* offset = Op("Gather", {Op("Shape", {x}), g.AddConstant("", Tensor::ScalarI64(0))});  // batch
  Value* seq_len = Op("Gather", {Op("Shape", {x}), g.AddConstant("", Tensor::ScalarI64(1))});
  Value* range = Op("Range", {g.AddConstant("", Tensor::ScalarI64(0)), seq_len, g.AddConstant("", Tensor::ScalarI64(1))});
  g.AddOutput(Op("Add", {range, offset}));  // positions shifted by batch, as GPT-2 shifts by past
  Tensor input = Random({3, 5}, 2);
  std::vector<Tensor> expected = Interpret(g, {input}).value();
  ASSERT_TRUE(FoldShapeValues(g, env).value());
  const Node* add = g.outputs()[0]->producer();
  ASSERT_EQ(add->op_type(), "Add");
  EXPECT_EQ(add->input(1)->producer()->op_type(), "Reshape");
  EXPECT_EQ(add->input(1)->producer()->input(0)->producer()->op_type(), "Range");
  testing::ExpectOutputs(g, {input}, expected, 0);
}

}  // namespace
}  // namespace shapeshift::passes
