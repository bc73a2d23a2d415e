#include <limits>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/graph/reference/kernel_test_util.h"

namespace shapeshift {
namespace {

using ::testing::ElementsAre;
using namespace shapeshift::kernel_testing;

Attributes Axis(int64_t axis) {
  Attributes a;
  a.Set("axis", axis);
  return a;
}

TEST(IndexingKernelTest, ConcatOnInnerAxis) {
  auto out = RunOp("Concat", {F32({2, 1}, {1, 2}), F32({2, 2}, {3, 4, 5, 6})}, Axis(-1));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT((*out)[0].shape(), ElementsAre(2, 3));
  EXPECT_THAT(Values<float>((*out)[0]), ElementsAre(1, 3, 4, 2, 5, 6));
  EXPECT_FALSE(RunOp("Concat", {F32({2, 1}, {1, 2}), F32({1, 1}, {3})}, Axis(1)).ok());
}

TEST(IndexingKernelTest, SplitByInputAttributeAndEqualParts) {
  Tensor x = F32({5}, {1, 2, 3, 4, 5});
  auto by_input = RunOp("Split", {x, I64({2}, {2, 3})}, {}, 13, 2);
  ASSERT_TRUE(by_input.ok()) << by_input.status();
  EXPECT_THAT(Values<float>((*by_input)[1]), ElementsAre(3, 4, 5));
  Attributes split11;
  split11.Set("split", std::vector<int64_t>{4, 1});
  auto by_attr = RunOp("Split", {x}, split11, 11, 2);
  ASSERT_TRUE(by_attr.ok()) << by_attr.status();
  EXPECT_THAT(Values<float>((*by_attr)[1]), ElementsAre(5));
  auto equal = RunOp("Split", {F32({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8})}, Axis(1), 13, 2);
  ASSERT_TRUE(equal.ok()) << equal.status();
  EXPECT_THAT(Values<float>((*equal)[0]), ElementsAre(1, 2, 5, 6));
  EXPECT_FALSE(RunOp("Split", {x, I64({2}, {2, 2})}, {}, 13, 2).ok());
}

TEST(IndexingKernelTest, SliceNegativeStepsAndClamping) {
  Tensor x = I64({5}, {0, 1, 2, 3, 4});
  auto rev = RunOp("Slice", {x, I64({1}, {-1}), I64({1}, {-1000}), I64({1}, {0}), I64({1}, {-2})});
  ASSERT_TRUE(rev.ok()) << rev.status();
  EXPECT_THAT(Values<int64_t>((*rev)[0]), ElementsAre(4, 2, 0));
  auto clamp = RunOp("Slice", {x, I64({1}, {2}), I64({1}, {1000})});
  ASSERT_TRUE(clamp.ok()) << clamp.status();
  EXPECT_THAT(Values<int64_t>((*clamp)[0]), ElementsAre(2, 3, 4));
  const int64_t big = std::numeric_limits<int64_t>::max();
  auto huge_step = RunOp("Slice", {x, I64({1}, {1}), I64({1}, {big}), I64({1}, {0}), I64({1}, {big})});
  ASSERT_TRUE(huge_step.ok()) << huge_step.status();
  EXPECT_THAT(Values<int64_t>((*huge_step)[0]), ElementsAre(1));
  auto huge_back = RunOp("Slice", {x, I64({1}, {big}), I64({1}, {-big}), I64({1}, {0}),
                                   I64({1}, {std::numeric_limits<int64_t>::lowest()})});
  ASSERT_TRUE(huge_back.ok()) << huge_back.status();
  EXPECT_THAT(Values<int64_t>((*huge_back)[0]), ElementsAre(4));
  auto empty = RunOp("Slice", {x, I64({1}, {10}), I64({1}, {20})});
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ((*empty)[0].num_elements(), 0);
  Tensor m = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  Attributes old;
  old.Set("starts", std::vector<int64_t>{1});
  old.Set("ends", std::vector<int64_t>{3});
  old.Set("axes", std::vector<int64_t>{1});
  auto v9 = RunOp("Slice", {m}, old, /*opset=*/9);
  ASSERT_TRUE(v9.ok()) << v9.status();
  EXPECT_THAT((*v9)[0].shape(), ElementsAre(2, 2));
  EXPECT_THAT(Values<float>((*v9)[0]), ElementsAre(2, 3, 5, 6));
}

TEST(IndexingKernelTest, GatherWithNegativeIndices) {
  Tensor data = F32({3, 2}, {1, 2, 3, 4, 5, 6});
  auto rows = RunOp("Gather", {data, I64({2}, {-1, 0})});
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_THAT((*rows)[0].shape(), ElementsAre(2, 2));
  EXPECT_THAT(Values<float>((*rows)[0]), ElementsAre(5, 6, 1, 2));
  auto cols = RunOp("Gather", {data, I32({}, {1})}, Axis(1));
  ASSERT_TRUE(cols.ok()) << cols.status();
  EXPECT_THAT((*cols)[0].shape(), ElementsAre(3));
  EXPECT_THAT(Values<float>((*cols)[0]), ElementsAre(2, 4, 6));
  EXPECT_FALSE(RunOp("Gather", {data, I64({1}, {3})}).ok());
}

TEST(IndexingKernelTest, GatherElements) {
  Tensor data = F32({2, 2}, {1, 2, 3, 4});
  auto out = RunOp("GatherElements", {data, I64({2, 2}, {0, 0, 1, -2})}, Axis(1));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Values<float>((*out)[0]), ElementsAre(1, 1, 4, 3));
}

TEST(IndexingKernelTest, TriluUpperLowerWithK) {
  Tensor x = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_THAT(Values<float>((*RunOp("Trilu", {x}))[0]), ElementsAre(1, 2, 3, 0, 5, 6));
  Attributes lower;
  lower.Set("upper", int64_t{0});
  EXPECT_THAT(Values<float>((*RunOp("Trilu", {x, I64({}, {-1})}, lower))[0]),
              ElementsAre(0, 0, 0, 4, 0, 0));
}

}  // namespace
}  // namespace shapeshift
