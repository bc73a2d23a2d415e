// GatherND: symbolic shape rule and reference kernel (ONNX semantics,
// batch_dims, negative indices, out-of-range errors).
#include <vector>

#include "gmock/gmock.h"
#include "graph/builder.h"
#include "graph/interpreter.h"
#include "gtest/gtest.h"

namespace shapeshift {
namespace {

using ::testing::HasSubstr;

class GatherNDTest : public ::testing::Test {
 protected:
  GatherNDTest() : graph_(17), b_(graph_, env_) {
    batch_ = *env_.DeclareSymbol(SymbolInfo{"batch", 1, 8});
  }
  ShapeEnv env_;
  Graph graph_;
  GraphBuilder b_;
  SymExpr batch_;
};

TEST_F(GatherNDTest, ShapeIsIndexPrefixThenDataTail) {
  Value* data = graph_.AddInput("data", TensorType(DType::kF32, {batch_, SymExpr(5), SymExpr(3)}));
  Value* idx = graph_.AddInput("idx", TensorType(DType::kI64, {SymExpr(4), SymExpr(2)}));
  absl::StatusOr<Value*> out = b_.Op("GatherND", {data, idx});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)->type().ToString(), "f32[4, 3]");
}

TEST_F(GatherNDTest, SymbolicTupleLengthIsAnError) {
  Value* data = graph_.AddInput("data", TensorType(DType::kF32, {SymExpr(5), SymExpr(3)}));
  Value* idx = graph_.AddInput("idx", TensorType(DType::kI64, {SymExpr(4), batch_}));
  absl::StatusOr<Value*> out = b_.Op("GatherND", {data, idx});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("must be static"));
}

TEST_F(GatherNDTest, KernelPicksTuplesWithBatchDims) {
  Value* data = graph_.AddInput("data", TensorType(DType::kF32, {SymExpr(2), SymExpr(2), SymExpr(2)}));
  Value* idx = graph_.AddInput("idx", TensorType(DType::kI64, {SymExpr(2), SymExpr(1)}));
  Attributes attrs;
  attrs.Set("batch_dims", int64_t{1});
  absl::StatusOr<Value*> out = b_.Op("GatherND", {data, idx}, attrs);
  ASSERT_TRUE(out.ok()) << out.status();
  graph_.AddOutput(*out);
  // data[0] = [[0,1],[2,3]], data[1] = [[4,5],[6,7]]; rows 1 and -2 (= 0).
  std::vector<Tensor> inputs = {
      Tensor::FromVector<float>(DType::kF32, {2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7}),
      Tensor::FromVector<int64_t>(DType::kI64, {2, 1}, {1, -2})};
  absl::StatusOr<std::vector<Tensor>> result = Interpret(graph_, inputs);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ((*result)[0].shape(), (std::vector<int64_t>{2, 2}));
  const float* y = (*result)[0].data<float>();
  EXPECT_EQ(std::vector<float>(y, y + 4), (std::vector<float>{2, 3, 4, 5}));
}

TEST_F(GatherNDTest, OutOfRangeIndexIsAnError) {
  Value* data = graph_.AddInput("data", TensorType(DType::kF32, {SymExpr(2), SymExpr(2)}));
  Value* idx = graph_.AddInput("idx", TensorType(DType::kI64, {SymExpr(1), SymExpr(2)}));
  absl::StatusOr<Value*> out = b_.Op("GatherND", {data, idx});
  ASSERT_TRUE(out.ok()) << out.status();
  graph_.AddOutput(*out);
  std::vector<Tensor> inputs = {Tensor::FromVector<float>(DType::kF32, {2, 2}, {0, 1, 2, 3}),
                                Tensor::FromVector<int64_t>(DType::kI64, {1, 2}, {0, 2})};
  absl::StatusOr<std::vector<Tensor>> result = Interpret(graph_, inputs);
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.status().message(), HasSubstr("out of range"));
}

}  // namespace
}  // namespace shapeshift
