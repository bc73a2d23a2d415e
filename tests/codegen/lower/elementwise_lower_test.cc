// Elementwise groups: DAGs with broadcasting, casts, generators and index
// remaps, compiled once and run at awkward sizes against the interpreter.
#include <cmath>

#include "tests/codegen/lower/lower_test_util.h"

namespace shapeshift::codegen::lower::testing {
namespace {

using passes::GroupKind;

TEST_F(LowerTest, BiasGeluErfChainMatchesInterpreter) {
  GraphValue* x = In("x", {batch, seq, 24});
  GraphValue* bias = Const({24}, 1);
  Node* add = Op("Add", {x, bias});
  Node* div = Op("Div", {add->output(0), Scalar(static_cast<float>(M_SQRT2))});
  Node* erf = Op("Erf", {div->output(0)});
  Node* one = Op("Add", {erf->output(0), Scalar(1)});
  Node* mul = Op("Mul", {add->output(0), one->output(0)});
  Node* half = Op("Mul", {mul->output(0), Scalar(0.5f)});
  g.AddOutput(half->output(0));
  passes::Group group = MakeGroup(GroupKind::kElementwise, {add, div, erf, one, mul, half}, {x, bias});
  group.elementwise.domain = half->output(0)->type().shape;
  for (int64_t s : AwkwardSeqs()) {
    SCOPED_TRACE(s);
    ExpectMatchesInterpreter(group, {RandomTensor({2, s, 24}, s)});
  }
}

TEST_F(LowerTest, BiasGeluNodeBothFormsMatchInterpreter) {
  for (const char* approximate : {"none", "tanh"}) {
    SCOPED_TRACE(approximate);
    Graph fresh(17);
    std::swap(g, fresh);
    GraphValue* x = In("x", {batch, seq, 24});
    Node* add = Op("Add", {x, Const({24}, 1)});
    Node* gelu = Op("Gelu", {add->output(0)}, Attr("approximate", std::string(approximate)));
    g.AddOutput(gelu->output(0));
    passes::Group group = MakeGroup(GroupKind::kElementwise, {add, gelu}, {x, add->input(1)});
    group.elementwise.domain = gelu->output(0)->type().shape;
    for (int64_t s : AwkwardSeqs()) {
      SCOPED_TRACE(s);
      // Wide inputs reach erf/tanh saturation and the negative tail.
      Tensor in = RandomTensor({2, s, 24}, s);
      for (int64_t i = 0; i < in.num_elements(); ++i) in.mutable_data<float>()[i] *= 4.0f;
      ExpectMatchesInterpreter(group, {in});
    }
  }
}

TEST_F(LowerTest, AttentionMaskFromIdsBroadcastsAndCasts) {
  GraphValue* mask = In("mask", {batch, seq}, DType::kI64);
  Node* u1 = Op("Unsqueeze", {mask, Ints({1})});
  Node* u2 = Op("Unsqueeze", {u1->output(0), Ints({2})});
  Node* cast = Op("Cast", {u2->output(0)}, Attr("to", int64_t{1}));
  Node* sub = Op("Sub", {Scalar(1), cast->output(0)});
  Node* mul = Op("Mul", {sub->output(0), Scalar(-10000.0f)});
  g.AddOutput(mul->output(0));
  passes::Group group = MakeGroup(GroupKind::kElementwise, {u1, u2, cast, sub, mul}, {mask});
  group.elementwise.domain = mul->output(0)->type().shape;
  for (int64_t s : AwkwardSeqs()) {
    std::vector<int64_t> ids(3 * s);
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = (i * 7) % 3 == 0 ? 0 : 1;
    ExpectMatchesInterpreter(group, {Tensor::FromVector<int64_t>(DType::kI64, {3, s}, ids)});
  }
}

TEST_F(LowerTest, WhereCompareAndTwoOutputsShareOneKernel) {
  GraphValue* a = In("a", {batch, seq, 5});
  GraphValue* b = In("b", {1, seq, 1});
  Node* less = Op("Less", {a, b});
  Node* where = Op("Where", {less->output(0), a, b});
  Node* relu = Op("Relu", {where->output(0)});
  Node* sq = Op("Pow", {where->output(0), Scalar(2)});
  g.AddOutput(relu->output(0));
  g.AddOutput(sq->output(0));
  passes::Group group = MakeGroup(GroupKind::kElementwise, {less, where, relu, sq}, {a, b});
  group.elementwise.domain = relu->output(0)->type().shape;
  absl::StatusOr<std::vector<LoweredStep>> steps = LowerGroup(group, &env);
  ASSERT_TRUE(steps.ok()) << steps.status();
  EXPECT_EQ(steps->size(), 1u);
  for (int64_t s : {1, 2, 13, 513}) {
    ExpectMatchesInterpreter(group, {RandomTensor({2, s, 5}, 3), RandomTensor({1, s, 1}, 4)});
  }
}

TEST_F(LowerTest, RangeGeneratorUsesSymbolicShapeValues) {
  // position ids 0..seq-1 added to a per-position value: Range's limit is a
  // shape value (seq), so the kernel computes it from its dims.
  GraphValue* x = In("x", {batch, seq});
  Node* shape = Op("Shape", {x});
  Node* gather = Op("Gather", {shape->output(0), g.AddConstant("", Tensor::ScalarI64(1))});
  Node* range = Op("Range", {g.AddConstant("", Tensor::ScalarI64(0)), gather->output(0),
                             g.AddConstant("", Tensor::ScalarI64(1))});
  Node* cast = Op("Cast", {range->output(0)}, Attr("to", int64_t{1}));
  Node* add = Op("Add", {x, cast->output(0)});
  g.AddOutput(add->output(0));
  ASSERT_TRUE(range->output(0)->type().shape[0] == seq) << range->output(0)->type().ToString();
  passes::Group group = MakeGroup(GroupKind::kElementwise, {range, cast, add}, {x});
  group.elementwise.domain = add->output(0)->type().shape;
  for (int64_t s : AwkwardSeqs()) ExpectMatchesInterpreter(group, {RandomTensor({2, s}, 9)});
}

TEST_F(LowerTest, UnsupportedOpIsAnErrorNamingTheNode) {
  GraphValue* x = In("x", {batch, seq});
  Node* tan = Op("Tan", {x});  // an elementwise op the emitter does not lower (op table: none)
  g.AddOutput(tan->output(0));
  passes::Group group = MakeGroup(GroupKind::kElementwise, {tan}, {x});
  group.elementwise.domain = tan->output(0)->type().shape;
  absl::StatusOr<std::vector<LoweredStep>> steps = LowerGroup(group, &env);
  ASSERT_FALSE(steps.ok());
  EXPECT_NE(steps.status().message().find(tan->name()), std::string::npos) << steps.status();
  EXPECT_NE(steps.status().message().find("Tan"), std::string::npos) << steps.status();
}

TEST_F(LowerTest, OtherGroupIsRejectedWithNodeAndOp) {
  GraphValue* x = In("x", {batch, seq});
  Node* top = Op("ArgMax", {x}, Attr("axis", int64_t{1}));
  g.AddOutput(top->output(0));
  passes::Group group = MakeGroup(GroupKind::kOther, {top}, {x});
  absl::StatusOr<std::vector<LoweredStep>> steps = LowerGroup(group, &env);
  ASSERT_FALSE(steps.ok());
  EXPECT_NE(steps.status().message().find("ArgMax"), std::string::npos) << steps.status();
}

}  // namespace
}  // namespace shapeshift::codegen::lower::testing
