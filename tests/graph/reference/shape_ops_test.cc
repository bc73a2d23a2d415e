#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/graph/reference/kernel_test_util.h"

namespace shapeshift {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace shapeshift::kernel_testing;

TEST(ShapeOpsKernelTest, ReshapeZeroMinusOneAndAllowzero) {
  Tensor x = F32({2, 3, 4}, std::vector<float>(24, 1.f));
  auto out = RunOp("Reshape", {x, I64({3}, {0, -1, 2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT((*out)[0].shape(), ElementsAre(2, 6, 2));
  EXPECT_FALSE(RunOp("Reshape", {x, I64({2}, {-1, -1})}).ok());
  Attributes allowzero;
  allowzero.Set("allowzero", int64_t{1});
  Tensor empty = F32({0, 3}, {});
  auto zero = RunOp("Reshape", {empty, I64({2}, {3, 0})}, allowzero);
  ASSERT_TRUE(zero.ok()) << zero.status();
  EXPECT_THAT((*zero)[0].shape(), ElementsAre(3, 0));
  auto mismatch = RunOp("Reshape", {x, I64({1}, {5})});
  ASSERT_FALSE(mismatch.ok());
  EXPECT_THAT(mismatch.status().message(), HasSubstr("cannot reshape"));
}

TEST(ShapeOpsKernelTest, FlattenSqueezeUnsqueezeAcrossOpsets) {
  Tensor x = F32({2, 1, 3}, {1, 2, 3, 4, 5, 6});
  Attributes axis;
  axis.Set("axis", int64_t{-1});
  EXPECT_THAT((*RunOp("Flatten", {x}, axis))[0].shape(), ElementsAre(2, 3));
  axis.Set("axis", int64_t{0});
  EXPECT_THAT((*RunOp("Flatten", {x}, axis))[0].shape(), ElementsAre(1, 6));

  EXPECT_THAT((*RunOp("Squeeze", {x}))[0].shape(), ElementsAre(2, 3));
  EXPECT_THAT((*RunOp("Squeeze", {x, I64({1}, {-2})}))[0].shape(), ElementsAre(2, 3));
  Attributes axes11;
  axes11.Set("axes", std::vector<int64_t>{1});
  EXPECT_THAT((*RunOp("Squeeze", {x}, axes11, 11))[0].shape(), ElementsAre(2, 3));
  EXPECT_FALSE(RunOp("Squeeze", {x, I64({1}, {0})}).ok());

  Tensor v = F32({3}, {1, 2, 3});
  EXPECT_THAT((*RunOp("Unsqueeze", {v, I64({2}, {2, 0})}))[0].shape(), ElementsAre(1, 3, 1));
  Attributes unsq11;
  unsq11.Set("axes", std::vector<int64_t>{-1});
  EXPECT_THAT((*RunOp("Unsqueeze", {v}, unsq11, 11))[0].shape(), ElementsAre(3, 1));
}

TEST(ShapeOpsKernelTest, TransposeDefaultAndPerm) {
  Tensor x = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  auto t = RunOp("Transpose", {x});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_THAT((*t)[0].shape(), ElementsAre(3, 2));
  EXPECT_THAT(Values<float>((*t)[0]), ElementsAre(1, 4, 2, 5, 3, 6));
  Tensor y = I64({1, 2, 2}, {1, 2, 3, 4});
  Attributes perm;
  perm.Set("perm", std::vector<int64_t>{2, 0, 1});
  auto p = RunOp("Transpose", {y}, perm);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_THAT((*p)[0].shape(), ElementsAre(2, 1, 2));
  EXPECT_THAT(Values<int64_t>((*p)[0]), ElementsAre(1, 3, 2, 4));
}

TEST(ShapeOpsKernelTest, ExpandAndTile) {
  Tensor x = F32({2, 1}, {1, 2});
  auto e = RunOp("Expand", {x, I64({3}, {2, 1, 3})});
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_THAT((*e)[0].shape(), ElementsAre(2, 2, 3));
  EXPECT_THAT(Values<float>((*e)[0]), ElementsAre(1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2));
  auto t = RunOp("Tile", {F32({1, 2}, {1, 2}), I64({2}, {2, 2})});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_THAT((*t)[0].shape(), ElementsAre(2, 4));
  EXPECT_THAT(Values<float>((*t)[0]), ElementsAre(1, 2, 1, 2, 1, 2, 1, 2));
  EXPECT_FALSE(RunOp("Tile", {F32({1, 2}, {1, 2}), I64({2}, {int64_t{1} << 62, 1})}).ok());
  EXPECT_FALSE(RunOp("Reshape", {x, I64({3}, {int64_t{1} << 30, int64_t{1} << 30, -1})}).ok());
}

TEST(ShapeOpsKernelTest, ShapeWithStartEndAndSize) {
  Tensor x = F32({2, 3, 4}, std::vector<float>(24, 0.f));
  EXPECT_THAT(Values<int64_t>((*RunOp("Shape", {x}))[0]), ElementsAre(2, 3, 4));
  Attributes a;
  a.Set("start", int64_t{-2});
  a.Set("end", int64_t{10});
  EXPECT_THAT(Values<int64_t>((*RunOp("Shape", {x}, a))[0]), ElementsAre(3, 4));
  auto size = RunOp("Size", {x});
  ASSERT_TRUE(size.ok());
  EXPECT_EQ((*size)[0].rank(), 0);
  EXPECT_EQ((*size)[0].GetAsInt64(0), 24);
}

TEST(ShapeOpsKernelTest, DropoutIsIdentityAtInference) {
  Tensor x = F32({2}, {1, 2});
  auto out = RunOp("Dropout", {x}, {}, 13, /*num_outputs=*/2);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Values<float>((*out)[0]), ElementsAre(1, 2));
  EXPECT_THAT(Values<uint8_t>((*out)[1]), ElementsAre(1, 1));
  Tensor ratio = F32({}, {0.5f});
  Tensor training = Bool({}, {1});
  auto train = RunOp("Dropout", {x, ratio, training});
  ASSERT_FALSE(train.ok());
  EXPECT_EQ(train.status().code(), absl::StatusCode::kUnimplemented);
  Tensor zero = F32({}, {0.f});
  EXPECT_TRUE(RunOp("Dropout", {x, zero, training}).ok());
}

}  // namespace
}  // namespace shapeshift
