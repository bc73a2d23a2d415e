// Bad input never crashes: every kernel is run on every combination of up to
// three inputs from a pool of awkward tensors (scalars, empty tensors, wrong
// dtypes, negative and out-of-range integers, f16). Each call must return
// either a result or an error that names the node.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "graph/op_table.h"
#include "tests/graph/reference/kernel_test_util.h"

namespace shapeshift {
namespace {

using ::testing::HasSubstr;
using namespace shapeshift::kernel_testing;

std::vector<Tensor> AwkwardTensors() {
  return {
      F32({}, {1.5f}),
      F32({2, 3}, {1, -2, 3, -4, 5, -6}),
      F32({0, 2}, {}),
      I64({2}, {-1, 7}),
      I64({}, {3}),
      I32({1}, {0}),
      Bool({2, 1}, {1, 0}),
      Tensor::FromVector<uint16_t>(DType::kF16, {2}, {0x3c00, 0xfc00}),
  };
}

TEST(HostileInputsKernelTest, EveryKernelReturnsAStatusForEveryInputCombination) {
  const std::vector<Tensor> pool = AwkwardTensors();
  const int n = static_cast<int>(pool.size());
  std::vector<std::vector<const Tensor*>> combos = {{}};
  for (int a = 0; a < n; ++a) {
    combos.push_back({&pool[a]});
    for (int b = 0; b < n; ++b) {
      combos.push_back({&pool[a], &pool[b]});
      for (int c = 0; c < n; ++c) combos.push_back({&pool[a], &pool[b], &pool[c]});
    }
  }
  Attributes attrs;  // defaults only: required attributes are missing on purpose
  int ok = 0;
  int errors = 0;
  for (const OpInfo* info : AllOps()) {
    const std::string& op = info->op_type;
    for (const auto& inputs : combos) {
      auto result = RunOpWithAbsent(op, inputs, attrs, 17, 1);
      if (result.ok()) {
        ASSERT_EQ(result->size(), 1u) << op;
        ++ok;
      } else {
        ASSERT_THAT(result.status().message(), HasSubstr("node 'test_node' (" + op + ")"));
        ++errors;
      }
    }
  }
  EXPECT_GT(ok, 0);
  EXPECT_GT(errors, 0);
}

}  // namespace
}  // namespace shapeshift
