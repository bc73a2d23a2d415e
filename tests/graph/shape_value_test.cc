// Shape-value propagation: integer tensors computed from Shape carry their
// elements as SymExprs through the shape-computation ops, so Reshape targets
// and Slice bounds stay symbolic; the remaining rules (reductions,
// normalizations, creation ops) are checked here too.
#include "gmock/gmock.h"
#include "graph/shape_inference.h"
#include "gtest/gtest.h"
#include "tests/graph/shape_test_util.h"

namespace shapeshift {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::ShapeRuleTest;

using ShapeValueTest = ShapeRuleTest;

std::vector<SymExpr> ElementsOf(Node* n, int i = 0) {
  const auto& e = n->output(i)->elements();
  return e ? *e : std::vector<SymExpr>{};
}

TEST_F(ShapeValueTest, ShapeGatherUnsqueezeConcatReshapeStaysSymbolic) {
  Value* x = In({batch, seq, 768});
  Node* shape = Add("Shape", {x});
  EXPECT_EQ(TypeOf(shape), "i64[3]");
  EXPECT_THAT(ElementsOf(shape), ElementsAre(batch, seq, SymExpr(768)));
  Node* b = Add("Gather", {shape->output(0), Ints({0}, true)});
  Node* s = Add("Gather", {shape->output(0), Ints({1}, true)});
  EXPECT_EQ(TypeOf(b), "i64[]");
  EXPECT_THAT(ElementsOf(s), ElementsAre(seq));
  Node* b1 = Add("Unsqueeze", {b->output(0), Ints({0})});
  Node* s1 = Add("Unsqueeze", {s->output(0), Ints({0})});
  Node* target = Add("Concat", {b1->output(0), s1->output(0), Ints({12}), Ints({64})}, Attr("axis", int64_t{0}));
  EXPECT_THAT(ElementsOf(target), ElementsAre(batch, seq, SymExpr(12), SymExpr(64)));
  Node* r = Add("Reshape", {x, target->output(0)});
  ASSERT_TRUE(last_status.ok()) << last_status;
  EXPECT_EQ(TypeOf(r), "f32[batch, seq, 12, 64]");
}

TEST_F(ShapeValueTest, ShapeStartEndAndSize) {
  Attributes a;
  a.Set("start", int64_t{-2});
  Node* tail = Add("Shape", {In({batch, seq, 64})}, a);
  EXPECT_THAT(ElementsOf(tail), ElementsAre(seq, SymExpr(64)));
  Node* size = Add("Size", {In({batch, seq, 64})});
  EXPECT_EQ(TypeOf(size), "i64[]");
  EXPECT_THAT(ElementsOf(size), ElementsAre(64 * batch * seq));
}

TEST_F(ShapeValueTest, ArithmeticFoldsOnlyWhenExact) {
  Node* shape = Add("Shape", {In({batch, seq})});
  Node* s = Add("Gather", {shape->output(0), Ints({1}, true)});
  Node* doubled = Add("Mul", {s->output(0), Ints({2}, true)});
  EXPECT_THAT(ElementsOf(doubled), ElementsAre(2 * seq));
  // seq is non-negative and 4 > 0: truncating Div equals floor division.
  Node* quarter = Add("Div", {s->output(0), Ints({4}, true)});
  EXPECT_THAT(ElementsOf(quarter), ElementsAre(FloorDiv(seq, 4)));
  // seq - 600 may be negative: truncation and floor disagree, so no value.
  Node* shifted = Add("Sub", {s->output(0), Ints({600}, true)});
  Node* unsure = Add("Div", {shifted->output(0), Ints({4}, true)});
  EXPECT_FALSE(unsure->output(0)->elements().has_value());
  // Constants fold with ONNX's truncation.
  Node* c = Add("Div", {Ints({-7}, true), Ints({2}, true)});
  EXPECT_THAT(ElementsOf(c), ElementsAre(SymExpr(-3)));
  Node* m = Add("Mod", {Ints({-7}, true), Ints({2}, true)});
  EXPECT_THAT(ElementsOf(m), ElementsAre(SymExpr(1)));
}

TEST_F(ShapeValueTest, CastEqualWhereCarryValues) {
  Node* shape = Add("Shape", {In({batch, seq})});
  Attributes to_i32;
  to_i32.Set("to", int64_t{6});  // INT32
  Node* cast = Add("Cast", {shape->output(0)}, to_i32);
  EXPECT_EQ(TypeOf(cast), "i32[2]");
  EXPECT_THAT(ElementsOf(cast), ElementsAre(batch, seq));
  Node* eq = Add("Equal", {shape->output(0), Ints({-1, -1})});
  EXPECT_EQ(TypeOf(eq), "bool[2]");
  EXPECT_THAT(ElementsOf(eq), ElementsAre(SymExpr(0), SymExpr(0)));
  Node* where = Add("Where", {eq->output(0), Ints({1, 1}), shape->output(0)});
  EXPECT_THAT(ElementsOf(where), ElementsAre(batch, seq));
}

TEST_F(ShapeValueTest, RangeConstantOfShapeExpandSlice) {
  Node* shape = Add("Shape", {In({batch, seq})});
  Node* s = Add("Gather", {shape->output(0), Ints({1}, true)});
  Node* range = Add("Range", {Ints({0}, true), s->output(0), Ints({1}, true)});
  ASSERT_TRUE(last_status.ok()) << last_status;
  EXPECT_EQ(TypeOf(range), "i64[seq]");
  Node* small = Add("Range", {Ints({0}, true), Ints({6}, true), Ints({2}, true)});
  EXPECT_THAT(ElementsOf(small), ElementsAre(SymExpr(0), SymExpr(2), SymExpr(4)));
  Node* ones = Add("ConstantOfShape", {shape->output(0)});
  EXPECT_EQ(TypeOf(ones), "f32[batch, seq]");
  Node* expanded = Add("Expand", {In({1, seq}), shape->output(0)});
  EXPECT_EQ(TypeOf(expanded), "f32[batch, seq]");
  Node* tail = Add("Slice", {shape->output(0), Ints({1}), Ints({2})});
  EXPECT_THAT(ElementsOf(tail), ElementsAre(seq));
  Node* count = Add("ReduceProd", {shape->output(0)}, Attr("keepdims", int64_t{0}), 1, 17);
  EXPECT_THAT(ElementsOf(count), ElementsAre(batch * seq));
}

TEST_F(ShapeValueTest, ConstantNodeValues) {
  Attributes a;
  a.Set("value_ints", std::vector<int64_t>{3, 4});
  Node* c = Add("Constant", {}, a);
  EXPECT_EQ(TypeOf(c), "i64[2]");
  EXPECT_THAT(ElementsOf(c), ElementsAre(SymExpr(3), SymExpr(4)));
  Node* bad = Add("Constant", {});
  EXPECT_FALSE(last_status.ok());
  (void)bad;
}

TEST_F(ShapeValueTest, RuntimeListsGiveKnownRankAndDataDependentDims) {
  Value* axes = In({2}, DType::kI64);  // data, not a constant
  Node* unsq = Add("Unsqueeze", {In({batch, seq}), axes});
  ASSERT_TRUE(last_status.ok()) << last_status;
  ASSERT_EQ(unsq->output(0)->type().rank(), 4);
  for (SymExpr d : unsq->output(0)->type().shape) EXPECT_TRUE(d.IsSymbol() && d != batch && d != seq);
  Node* sq = Add("Squeeze", {In({batch, 1, seq}), In({1}, DType::kI64)});
  EXPECT_EQ(sq->output(0)->type().rank(), 2);
  Attributes keep0 = Attr("keepdims", int64_t{0});
  Node* red = Add("ReduceSum", {In({batch, seq, 4}), In({1}, DType::kI64)}, keep0, 1, 13);
  EXPECT_EQ(red->output(0)->type().rank(), 2);
  Node* split = Add("Split", {In({batch, 6}), In({2}, DType::kI64)}, Attr("axis", int64_t{1}), 2);
  ASSERT_TRUE(last_status.ok()) << last_status;
  EXPECT_EQ(split->output(1)->type().shape[0], batch);
  Node* expand = Add("Expand", {In({3, 1}), In({3}, DType::kI64)});
  ASSERT_TRUE(last_status.ok()) << last_status;
  EXPECT_EQ(expand->output(0)->type().rank(), 3);
}

TEST_F(ShapeValueTest, NegativeDimsFromBadValuesAreErrors) {
  Add("ConstantOfShape", {Ints({2, -3})});
  EXPECT_THAT(last_status.message(), HasSubstr("negative dim"));
  Add("Tile", {In({batch, 4}), Ints({1, -2})});
  EXPECT_THAT(last_status.message(), HasSubstr("negative dim"));
  Add("Split", {In({6})}, Attr("split", std::vector<int64_t>{-1, 7}), 2, 11);
  EXPECT_THAT(last_status.message(), HasSubstr("negative"));
}

using OtherRulesTest = ShapeRuleTest;

TEST_F(OtherRulesTest, EveryUnaryAndBinaryOpKeepsSymbolicShapes) {
  for (const char* op : {"Sqrt", "Reciprocal", "Exp", "Log", "Tanh", "Erf", "Sigmoid", "Floor", "Ceil", "Round",
                         "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh",
                         "Softplus", "Softsign", "Elu", "Selu", "LeakyRelu", "HardSigmoid", "HardSwish", "Celu",
                         "Mish", "Neg", "Abs", "Relu", "Sign", "Identity", "Softmax", "LogSoftmax"}) {
    Node* n = Add(op, {In({batch, seq, 8})});
    ASSERT_TRUE(last_status.ok()) << op << ": " << last_status;
    EXPECT_EQ(TypeOf(n), "f32[batch, seq, 8]") << op;
  }
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow", "Mod", "PRelu", "Min", "Max", "Sum", "Mean"}) {
    Node* n = Add(op, {In({batch, seq, 8}), In({seq, 1})});
    ASSERT_TRUE(last_status.ok()) << op << ": " << last_status;
    EXPECT_EQ(TypeOf(n), "f32[batch, seq, 8]") << op;
  }
  for (const char* op : {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"}) {
    EXPECT_EQ(TypeOf(Add(op, {In({batch, 1}), In({seq})})), "bool[batch, seq]") << op;
  }
  for (const char* op : {"And", "Or", "Xor"}) {
    EXPECT_EQ(TypeOf(Add(op, {In({batch, 1}, DType::kBool), In({seq}, DType::kBool)})), "bool[batch, seq]") << op;
  }
  EXPECT_EQ(TypeOf(Add("Not", {In({seq}, DType::kBool)})), "bool[seq]");
  EXPECT_EQ(TypeOf(Add("IsInf", {In({seq})})), "bool[seq]");
  Attributes to_f32;
  to_f32.Set("to", int64_t{1});
  EXPECT_EQ(TypeOf(Add("Cast", {In({batch, seq}, DType::kI64)}, to_f32)), "f32[batch, seq]");
}

TEST_F(OtherRulesTest, EveryReductionKeepsSymbolicShapes) {
  for (const char* op : {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                         "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"}) {
    Node* n = Add(op, {In({batch, seq, 8}), Ints({1})}, Attr("keepdims", int64_t{0}), 1, 18);
    ASSERT_TRUE(last_status.ok()) << op << ": " << last_status;
    EXPECT_EQ(TypeOf(n), "f32[batch, 8]") << op;
  }
  EXPECT_EQ(TypeOf(Add("ArgMin", {In({batch, seq})}, Attr("keepdims", int64_t{0}))), "i64[seq]");
}

TEST_F(OtherRulesTest, ReductionsAcrossOpsets) {
  Attributes axes;
  axes.Set("axes", std::vector<int64_t>{-1});
  EXPECT_EQ(TypeOf(Add("ReduceMean", {In({batch, seq, 64})}, axes, 1, 17)), "f32[batch, seq, 1]");
  EXPECT_EQ(TypeOf(Add("ReduceMean", {In({batch, seq, 64}), Ints({-1})}, {}, 1, 18)), "f32[batch, seq, 1]");
  EXPECT_EQ(TypeOf(Add("ReduceSum", {In({batch, seq, 64}), Ints({1})}, Attr("keepdims", int64_t{0}), 1, 13)),
            "f32[batch, 64]");
  EXPECT_EQ(TypeOf(Add("ReduceSum", {In({batch, seq})}, axes, 1, 11)), "f32[batch, 1]");
  EXPECT_EQ(TypeOf(Add("ReduceMax", {In({batch, seq})}, {}, 1, 17)), "f32[1, 1]");
  Add("ReduceMean", {In({batch, seq}), Ints({1})}, {}, 1, 17);  // axes input before 18
  EXPECT_FALSE(last_status.ok());
  EXPECT_EQ(TypeOf(Add("ArgMax", {In({batch, seq})}, Attr("axis", int64_t{1}))), "i64[batch, 1]");
}

TEST_F(OtherRulesTest, NormalizationsAndActivations) {
  Node* ln = Add("LayerNormalization", {In({batch, seq, 64}), In({64}), In({64})}, {}, 3);
  ASSERT_TRUE(last_status.ok()) << last_status;
  EXPECT_EQ(TypeOf(ln, 0), "f32[batch, seq, 64]");
  EXPECT_EQ(TypeOf(ln, 1), "f32[batch, seq, 1]");
  EXPECT_EQ(TypeOf(Add("Softmax", {In({batch, seq})})), "f32[batch, seq]");
  EXPECT_EQ(TypeOf(Add("Erf", {In({seq})})), "f32[seq]");
  Add("Sqrt", {In({seq}, DType::kI64)});
  EXPECT_THAT(last_status.message(), HasSubstr("floating-point"));
  EXPECT_EQ(TypeOf(Add("IsNaN", {In({seq})})), "bool[seq]");
  Node* drop = Add("Dropout", {In({seq})}, {}, 2);
  EXPECT_EQ(TypeOf(drop, 1), "bool[seq]");
  EXPECT_EQ(TypeOf(Add("Clip", {In({seq}), In({}), In({})}, {}, 1, 11)), "f32[seq]");
  Add("Clip", {In({seq}), In({2}), In({})}, {}, 1, 11);
  EXPECT_THAT(last_status.message(), HasSubstr("scalar"));
  EXPECT_EQ(TypeOf(Add("Trilu", {In({seq, seq})})), "f32[seq, seq]");
  EXPECT_EQ(TypeOf(Add("CumSum", {In({seq}), Ints({0}, true)})), "f32[seq]");
  EXPECT_EQ(TypeOf(Add("GatherElements", {In({batch, seq}), In({batch, 2}, DType::kI64)})), "f32[batch, 2]");
  EXPECT_EQ(TypeOf(Add("Gather", {In({1000, 64}), In({batch, seq}, DType::kI64)})), "f32[batch, seq, 64]");
  Add("Gather", {In({3, 4}), Ints({5}, true)});
  EXPECT_THAT(last_status.message(), HasSubstr("out of range"));
}

}  // namespace
}  // namespace shapeshift
