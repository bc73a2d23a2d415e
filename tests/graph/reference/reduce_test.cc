#include <cmath>
#include <limits>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/graph/reference/kernel_test_util.h"

namespace shapeshift {
namespace {

using ::testing::ElementsAre;
using ::testing::FloatNear;
using namespace shapeshift::kernel_testing;

Attributes Axes(std::vector<int64_t> axes, int64_t keepdims) {
  Attributes a;
  a.Set("axes", std::move(axes));
  a.Set("keepdims", keepdims);
  return a;
}

TEST(ReduceKernelTest, AxesAttributeAndKeepdims) {
  Tensor x = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  auto sum = RunOp("ReduceSum", {x}, Axes({1}, 0), /*opset=*/11);
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_THAT((*sum)[0].shape(), ElementsAre(2));
  EXPECT_THAT(Values<float>((*sum)[0]), ElementsAre(6, 15));
  auto mean = RunOp("ReduceMean", {x}, Axes({-2}, 1));
  ASSERT_TRUE(mean.ok()) << mean.status();
  EXPECT_THAT((*mean)[0].shape(), ElementsAre(1, 3));
  EXPECT_THAT(Values<float>((*mean)[0]), ElementsAre(2.5, 3.5, 4.5));
}

TEST(ReduceKernelTest, AxesInputFromOpset13AndNoopWithEmptyAxes) {
  Tensor x = F32({2, 2}, {1, 2, 3, 4});
  Tensor axes = I64({1}, {0});
  auto sum = RunOp("ReduceSum", {x, axes});
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_THAT((*sum)[0].shape(), ElementsAre(1, 2));
  EXPECT_THAT(Values<float>((*sum)[0]), ElementsAre(4, 6));
  auto all = RunOp("ReduceSum", {x});
  ASSERT_TRUE(all.ok());
  EXPECT_THAT((*all)[0].shape(), ElementsAre(1, 1));
  EXPECT_THAT(Values<float>((*all)[0]), ElementsAre(10));
  Attributes noop;
  noop.Set("noop_with_empty_axes", int64_t{1});
  Tensor empty = I64({0}, {});
  auto same = RunOp("ReduceSum", {x, empty}, noop);
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_THAT(Values<float>((*same)[0]), ElementsAre(1, 2, 3, 4));
}

TEST(ReduceKernelTest, OtherReductions) {
  Tensor x = F32({3}, {1, -2, 2});
  auto value = [&](const char* op) { return (*RunOp(op, {x}))[0].GetAsDouble(0); };
  EXPECT_EQ(value("ReduceMax"), 2);
  EXPECT_EQ(value("ReduceMin"), -2);
  EXPECT_EQ(value("ReduceProd"), -4);
  EXPECT_EQ(value("ReduceL1"), 5);
  EXPECT_EQ(value("ReduceL2"), 3);
  EXPECT_EQ(value("ReduceSumSquare"), 9);
  EXPECT_NEAR(value("ReduceLogSumExp"), std::log(std::exp(1.0) + std::exp(-2.0) + std::exp(2.0)), 1e-6);
  EXPECT_NEAR((*RunOp("ReduceLogSum", {F32({2}, {1, 2})}))[0].GetAsDouble(0), std::log(3.0), 1e-6);
  auto ints = RunOp("ReduceSum", {I64({3}, {1, 2, 3})});
  ASSERT_TRUE(ints.ok());
  EXPECT_EQ((*ints)[0].dtype(), DType::kI64);
  EXPECT_EQ((*ints)[0].GetAsInt64(0), 6);
}

TEST(ReduceKernelTest, EdgeCasesStayExactAndStable) {
  auto lse = RunOp("ReduceLogSumExp", {F32({2}, {1000, 1000})});
  ASSERT_TRUE(lse.ok()) << lse.status();
  EXPECT_NEAR((*lse)[0].GetAsDouble(0), 1000 + std::log(2.0), 1e-3);
  Tensor empty = F32({2, 0}, {});
  Attributes axis1;
  axis1.Set("axes", std::vector<int64_t>{1});
  auto max = RunOp("ReduceMax", {empty}, axis1, 13);
  ASSERT_TRUE(max.ok()) << max.status();
  EXPECT_EQ((*max)[0].GetAsDouble(0), -std::numeric_limits<double>::infinity());
  const int64_t big = (int64_t{1} << 60) + 1;
  auto sum = RunOp("ReduceSum", {I64({2}, {big, 1})});
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_EQ((*sum)[0].GetAsInt64(0), big + 1);
}

TEST(ReduceKernelTest, ArgMaxArgMinWithTiesAndKeepdims) {
  Tensor x = F32({2, 3}, {1, 3, 3, 2, 0, 0});
  Attributes a;
  a.Set("axis", int64_t{1});
  auto first = RunOp("ArgMax", {x}, a);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_THAT((*first)[0].shape(), ElementsAre(2, 1));
  EXPECT_THAT(Values<int64_t>((*first)[0]), ElementsAre(1, 0));
  a.Set("select_last_index", int64_t{1});
  a.Set("keepdims", int64_t{0});
  auto last = RunOp("ArgMin", {x}, a);
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_THAT((*last)[0].shape(), ElementsAre(2));
  EXPECT_THAT(Values<int64_t>((*last)[0]), ElementsAre(0, 2));
}

TEST(ReduceKernelTest, CumSumExclusiveAndReverse) {
  Tensor x = F32({4}, {1, 2, 3, 4});
  Tensor axis = I32({}, {0});
  EXPECT_THAT(Values<float>((*RunOp("CumSum", {x, axis}))[0]), ElementsAre(1, 3, 6, 10));
  Attributes a;
  a.Set("exclusive", int64_t{1});
  a.Set("reverse", int64_t{1});
  EXPECT_THAT(Values<float>((*RunOp("CumSum", {x, axis}, a))[0]), ElementsAre(9, 7, 4, 0));
  Tensor m = I64({2, 2}, {1, 2, 3, 4});
  EXPECT_THAT(Values<int64_t>((*RunOp("CumSum", {m, I64({}, {-1})}))[0]), ElementsAre(1, 3, 3, 7));
}

}  // namespace
}  // namespace shapeshift
