// CumSum groups (codegen/lower/scan_kernel.cc): every axis, exclusive and
// reverse, f32 and i64, at awkward sizes against the interpreter.
#include "absl/strings/str_cat.h"
#include "tests/codegen/lower/lower_test_util.h"

namespace shapeshift::codegen::lower::testing {
namespace {

using passes::GroupKind;

Tensor CountingI64(std::vector<int64_t> shape, int64_t modulo) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<int64_t> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = (i * 7919) % modulo - modulo / 3;
  return Tensor::FromVector<int64_t>(DType::kI64, shape, v);
}

TEST_F(LowerTest, CumSumEveryAxisAndModeMatchesInterpreter) {
  for (int64_t axis : {0, 1, 2, -1}) {
    for (int64_t exclusive : {0, 1}) {
      for (int64_t reverse : {0, 1}) {
        SCOPED_TRACE(absl::StrCat("axis ", axis, " exclusive ", exclusive, " reverse ", reverse));
        Graph fresh(17);
        std::swap(g, fresh);
        GraphValue* x = In("x", {batch, seq, 5});
        Attributes attrs;
        attrs.Set("exclusive", exclusive);
        attrs.Set("reverse", reverse);
        Node* cumsum = Op("CumSum", {x, g.AddConstant("", Tensor::ScalarI64(axis))}, attrs);
        g.AddOutput(cumsum->output(0));
        passes::Group group = MakeGroup(GroupKind::kScan, {cumsum}, {x});
        for (int64_t s : {1, 2, 13, 513}) {
          SCOPED_TRACE(s);
          ExpectMatchesInterpreter(group, {RandomTensor({3, s, 5}, static_cast<uint32_t>(s))});
        }
      }
    }
  }
}

// OPT's position ids: the running count of an int64 attention mask.
TEST_F(LowerTest, CumSumOfInt64IsExact) {
  GraphValue* mask = In("mask", {batch, seq}, DType::kI64);
  Node* cumsum = Op("CumSum", {mask, g.AddConstant("", Tensor::ScalarI64(1))});
  g.AddOutput(cumsum->output(0));
  passes::Group group = MakeGroup(GroupKind::kScan, {cumsum}, {mask});
  absl::StatusOr<std::vector<LoweredStep>> steps = LowerGroup(group, &env);
  ASSERT_TRUE(steps.ok()) << steps.status();
  for (int64_t s : {1, 7, 512}) {
    SCOPED_TRACE(s);
    std::vector<Tensor> in = {CountingI64({2, s}, 1000)};
    absl::StatusOr<std::vector<Tensor>> got = RunSteps(*steps, in);
    ASSERT_TRUE(got.ok()) << got.status();
    absl::StatusOr<std::vector<Tensor>> want = Interpret(g, in);
    ASSERT_TRUE(want.ok()) << want.status();
    ASSERT_EQ((*got)[0].dtype(), DType::kI64);
    for (int64_t i = 0; i < (*want)[0].num_elements(); ++i) {
      ASSERT_EQ((*got)[0].GetAsInt64(i), (*want)[0].GetAsInt64(i)) << "element " << i;
    }
  }
}

TEST_F(LowerTest, CumSumNeedsAKnownAxis) {
  GraphValue* x = In("x", {batch, seq});
  GraphValue* axis = In("axis", {}, DType::kI64);
  Node* cumsum = Op("CumSum", {x, axis});
  g.AddOutput(cumsum->output(0));
  absl::StatusOr<std::vector<LoweredStep>> steps = LowerGroup(MakeGroup(GroupKind::kScan, {cumsum}, {x}), &env);
  ASSERT_FALSE(steps.ok());
  EXPECT_NE(steps.status().message().find("axis must be known"), std::string::npos) << steps.status();
}

}  // namespace
}  // namespace shapeshift::codegen::lower::testing
