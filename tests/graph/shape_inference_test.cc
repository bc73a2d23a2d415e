// Symbolic shape rules: broadcasting, MatMul/Gemm contraction, Reshape with
// -1, Slice clamping, and the guards/errors when a fact is not provable.
#include "graph/shape_inference.h"

#include <limits>

#include "gmock/gmock.h"
#include "graph/op_table.h"
#include "gtest/gtest.h"
#include "tests/graph/shape_test_util.h"

namespace shapeshift {
namespace {

using ::testing::HasSubstr;
using testing::ShapeRuleTest;

using BroadcastShapeTest = ShapeRuleTest;

TEST_F(BroadcastShapeTest, TrailingAndUnitDims) {
  Node* n = Add("Add", {In({batch, seq, 64}), In({64})});
  ASSERT_TRUE(last_status.ok()) << last_status;
  EXPECT_EQ(TypeOf(n), "f32[batch, seq, 64]");
  n = Add("Add", {In({batch, 1, 1, seq}), In({batch, 4, seq, seq})});
  ASSERT_TRUE(last_status.ok()) << last_status;
  EXPECT_EQ(TypeOf(n), "f32[batch, 4, seq, seq]");
}

TEST_F(BroadcastShapeTest, UndecidableDimsAreAnErrorNamingTheNode) {
  Add("Mul", {In({seq}), In({batch})});
  EXPECT_FALSE(last_status.ok());
  EXPECT_THAT(last_status.message(), HasSubstr("node 'n0' (Mul)"));
  EXPECT_THAT(last_status.message(), HasSubstr("seq"));
  EXPECT_THAT(last_status.message(), HasSubstr("batch"));
}

TEST_F(BroadcastShapeTest, DifferentConstantsAreAnError) {
  Add("Add", {In({3}), In({4})});
  EXPECT_THAT(last_status.message(), HasSubstr("differ"));
}

TEST_F(BroadcastShapeTest, SpecializedSymbolRecordsTheQuestionAsAGuard) {
  ASSERT_TRUE(env.SetPolicy("seq", SymbolPolicy::kStatic).ok());
  ASSERT_TRUE(env.SetPolicy("batch", SymbolPolicy::kStatic).ok());
  ASSERT_TRUE(env.SetHint("seq", 8).ok());
  ASSERT_TRUE(env.SetHint("batch", 8).ok());
  Node* n = Add("Add", {In({seq}), In({batch})});
  ASSERT_TRUE(last_status.ok()) << last_status;
  EXPECT_EQ(n->output(0)->type().rank(), 1);
  ASSERT_EQ(env.guards().size(), 1u);
  EXPECT_EQ(env.guards()[0].provenance.pass, "shape-inference");
  EXPECT_EQ(env.guards()[0].provenance.node, "n0");
}

TEST_F(BroadcastShapeTest, MixedDtypesAreAnError) {
  Add("Add", {In({4}), In({4}, DType::kI64)});
  EXPECT_THAT(last_status.message(), HasSubstr("dtypes differ"));
}

TEST_F(BroadcastShapeTest, ComparisonsAndLogicGiveBool) {
  EXPECT_EQ(TypeOf(Add("Less", {In({batch, seq}), In({1})})), "bool[batch, seq]");
  EXPECT_EQ(TypeOf(Add("And", {In({seq}, DType::kBool), In({seq}, DType::kBool)})), "bool[seq]");
  EXPECT_EQ(TypeOf(Add("Where", {In({seq}, DType::kBool), In({batch, 1}), In({})})), "f32[batch, seq]");
  EXPECT_EQ(TypeOf(Add("Max", {In({seq}), In({batch, 1}), In({1})})), "f32[batch, seq]");
}

using MatMulShapeTest = ShapeRuleTest;

TEST_F(MatMulShapeTest, BatchedAndProjection) {
  EXPECT_EQ(TypeOf(Add("MatMul", {In({batch, seq, 64}), In({64, 256})})), "f32[batch, seq, 256]");
  EXPECT_EQ(TypeOf(Add("MatMul", {In({batch, 4, seq, 16}), In({batch, 4, 16, seq})})), "f32[batch, 4, seq, seq]");
  EXPECT_EQ(TypeOf(Add("MatMul", {In({seq}), In({seq, 8})})), "f32[8]");
  EXPECT_EQ(TypeOf(Add("MatMul", {In({batch, seq}), In({seq})})), "f32[batch]");
}

TEST_F(MatMulShapeTest, ContractionMismatchNamesBothDims) {
  Add("MatMul", {In({batch, 64}), In({32, 8})});
  EXPECT_THAT(last_status.message(), HasSubstr("contraction"));
  EXPECT_THAT(last_status.message(), HasSubstr("64"));
  Add("MatMul", {In({batch, seq}), In({batch, 8})});
  EXPECT_THAT(last_status.message(), HasSubstr("cannot prove"));
}

TEST_F(MatMulShapeTest, GemmTransposesAndBias) {
  Attributes a;
  a.Set("transB", int64_t{1});
  EXPECT_EQ(TypeOf(Add("Gemm", {In({batch, 64}), In({128, 64}), In({128})}, a)), "f32[batch, 128]");
  Add("Gemm", {In({batch, 64}), In({128, 64}), In({7})}, a);
  EXPECT_FALSE(last_status.ok());
}

using ReshapeShapeTest = ShapeRuleTest;

TEST_F(ReshapeShapeTest, ZeroCopiesAndMinusOneDividesExactly) {
  Node* n = Add("Reshape", {In({batch, seq, 64}), Ints({0, 0, 4, -1})});
  ASSERT_TRUE(last_status.ok()) << last_status;
  EXPECT_EQ(TypeOf(n), "f32[batch, seq, 4, 16]");
  n = Add("Reshape", {In({batch, seq, 64}), Ints({-1, 64})});
  ASSERT_TRUE(last_status.ok()) << last_status;
  EXPECT_EQ(n->output(0)->type().shape[0], batch * seq);
  n = Add("Reshape", {In({batch, 96}), Ints({-1, 48})});
  EXPECT_EQ(n->output(0)->type().shape[0], 2 * batch);
  EXPECT_TRUE(env.guards().empty());
}

TEST_F(ReshapeShapeTest, UndecidableDivisibilityIsAnError) {
  Add("Reshape", {In({seq}), Ints({-1, 2})});
  EXPECT_THAT(last_status.message(), HasSubstr("node 'n0' (Reshape)"));
  EXPECT_THAT(last_status.message(), HasSubstr("cannot decide"));
}

TEST_F(ReshapeShapeTest, SpecializedDivisibilityBecomesAGuardAndAFloorDiv) {
  ASSERT_TRUE(env.SetPolicy("seq", SymbolPolicy::kBucketed).ok());
  ASSERT_TRUE(env.SetHint("seq", 8).ok());
  Node* n = Add("Reshape", {In({seq}), Ints({-1, 2})});
  ASSERT_TRUE(last_status.ok()) << last_status;
  EXPECT_EQ(n->output(0)->type().shape[0], FloorDiv(seq, 2));
  ASSERT_EQ(env.guards().size(), 1u);
  EXPECT_EQ(env.guards()[0].provenance.node, "n0");
}

TEST_F(ReshapeShapeTest, ElementCountMismatchIsAnError) {
  Add("Reshape", {In({batch, 6}), Ints({0, 4})});
  EXPECT_FALSE(last_status.ok());
  Add("Reshape", {In({6}), Ints({-1, -1})});
  EXPECT_THAT(last_status.message(), HasSubstr("more than one -1"));
}

TEST_F(ReshapeShapeTest, FlattenSqueezeUnsqueezeTranspose) {
  EXPECT_EQ(TypeOf(Add("Flatten", {In({batch, seq, 4})}, Attr("axis", int64_t{2}))), "f32[batch*seq, 4]");
  EXPECT_EQ(TypeOf(Add("Unsqueeze", {In({batch, seq}), Ints({1, -1})})), "f32[batch, 1, seq, 1]");
  EXPECT_EQ(TypeOf(Add("Unsqueeze", {In({seq})}, Attr("axes", std::vector<int64_t>{0}), 1, 11)), "f32[1, seq]");
  EXPECT_EQ(TypeOf(Add("Squeeze", {In({batch, 1, seq}), Ints({1})})), "f32[batch, seq]");
  EXPECT_EQ(TypeOf(Add("Squeeze", {In({1, seq, 1})}, Attr("axes", std::vector<int64_t>{0, 2}), 1, 11)), "f32[seq]");
  Add("Squeeze", {In({batch, seq}), Ints({1})});
  EXPECT_FALSE(last_status.ok());
  EXPECT_EQ(TypeOf(Add("Transpose", {In({batch, seq, 4})}, Attr("perm", std::vector<int64_t>{0, 2, 1}))),
            "f32[batch, 4, seq]");
  EXPECT_EQ(TypeOf(Add("Transpose", {In({batch, seq})})), "f32[seq, batch]");
}

TEST_F(ReshapeShapeTest, ExpandTileConcatSplit) {
  EXPECT_EQ(TypeOf(Add("Expand", {In({1, seq}), Ints({3, 1})})), "f32[3, seq]");
  EXPECT_EQ(TypeOf(Add("Tile", {In({batch, 4}), Ints({2, 3})})), "f32[2*batch, 12]");
  Node* cat = Add("Concat", {In({batch, seq, 64}), In({batch, seq, 32})}, Attr("axis", int64_t{-1}));
  EXPECT_EQ(TypeOf(cat), "f32[batch, seq, 96]");
  Add("Concat", {In({batch, seq}), In({batch, 3})}, Attr("axis", int64_t{0}));
  EXPECT_FALSE(last_status.ok());
  Node* split = Add("Split", {In({batch, 96}), Ints({32, 64})}, Attr("axis", int64_t{1}), 2);
  ASSERT_TRUE(last_status.ok()) << last_status;
  EXPECT_EQ(TypeOf(split, 0), "f32[batch, 32]");
  EXPECT_EQ(TypeOf(split, 1), "f32[batch, 64]");
  split = Add("Split", {In({batch, 96})}, Attr("split", std::vector<int64_t>{90, 6}), 2, 11);
  Attributes axis1 = Attr("axis", int64_t{1});
  split = Add("Split", {In({batch, 96})}, axis1, 3);
  EXPECT_EQ(TypeOf(split, 2), "f32[batch, 32]");
  Add("Split", {In({seq})}, {}, 2);
  EXPECT_THAT(last_status.message(), HasSubstr("cannot decide"));
}

using SliceShapeTest = ShapeRuleTest;

TEST_F(SliceShapeTest, ToTheEndCollapsesToTheDim) {
  int64_t big = std::numeric_limits<int64_t>::max();
  Node* n = Add("Slice", {In({batch, seq, 64}), Ints({0}), Ints({big}), Ints({1})});
  ASSERT_TRUE(last_status.ok()) << last_status;
  EXPECT_EQ(TypeOf(n), "f32[batch, seq, 64]");
}

TEST_F(SliceShapeTest, NegativeBoundsClampSymbolically) {
  Node* n = Add("Slice", {In({seq}), Ints({1}), Ints({-1})});
  ASSERT_TRUE(last_status.ok()) << last_status;
  SymExpr d = n->output(0)->type().shape[0];
  EXPECT_EQ(Eval(d, 1, 10), 8);
  EXPECT_EQ(Eval(d, 1, 2), 0);
  EXPECT_EQ(Eval(d, 1, 1), 0);
  // A fixed window: min(seq, 128) elements from the start.
  n = Add("Slice", {In({seq}), Ints({0}), Ints({128})});
  d = n->output(0)->type().shape[0];
  EXPECT_EQ(Eval(d, 1, 5), 5);
  EXPECT_EQ(Eval(d, 1, 500), 128);
}

TEST_F(SliceShapeTest, NegativeStepReversesWholeDim) {
  int64_t low = std::numeric_limits<int64_t>::min();
  Node* n = Add("Slice", {In({seq, 4}), Ints({-1}), Ints({low}), Ints({0}), Ints({-1})});
  ASSERT_TRUE(last_status.ok()) << last_status;
  EXPECT_EQ(TypeOf(n), "f32[seq, 4]");
  n = Add("Slice", {In({10}), Ints({8}), Ints({1}), Ints({0}), Ints({-3})});
  EXPECT_EQ(TypeOf(n), "f32[3]");
}

TEST_F(SliceShapeTest, AttributesBeforeOpset10) {
  Attributes a;
  a.Set("starts", std::vector<int64_t>{2});
  a.Set("ends", std::vector<int64_t>{5});
  a.Set("axes", std::vector<int64_t>{1});
  Node* n = Add("Slice", {In({batch, 8})}, a, 1, 9);
  ASSERT_TRUE(last_status.ok()) << last_status;
  EXPECT_EQ(TypeOf(n), "f32[batch, 3]");
}

TEST_F(SliceShapeTest, DataDependentBoundsGiveFreshDims) {
  Node* n = Add("Slice", {In({seq}), In({1}, DType::kI64), In({1}, DType::kI64)});
  ASSERT_TRUE(last_status.ok()) << last_status;
  EXPECT_TRUE(n->output(0)->type().shape[0].IsSymbol());
  EXPECT_NE(n->output(0)->type().shape[0], seq);
}

TEST(OpRegistryTest, EveryRequiredOpHasAShapeRule) {
  for (const char* op :
       {"Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Reciprocal", "Neg", "Abs", "Exp", "Log", "Tanh", "Erf",
        "Sigmoid", "Relu", "Softmax", "LayerNormalization", "ReduceMean", "ReduceSum", "ReduceMax", "MatMul",
        "Gemm", "Transpose", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Concat", "Split", "Slice", "Gather",
        "Shape", "Size", "Cast", "Constant", "ConstantOfShape", "Expand", "Where", "Equal", "Less", "Greater",
        "Not", "And", "Or", "Range", "Trilu", "Identity", "Min", "Max", "Clip", "CumSum", "Floor", "Ceil",
        "Round", "Sign", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh",
        "Softplus", "Softsign", "Elu", "Selu", "LeakyRelu", "HardSigmoid", "HardSwish", "Celu", "Mish", "IsNaN",
        "IsInf", "Mod", "GreaterOrEqual", "LessOrEqual", "Xor", "PRelu", "ReduceMin", "ReduceProd", "ReduceL1",
        "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare", "ArgMax", "ArgMin", "LogSoftmax",
        "Tile", "Sum", "Mean", "GatherElements", "Dropout"}) {
    EXPECT_NE(FindOp(op), nullptr) << op;
  }
  EXPECT_EQ(FindOp("If"), nullptr);
  EXPECT_EQ(FindOp("NonZero"), nullptr);
}

TEST_F(ShapeRuleTest, UnsupportedOpAndArityAreErrors) {
  Add("Loop", {In({1})});
  EXPECT_THAT(last_status.message(), HasSubstr("unsupported op"));
  Add("MatMul", {In({4, 4})});
  EXPECT_THAT(last_status.message(), HasSubstr("inputs"));
}

}  // namespace
}  // namespace shapeshift
