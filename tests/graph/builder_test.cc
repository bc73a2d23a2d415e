// GraphBuilder: nodes come out typed; a failing rule leaves no node behind.
#include "graph/builder.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace shapeshift {
namespace {

using ::testing::HasSubstr;

TEST(GraphBuilderTest, BuildsTypedAttentionProjection) {
  ShapeEnv env;
  SymExpr batch = env.DeclareSymbol({"batch", 1, 8}).value();
  SymExpr seq = env.DeclareSymbol({"seq", 1, 128}).value();
  Graph g(17);
  GraphBuilder b(g, env);
  Value* x = b.Input("x", TensorType(DType::kF32, {batch, seq, 64}));
  Value* w = b.Constant("w", Tensor::Zeros(DType::kF32, {64, 64}).value());
  absl::StatusOr<Value*> q = b.Op("MatMul", {x, w}, {}, "q");
  ASSERT_TRUE(q.ok()) << q.status();
  absl::StatusOr<Value*> heads = b.Op("Reshape", {*q, b.VectorI64({0, 0, 4, 16})});
  ASSERT_TRUE(heads.ok()) << heads.status();
  EXPECT_EQ((*heads)->type().ToString(), "f32[batch, seq, 4, 16]");
  Attributes axis;
  axis.Set("axis", int64_t{-1});
  absl::StatusOr<std::vector<Value*>> parts = b.MultiOp("Split", {*heads, b.VectorI64({8, 8})}, 2, axis);
  ASSERT_TRUE(parts.ok()) << parts.status();
  EXPECT_EQ((*parts)[1]->type().ToString(), "f32[batch, seq, 4, 8]");
  b.Output((*parts)[0]);
  EXPECT_TRUE(g.Verify().ok()) << g.Verify();
}

TEST(GraphBuilderTest, FailedRuleRemovesTheNode) {
  ShapeEnv env;
  Graph g(17);
  GraphBuilder b(g, env);
  Value* x = b.Input("x", TensorType(DType::kF32, {4, 3}));
  absl::StatusOr<Value*> bad = b.Op("MatMul", {x, x}, {}, "bad_matmul");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("bad_matmul"));
  EXPECT_EQ(g.num_nodes(), 0);
  EXPECT_TRUE(x->uses().empty());
  EXPECT_TRUE(g.Verify().ok());
}

}  // namespace
}  // namespace shapeshift
