// matmul-operand-scale: scalar Muls on both MatMul operands (TorchScript's
// attention scaling) move to the output as one scale; a scale that another
// node also reads stays.
#include "passes/matmul_operand_scale.h"

#include "tests/passes/pass_test_util.h"

namespace shapeshift::passes {
namespace {

class MatmulOperandScaleTest : public testing::PassTest {};

TEST_F(MatmulOperandScaleTest, BothOperandScalesBecomeOneOutputScale) {
  Value* q = In("q", {batch, SymExpr(4), seq, SymExpr(8)});
  Value* k = In("k", {batch, SymExpr(4), SymExpr(8), seq});
  Value* scores = Op("MatMul", {Op("Mul", {q, Scalar(0.5f)}), Op("Mul", {Scalar(0.25f), k})});
  g.AddOutput(scores);
  const std::string name = scores->name();  // `scores` itself is replaced
  std::vector<Tensor> inputs = {Random({2, 4, 3, 8}, 1), Random({2, 4, 8, 3}, 2)};
  std::vector<Tensor> expected = Interpret(g, inputs).value();
  ASSERT_TRUE(HoistMatmulOperandScales(g, env).value());
  const Node* out = g.outputs()[0]->producer();
  ASSERT_EQ(out->op_type(), "Mul");
  EXPECT_EQ(out->input(0)->producer()->op_type(), "MatMul");
  EXPECT_EQ(Count("Mul"), 1);
  EXPECT_FLOAT_EQ(out->input(1)->constant()->GetAsDouble(0), 0.125);
  EXPECT_EQ(g.outputs()[0]->name(), name);
  testing::ExpectOutputs(g, inputs, expected, 1e-5);
}

TEST_F(MatmulOperandScaleTest, SharedScaledOperandStays) {
  Value* q = In("q", {batch, seq, SymExpr(8)});
  Value* w = Floats({8, 8}, std::vector<float>(64, 0.5f));
  Value* scaled = Op("Mul", {q, Scalar(2.0f)});
  g.AddOutput(Op("MatMul", {scaled, w}));
  g.AddOutput(Op("Relu", {scaled}));  // the scaled value is needed as such
  EXPECT_FALSE(HoistMatmulOperandScales(g, env).value());
  EXPECT_EQ(Count("Mul"), 1);
}

}  // namespace
}  // namespace shapeshift::passes
