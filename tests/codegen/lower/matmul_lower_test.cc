// Matmul groups: oneDNN configurations with runtime M / batch, static K / N,
// transposed B and the bias / GELU / residual / scale epilogue.
#include <cmath>

#include "tests/codegen/lower/lower_test_util.h"

namespace shapeshift::codegen::lower::testing {
namespace {

using passes::GroupKind;

TEST_F(LowerTest, DenseWithBiasGeluResidualMatchesInterpreter) {
  GraphValue* x = In("x", {batch, seq, 32});
  GraphValue* res = In("res", {batch, seq, 24});
  GraphValue* w = Const({32, 24}, 1);
  GraphValue* bias = Const({24}, 2);
  Node* mm = Op("MatMul", {x, w});
  Node* add = Op("Add", {mm->output(0), bias});
  Node* div = Op("Div", {add->output(0), Scalar(static_cast<float>(M_SQRT2))});
  Node* erf = Op("Erf", {div->output(0)});
  Node* one = Op("Add", {erf->output(0), Scalar(1)});
  Node* mul = Op("Mul", {add->output(0), one->output(0)});
  Node* half = Op("Mul", {mul->output(0), Scalar(0.5f)});
  Node* residual = Op("Add", {half->output(0), res});
  g.AddOutput(residual->output(0));
  passes::Group group = MakeGroup(GroupKind::kMatmul, {mm, add, div, erf, one, mul, half, residual}, {x, w, bias, res});
  group.matmul.a = x;
  group.matmul.b = w;
  group.matmul.b_is_2d = true;
  group.matmul.bias = bias;
  group.matmul.activation = passes::GeluForm::kErf;
  group.matmul.residual = res;
  absl::StatusOr<std::vector<LoweredStep>> steps = LowerGroup(group, &env);
  ASSERT_TRUE(steps.ok()) << steps.status();
  const auto& call = std::get<MatmulCall>((*steps)[0]);
  EXPECT_EQ(call.config.m, cpu::kRuntimeDim);
  EXPECT_EQ(call.config.k, 32);
  EXPECT_EQ(call.config.n, 24);
  EXPECT_EQ(call.m, batch * seq);
  for (int64_t s : AwkwardSeqs()) {
    SCOPED_TRACE(s);
    ExpectMatchesInterpreter(group, {RandomTensor({2, s, 32}, 3), RandomTensor({2, s, 24}, 4)}, 1e-4);
  }
}

TEST_F(LowerTest, GeluNodeEpilogueIsOnePostOpCallInBothForms) {
  for (auto [approximate, form] : {std::pair{"none", passes::GeluForm::kErf},
                                   std::pair{"tanh", passes::GeluForm::kTanh}}) {
    SCOPED_TRACE(approximate);
    Graph fresh(17);
    std::swap(g, fresh);
    GraphValue* x = In("x", {batch, seq, 32});
    GraphValue* w = Const({32, 24}, 1);
    GraphValue* bias = Const({24}, 2);
    Node* mm = Op("MatMul", {x, w});
    Node* add = Op("Add", {mm->output(0), bias});
    Node* gelu = Op("Gelu", {add->output(0)}, Attr("approximate", std::string(approximate)));
    g.AddOutput(gelu->output(0));
    passes::Group group = MakeGroup(GroupKind::kMatmul, {mm, add, gelu}, {x, w, bias});
    group.matmul.a = x;
    group.matmul.b = w;
    group.matmul.b_is_2d = true;
    group.matmul.bias = bias;
    group.matmul.activation = form;
    absl::StatusOr<std::vector<LoweredStep>> steps = LowerGroup(group, &env);
    ASSERT_TRUE(steps.ok()) << steps.status();
    ASSERT_EQ(steps->size(), 1u);
    EXPECT_EQ(std::get<MatmulCall>((*steps)[0]).config.activation,
              form == passes::GeluForm::kErf ? cpu::MatmulActivation::kGeluErf : cpu::MatmulActivation::kGeluTanh);
    for (int64_t s : AwkwardSeqs()) {
      SCOPED_TRACE(s);
      ExpectMatchesInterpreter(group, {RandomTensor({2, s, 32}, 5)}, 1e-4);
    }
  }
}

TEST_F(LowerTest, ScaledQueryKeyTransposeIsOneBatchedMatmul) {
  GraphValue* q = In("q", {batch, 2, seq, 8});
  GraphValue* k = In("k", {batch, 2, seq, 8});
  Node* kt = Op("Transpose", {k}, Attr("perm", std::vector<int64_t>{0, 1, 3, 2}));
  Node* mm = Op("MatMul", {q, kt->output(0)});
  Node* scale = Op("Div", {mm->output(0), Scalar(std::sqrt(8.0f))});
  g.AddOutput(scale->output(0));
  passes::Group group = MakeGroup(GroupKind::kMatmul, {kt, mm, scale}, {q, k});
  group.matmul.a = q;
  group.matmul.b = k;
  group.matmul.transpose_b = true;
  group.matmul.scale = 1.0f / std::sqrt(8.0f);
  absl::StatusOr<std::vector<LoweredStep>> steps = LowerGroup(group, &env);
  ASSERT_TRUE(steps.ok()) << steps.status();
  const auto& call = std::get<MatmulCall>((*steps)[0]);
  EXPECT_EQ(call.config.batch, cpu::kRuntimeDim);
  EXPECT_EQ(call.batch, 2 * batch);
  EXPECT_TRUE(call.config.transpose_b);
  for (int64_t s : {1, 2, 13, 129}) {
    SCOPED_TRACE(s);
    ExpectMatchesInterpreter(group, {RandomTensor({2, 2, s, 8}, 5), RandomTensor({2, 2, s, 8}, 6)}, 1e-4);
  }
}

TEST_F(LowerTest, NonFloatMatmulIsRejected) {
  GraphValue* a = In("a", {seq, 4}, DType::kI64);
  GraphValue* b = In("b", {4, 4}, DType::kI64);
  Node* mm = Op("MatMul", {a, b});
  g.AddOutput(mm->output(0));
  passes::Group group = MakeGroup(GroupKind::kMatmul, {mm}, {a, b});
  group.matmul.a = a;
  group.matmul.b = b;
  group.matmul.b_is_2d = true;
  absl::StatusOr<std::vector<LoweredStep>> steps = LowerGroup(group, &env);
  ASSERT_FALSE(steps.ok());
  EXPECT_NE(steps.status().message().find("MatMul"), std::string::npos) << steps.status();
}

}  // namespace
}  // namespace shapeshift::codegen::lower::testing
