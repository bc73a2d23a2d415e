#include <cmath>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/graph/reference/kernel_test_util.h"

namespace shapeshift {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace shapeshift::kernel_testing;

// out = x*a + rotate_half(x)*b, rotate_half([x1, x2]) = [-x2, x1] on the last
// axis; a and b broadcast (here a per column, b per row, to a larger result).
TEST(RotaryKernelTest, RotateHalfMulAddRotatesTheLastAxisAndBroadcasts) {
  Tensor x = F32({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  Tensor a = F32({1, 4}, {1, 0.5f, 2, -1});
  Tensor b = F32({2, 1}, {10, -1});
  auto out = RunOp("RotateHalfMulAdd", {x, a, b});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{2, 4}));
  EXPECT_THAT(Values<float>((*out)[0]), ElementsAre(-29, -39, 16, 16, 12, 11, 9, -14));

  // a result larger than x: x's rows are reused for each leading index of b.
  auto wide = RunOp("RotateHalfMulAdd", {F32({2}, {1, 2}), F32({1}, {0}), F32({3, 1}, {1, 2, 3})});
  ASSERT_TRUE(wide.ok()) << wide.status();
  EXPECT_THAT(Values<float>((*wide)[0]), ElementsAre(-2, 1, -4, 2, -6, 3));
}

// Each product and the sum are rounded once, in the decomposed graph's order
// (Mul, Mul, Add): (1 + 2^-12)^2 rounds to 1 + 2^-11 before the sum, so
// out[0] is 0, where the exact value (or one fused multiply-add) is 2^-24.
// On two channels both rotations are [-x1, x0].
TEST(RotaryKernelTest, BothRotationsRoundLikeTheDecomposedGraph) {
  const float e12 = 1 + std::ldexp(1.0f, -12);
  const float e11 = 1 + std::ldexp(1.0f, -11);
  Tensor x = F32({2}, {e12, e11});
  Tensor a = F32({2}, {e12, 0});
  Tensor b = F32({2}, {1, 0});
  auto mul = RunOp("Mul", {x, a});
  auto rot = RunOp("Mul", {F32({2}, {-e11, e12}), b});
  ASSERT_TRUE(mul.ok() && rot.ok());
  auto sum = RunOp("Add", {(*mul)[0], (*rot)[0]});
  ASSERT_TRUE(sum.ok());
  for (const char* op : {"RotateHalfMulAdd", "RotateEveryTwoMulAdd"}) {
    SCOPED_TRACE(op);
    auto out = RunOp(op, {x, a, b});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_THAT(Values<float>((*out)[0]), ElementsAre(0, 0));
    EXPECT_EQ(Values<float>((*out)[0]), Values<float>((*sum)[0]));
  }
}

TEST(RotaryKernelTest, RotateHalfMulAddRefusesAnOddLastDimAndHalfPrecision) {
  auto odd = RunOp("RotateHalfMulAdd", {F32({3}, {1, 2, 3}), F32({1}, {1}), F32({1}, {1})});
  ASSERT_FALSE(odd.ok());
  EXPECT_EQ(odd.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(odd.status().message(), HasSubstr("even"));
  Tensor h = Tensor::Zeros(DType::kF16, {2}).value();
  auto half = RunOp("RotateHalfMulAdd", {h, h, h});
  ASSERT_FALSE(half.ok());
  EXPECT_EQ(half.status().code(), absl::StatusCode::kUnimplemented);
}

// rotate_every_two([x0, x1, x2, x3]) = [-x1, x0, -x3, x2] (GPT-J's
// interleaved pairs); a per column, b per row, as above.
TEST(RotaryKernelTest, RotateEveryTwoMulAddRotatesPairsAndBroadcasts) {
  Tensor x = F32({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  Tensor a = F32({1, 4}, {1, 0.5f, 2, -1});
  Tensor b = F32({2, 1}, {10, -1});
  auto out = RunOp("RotateEveryTwoMulAdd", {x, a, b});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{2, 4}));
  EXPECT_THAT(Values<float>((*out)[0]), ElementsAre(-19, 11, -34, 26, 11, -2, 22, -15));

  // a result larger than x: x's rows are reused for each leading index of b.
  auto wide = RunOp("RotateEveryTwoMulAdd", {F32({2}, {1, 2}), F32({1}, {0}), F32({3, 1}, {1, 2, 3})});
  ASSERT_TRUE(wide.ok()) << wide.status();
  EXPECT_THAT(Values<float>((*wide)[0]), ElementsAre(-2, 1, -4, 2, -6, 3));
}

// rotary_dim 4 of 6 channels: the first four rotate as above (a and b have
// the rotated part's last dim), the last two pass through unchanged.
TEST(RotaryKernelTest, RotateEveryTwoMulAddPassesTheChannelsPastRotaryDimThrough) {
  Attributes attrs;
  attrs.Set("rotary_dim", int64_t{4});
  Tensor x = F32({2, 6}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  auto out = RunOp("RotateEveryTwoMulAdd", {x, F32({4}, {1, 0.5f, 2, -1}), F32({2, 1}, {10, -1})}, attrs);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{2, 6}));
  EXPECT_THAT(Values<float>((*out)[0]), ElementsAre(-19, 11, -34, 26, 5, 6, 15, -3, 28, -19, 11, 12));

  // The rotated part may not widen X: it is concatenated with X[..., 4:].
  auto wide = RunOp("RotateEveryTwoMulAdd", {F32({6}, {1, 2, 3, 4, 5, 6}), F32({4}, {1, 1, 1, 1}),
                                             F32({2, 1}, {1, 1})},
                    attrs);
  ASSERT_FALSE(wide.ok());
  EXPECT_EQ(wide.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(wide.status().message(), HasSubstr("leading dims"));
}

// GPT-NeoX / Phi: rotary_dim 4 of 6 channels, rotate_half over the first
// four ([-x2, -x3, x0, x1]), the last two pass through unchanged.
TEST(RotaryKernelTest, RotateHalfMulAddPassesTheChannelsPastRotaryDimThrough) {
  Attributes attrs;
  attrs.Set("rotary_dim", int64_t{4});
  Tensor x = F32({2, 6}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  auto out = RunOp("RotateHalfMulAdd", {x, F32({4}, {1, 0.5f, 2, -1}), F32({2, 1}, {10, -1})}, attrs);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{2, 6}));
  EXPECT_THAT(Values<float>((*out)[0]), ElementsAre(-29, -39, 16, 16, 5, 6, 16, 14, 11, -18, 11, 12));
}

TEST(RotaryKernelTest, RotaryMulAddRefusesAnOddOrOutOfRangeRotaryDim) {
  Tensor x = F32({6}, {1, 2, 3, 4, 5, 6});
  Tensor one = F32({1}, {1});
  for (const char* op : {"RotateEveryTwoMulAdd", "RotateHalfMulAdd"}) {
    for (int64_t r : {0, 3, 8}) {
      SCOPED_TRACE(absl::StrCat(op, " rotary_dim=", r));
      Attributes attrs;
      attrs.Set("rotary_dim", r);
      auto out = RunOp(op, {x, one, one}, attrs);
      ASSERT_FALSE(out.ok());
      EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_THAT(out.status().message(), HasSubstr("rotary_dim"));
    }
  }
  auto odd = RunOp("RotateEveryTwoMulAdd", {F32({3}, {1, 2, 3}), one, one});
  ASSERT_FALSE(odd.ok());
  EXPECT_THAT(odd.status().message(), HasSubstr("even"));
  Tensor h = Tensor::Zeros(DType::kF16, {2}).value();
  auto half = RunOp("RotateEveryTwoMulAdd", {h, h, h});
  ASSERT_FALSE(half.ok());
  EXPECT_EQ(half.status().code(), absl::StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace shapeshift
