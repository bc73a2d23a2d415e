#include <algorithm>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "graph/op_table.h"
#include "tests/graph/reference/kernel_test_util.h"

namespace shapeshift {
namespace {

using ::testing::HasSubstr;
using namespace shapeshift::kernel_testing;

// The op set the IR and the kernels both promise (issue 3; GatherND for the
// dynamo exporter's mask lookup, issue 7; ScatterND, RMSNormalization and
// shapeshift's fused RoPEs RotateHalfMulAdd and RotateEveryTwoMulAdd, index-masked CausalSoftmax,
// RelativePositionExpand (T5/DeBERTa's relative positions), issue 13).
constexpr const char* kOpSet[] = {
    "Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Reciprocal", "Neg", "Abs", "Exp", "Log", "Tanh",
    "Erf", "Sigmoid", "Relu", "Softmax", "LayerNormalization", "ReduceMean", "ReduceSum",
    "ReduceMax", "MatMul", "Gemm", "Transpose", "Reshape", "Flatten", "Squeeze", "Unsqueeze",
    "Concat", "Split", "Slice", "Gather", "Shape", "Size", "Cast", "Constant", "ConstantOfShape",
    "Expand", "Where", "Equal", "Less", "Greater", "Not", "And", "Or", "Range", "Trilu",
    "Identity", "Min", "Max", "Clip", "CumSum", "Floor", "Ceil", "Round", "Sign", "Sin", "Cos",
    "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Softplus",
    "Softsign", "Elu", "Selu", "LeakyRelu", "HardSigmoid", "HardSwish", "Celu", "Mish", "IsNaN",
    "IsInf", "Mod", "GreaterOrEqual", "LessOrEqual", "Xor", "PRelu", "ReduceMin", "ReduceProd",
    "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare", "ArgMax",
    "ArgMin", "LogSoftmax", "Tile", "Sum", "Mean", "GatherElements", "GatherND", "Dropout", "Gelu",
    "ScatterND", "RMSNormalization", "RotateHalfMulAdd",
    "RotateEveryTwoMulAdd", "CausalSoftmax", "RelativePositionExpand"};

TEST(KernelRegistryTest, EveryOpOfTheOpSetHasAKernel) {
  for (const char* op : kOpSet) {
    const OpInfo* info = FindOp(op);
    ASSERT_NE(info, nullptr) << op;
    EXPECT_NE(info->reference, nullptr) << op;
  }
  EXPECT_EQ(AllOps().size(), std::size(kOpSet));
  EXPECT_EQ(FindOp("Conv"), nullptr);
}

TEST(KernelRegistryTest, ErrorsNameNodeAndOpAndKeepTheirCode) {
  auto missing = RunOp("Add", {F32({1}, {1})});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(missing.status().message(), HasSubstr("node 'test_node' (Add)"));
  EXPECT_THAT(missing.status().message(), HasSubstr("missing required input 1"));
}

TEST(KernelRegistryTest, ExtraOutputsAreTrimmedToTheNodesCount) {
  Tensor x = F32({2}, {1, 2});
  auto one = RunOp("Dropout", {x}, {}, 13, /*num_outputs=*/1);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(one->size(), 1u);
  auto split = RunOp("Split", {F32({4}, {1, 2, 3, 4})}, {}, 13, /*num_outputs=*/4);
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_EQ(split->size(), 4u);
}

}  // namespace
}  // namespace shapeshift
