// Shape inference keeps SymExprs within kMaxSymExprDepth and
// kMaxSymExprTreeSize (shapes/sym_expr.h), which the recursive SymExpr
// algorithms rely on: a dim beyond them is an error naming the node and the
// limit; a shape value beyond them is forgotten (computed at run time), so a
// long chain of shape arithmetic still imports and interprets correctly.
#include "graph/shape_inference.h"

#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "graph/interpreter.h"
#include "gtest/gtest.h"
#include "tests/graph/shape_test_util.h"

namespace shapeshift {
namespace {

using ::testing::HasSubstr;
using ShapeInferenceLimitsTest = testing::ShapeRuleTest;

TEST_F(ShapeInferenceLimitsTest, ADimNestedBeyondTheDepthLimitIsAnErrorNamingTheNodeAndTheLimit) {
  SymExpr deep = seq;
  while (deep.depth() <= kMaxSymExprDepth) deep = FloorDiv(deep + 1, batch);
  Node* n = Add("Relu", {In({deep, 4})});
  ASSERT_FALSE(last_status.ok());
  EXPECT_THAT(last_status.message(), HasSubstr("node '" + n->name() + "' (Relu)"));
  EXPECT_THAT(last_status.message(), HasSubstr("dim 0"));
  EXPECT_THAT(last_status.message(), HasSubstr(absl::StrCat(kMaxSymExprDepth)));
  EXPECT_THAT(last_status.message(), HasSubstr("kMaxSymExprDepth"));
  // Just within the limit is fine.
  SymExpr within = seq;
  while (within.depth() + 2 <= kMaxSymExprDepth) within = FloorDiv(within + 1, batch);
  Add("Relu", {In({within, 4})});
  EXPECT_TRUE(last_status.ok()) << last_status;
}

// max(e, e // 2) forty times over is 81 levels deep but 2^40 nodes as a tree:
// printing or evaluating it would never finish.
TEST_F(ShapeInferenceLimitsTest, ADimThatIsExponentialAsATreeIsAnError) {
  SymExpr e = seq;
  for (int i = 0; i < 40; ++i) e = Max(e, FloorDiv(e, 2));
  ASSERT_LE(e.depth(), kMaxSymExprDepth);
  Add("Abs", {In({batch, e})});
  ASSERT_FALSE(last_status.ok());
  EXPECT_THAT(last_status.message(), HasSubstr("dim 1"));
  EXPECT_THAT(last_status.message(), HasSubstr("kMaxSymExprTreeSize"));
}

// Shape(x)[0] = seq, then v = (v + 1) % batch 200 times: a shape value 400
// levels deep. Past the limit the elements are dropped, the graph stays
// valid, and the interpreter computes the value from data.
TEST_F(ShapeInferenceLimitsTest, AShapeValueBeyondTheLimitIsForgottenAndComputedAtRunTime) {
  Value* x = In({seq, 4});
  Value* y = In({batch, 4});
  Node* shape_x = Add("Shape", {x});
  Node* shape_y = Add("Shape", {y});
  Value* one = Ints({1, 0});
  Value* v = shape_x->output(0);
  Value* last_known = nullptr;
  for (int i = 0; i < 200; ++i) {
    Node* plus = Add("Add", {v, one});
    ASSERT_TRUE(last_status.ok()) << last_status;
    Node* mod = Add("Mod", {plus->output(0), shape_y->output(0)});
    ASSERT_TRUE(last_status.ok()) << last_status;
    v = mod->output(0);
    if (v->elements()) last_known = v;
  }
  ASSERT_NE(last_known, nullptr);
  EXPECT_LE((*last_known->elements())[0].depth(), kMaxSymExprDepth);
  EXPECT_FALSE(v->elements().has_value()) << "a 400-level shape value was kept";
  g.AddOutput(v);
  ASSERT_TRUE(g.Verify().ok());
  // seq = 7, batch = 5: v[0] = (v[0] + 1) % 5 from 7, 200 times; v[1] is
  // 4 % 4 = 0 from the first step on.
  absl::StatusOr<std::vector<Tensor>> out =
      Interpret(g, {Tensor::Zeros(DType::kF32, {7, 4}).value(), Tensor::Zeros(DType::kF32, {5, 4}).value()});
  ASSERT_TRUE(out.ok()) << out.status();
  int64_t a = 7, b = 4;
  for (int i = 0; i < 200; ++i) a = (a + 1) % 5, b = (b + 0) % 4;
  EXPECT_EQ((*out)[0].values<int64_t>()[0], a);
  EXPECT_EQ((*out)[0].values<int64_t>()[1], b);
}

}  // namespace
}  // namespace shapeshift
