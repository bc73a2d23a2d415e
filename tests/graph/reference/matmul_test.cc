#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/graph/reference/kernel_test_util.h"

namespace shapeshift {
namespace {

using ::testing::ElementsAre;
using namespace shapeshift::kernel_testing;

TEST(MatMulKernelTest, TwoByTwo) {
  auto out = RunOp("MatMul", {F32({2, 2}, {1, 2, 3, 4}), F32({2, 2}, {5, 6, 7, 8})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Values<float>((*out)[0]), ElementsAre(19, 22, 43, 50));
}

TEST(MatMulKernelTest, BatchBroadcastAndVectorPromotion) {
  // [2, 1, 1, 2] x [3, 2, 1]: batch [2, 1] and [3] broadcast to [2, 3].
  auto out = RunOp("MatMul", {F32({2, 1, 1, 2}, {1, 1, 2, 2}), F32({3, 2, 1}, {1, 0, 0, 1, 1, 1})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT((*out)[0].shape(), ElementsAre(2, 3, 1, 1));
  EXPECT_THAT(Values<float>((*out)[0]), ElementsAre(1, 1, 2, 2, 2, 4));
  auto vec = RunOp("MatMul", {F32({2}, {1, 2}), F32({2, 3}, {1, 2, 3, 4, 5, 6})});
  ASSERT_TRUE(vec.ok()) << vec.status();
  EXPECT_THAT((*vec)[0].shape(), ElementsAre(3));
  EXPECT_THAT(Values<float>((*vec)[0]), ElementsAre(9, 12, 15));
  auto dot = RunOp("MatMul", {F32({2}, {1, 2}), F32({2}, {3, 4})});
  ASSERT_TRUE(dot.ok());
  EXPECT_EQ((*dot)[0].rank(), 0);
  EXPECT_EQ((*dot)[0].GetAsDouble(0), 11);
  EXPECT_FALSE(RunOp("MatMul", {F32({2, 3}, {0, 0, 0, 0, 0, 0}), F32({2}, {1, 2})}).ok());
}

TEST(MatMulKernelTest, IntegerMatMul) {
  auto out = RunOp("MatMul", {I64({1, 2}, {2, 3}), I64({2, 1}, {4, 5})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].GetAsInt64(0), 23);
}

TEST(GemmKernelTest, TransposesAlphaBetaAndBroadcastBias) {
  Tensor a = F32({2, 2}, {1, 3, 2, 4});  // A^T = [[1, 2], [3, 4]]
  Tensor b = F32({2, 2}, {5, 7, 6, 8});  // B^T = [[5, 6], [7, 8]]
  Tensor c = F32({2}, {1, 2});
  Attributes attrs;
  attrs.Set("transA", int64_t{1});
  attrs.Set("transB", int64_t{1});
  attrs.Set("alpha", 2.f);
  attrs.Set("beta", 0.5f);
  auto out = RunOp("Gemm", {a, b, c}, attrs);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Values<float>((*out)[0]), ElementsAre(38.5, 45, 86.5, 101));
  auto no_bias = RunOp("Gemm", {F32({1, 2}, {1, 2}), F32({2, 1}, {3, 4})});
  ASSERT_TRUE(no_bias.ok()) << no_bias.status();
  EXPECT_THAT(Values<float>((*no_bias)[0]), ElementsAre(11));
  EXPECT_FALSE(RunOp("Gemm", {F32({1, 2}, {1, 2}), F32({2, 1}, {3, 4}), F32({3}, {1, 1, 1})}).ok());
}

}  // namespace
}  // namespace shapeshift
