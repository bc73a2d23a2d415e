// ScatterND: symbolic shape rule and reference kernel (ONNX semantics:
// tuples in order, negative indices, reductions, out-of-range errors).
#include <vector>

#include "gmock/gmock.h"
#include "graph/builder.h"
#include "graph/interpreter.h"
#include "gtest/gtest.h"

namespace shapeshift {
namespace {

using ::testing::HasSubstr;

class ScatterNDTest : public ::testing::Test {
 protected:
  ScatterNDTest() : graph_(18), b_(graph_, env_) { seq_ = *env_.DeclareSymbol(SymbolInfo{"seq", 1, 8}); }

  // data f32[4, 2], indices i64[n, 1], updates f32[n, 2].
  absl::StatusOr<std::vector<Tensor>> Run(std::vector<int64_t> rows, std::vector<float> updates,
                                          const std::string& reduction = "none") {
    const int64_t n = static_cast<int64_t>(rows.size());
    Value* data = graph_.AddInput("data", TensorType(DType::kF32, {SymExpr(4), SymExpr(2)}));
    Value* idx = graph_.AddInput("idx", TensorType(DType::kI64, {SymExpr(n), SymExpr(1)}));
    Value* upd = graph_.AddInput("upd", TensorType(DType::kF32, {SymExpr(n), SymExpr(2)}));
    Attributes attrs;
    if (reduction != "none") attrs.Set("reduction", reduction);
    absl::StatusOr<Value*> out = b_.Op("ScatterND", {data, idx, upd}, attrs);
    if (!out.ok()) return out.status();
    graph_.AddOutput(*out);
    return Interpret(graph_, {Tensor::FromVector<float>(DType::kF32, {4, 2}, {0, 1, 2, 3, 4, 5, 6, 7}),
                              Tensor::FromVector<int64_t>(DType::kI64, {n, 1}, rows),
                              Tensor::FromVector<float>(DType::kF32, {n, 2}, updates)});
  }

  static std::vector<float> Floats(const Tensor& t) {
    return std::vector<float>(t.data<float>(), t.data<float>() + t.num_elements());
  }

  ShapeEnv env_;
  Graph graph_;
  GraphBuilder b_;
  SymExpr seq_;
};

TEST_F(ScatterNDTest, OutputHasTheDataShapeAndUpdatesMustFit) {
  Value* data = graph_.AddInput("data", TensorType(DType::kF32, {SymExpr(16), SymExpr(4)}));
  Value* idx = graph_.AddInput("idx", TensorType(DType::kI64, {seq_, SymExpr(1)}));
  Value* upd = graph_.AddInput("upd", TensorType(DType::kF32, {seq_, SymExpr(4)}));
  absl::StatusOr<Value*> out = b_.Op("ScatterND", {data, idx, upd});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)->type().ToString(), "f32[16, 4]");
  Value* wrong = graph_.AddInput("wrong", TensorType(DType::kF32, {seq_, SymExpr(3)}));
  absl::StatusOr<Value*> bad = b_.Op("ScatterND", {data, idx, wrong});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("ScatterND updates shape"));
}

TEST_F(ScatterNDTest, RowsAreReplacedInOrderAndNegativesCountFromTheEnd) {
  absl::StatusOr<std::vector<Tensor>> r = Run({2, -1, 2}, {10, 11, 12, 13, 14, 15});
  ASSERT_TRUE(r.ok()) << r.status();
  // Row 2 twice: the later tuple wins; -1 is row 3.
  EXPECT_EQ(Floats((*r)[0]), (std::vector<float>{0, 1, 2, 3, 14, 15, 12, 13}));
}

TEST_F(ScatterNDTest, ReductionsCombineWithWhatIsThere) {
  absl::StatusOr<std::vector<Tensor>> add = Run({1, 1}, {10, 10, 1, 1}, "add");
  ASSERT_TRUE(add.ok()) << add.status();
  EXPECT_EQ(Floats((*add)[0]), (std::vector<float>{0, 1, 13, 14, 4, 5, 6, 7}));
}

TEST_F(ScatterNDTest, OutOfRangeIndexIsAnErrorNamingIt) {
  absl::StatusOr<std::vector<Tensor>> r = Run({4}, {1, 2});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("index 4 is out of range for dim 4"));
}

}  // namespace
}  // namespace shapeshift
