// NaN, infinities and overflow in the reference kernels, with ONNX Runtime's
// semantics (each expectation below was checked against onnxruntime 1.32,
// layer norms in rows of 8, where ORT runs its vectorized kernel; the one
// 4-element row is where ORT's scalar loop differs, see below).
// tests/runtime/special_values_test.cc compares whole committed cases.
#include <cmath>
#include <limits>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/graph/reference/kernel_test_util.h"

namespace shapeshift {
namespace {

using ::testing::ElementsAre;
using ::testing::FloatEq;
using ::testing::IsNan;
using namespace shapeshift::kernel_testing;

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kMax = std::numeric_limits<float>::max();

std::vector<float> Run1(const std::string& op, const std::vector<Tensor>& in, const Attributes& attrs = {}) {
  auto out = RunOp(op, in, attrs);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? Values<float>((*out)[0]) : std::vector<float>{};
}

TEST(SpecialValuesKernelTest, ReluKeepsNanAndNegativeZero) {
  std::vector<float> y = Run1("Relu", {F32({5}, {kNan, 1, -2, -kInf, -0.0f})});
  EXPECT_THAT(y, ElementsAre(IsNan(), 1, 0, 0, 0));
  EXPECT_TRUE(std::signbit(y[4]));  // ORT returns -0 for -0
}

TEST(SpecialValuesKernelTest, MaxAndMinPropagateNanFromEitherSide) {
  Tensor a = F32({4}, {kNan, 1, 2, kNan});
  Tensor b = F32({4}, {1, kNan, 3, kNan});
  EXPECT_THAT(Run1("Max", {a, b}), ElementsAre(IsNan(), IsNan(), 3, IsNan()));
  EXPECT_THAT(Run1("Min", {a, b}), ElementsAre(IsNan(), IsNan(), 2, IsNan()));
  EXPECT_THAT(Run1("Max", {b, a, b}), ElementsAre(IsNan(), IsNan(), 3, IsNan()));
}

TEST(SpecialValuesKernelTest, ClipKeepsNanElementsAndIgnoresNanBounds) {
  Tensor x = F32({5}, {kNan, 5, -5, kInf, -kInf});
  EXPECT_THAT(Run1("Clip", {x, F32({}, {-1}), F32({}, {1})}), ElementsAre(IsNan(), 1, -1, 1, -1));
  // ORT: a NaN bound leaves that side unclipped.
  EXPECT_THAT(Run1("Clip", {x, F32({}, {kNan}), F32({}, {1})}), ElementsAre(IsNan(), 1, -5, 1, -kInf));
  EXPECT_THAT(Run1("Clip", {x, F32({}, {-1}), F32({}, {kNan})}), ElementsAre(IsNan(), 5, -1, kInf, -1));
}

TEST(SpecialValuesKernelTest, LeakyReluPreluAndCeluKeepNan) {
  Tensor x = F32({3}, {kNan, -1, -kInf});
  EXPECT_THAT(Run1("LeakyRelu", {x}), ElementsAre(IsNan(), FloatEq(-0.01f), -kInf));
  EXPECT_THAT(Run1("PRelu", {x, F32({3}, {0.5f, kNan, 0.5f})}), ElementsAre(IsNan(), IsNan(), -kInf));
  EXPECT_THAT(Run1("Celu", {x}), ElementsAre(IsNan(), FloatEq(std::expm1(-1.0f)), -1));
}

TEST(SpecialValuesKernelTest, ReduceMaxAndMinOfARowWithNanAreNanWhereverItIs) {
  Tensor x = F32({3, 4}, {kNan, 1, 2, 3, 1, 2, 3, kNan, 1, kInf, 2, -kInf});
  Attributes attrs;
  attrs.Set("axes", std::vector<int64_t>{1});
  attrs.Set("keepdims", int64_t{0});
  EXPECT_THAT(Run1("ReduceMax", {x}, attrs), ElementsAre(IsNan(), IsNan(), kInf));
  EXPECT_THAT(Run1("ReduceMin", {x}, attrs), ElementsAre(IsNan(), IsNan(), -kInf));
}

// Sums overflow where f32 sums must: the mean of a row of FLT_MAX is inf.
TEST(SpecialValuesKernelTest, ReduceMeanOfASumBeyondTheF32RangeIsInf) {
  Attributes attrs;
  attrs.Set("axes", std::vector<int64_t>{1});
  attrs.Set("keepdims", int64_t{0});
  EXPECT_THAT(Run1("ReduceMean", {F32({2, 2}, {kMax, kMax, -kMax, -kMax})}, attrs), ElementsAre(kInf, -kInf));
}

// A dot product beyond the f32 range is inf before Gemm's alpha scales it.
TEST(SpecialValuesKernelTest, GemmDotProductOverflowsBeforeAlpha) {
  Attributes attrs;
  attrs.Set("alpha", 0.5f);
  EXPECT_THAT(Run1("Gemm", {F32({1, 2}, {kMax, kMax}), F32({2, 1}, {1, 1})}, attrs), ElementsAre(kInf));
  EXPECT_THAT(Run1("Gemm", {F32({1, 2}, {kMax, -kMax}), F32({2, 1}, {1, 1})}, attrs), ElementsAre(0));
}

TEST(SpecialValuesKernelTest, SoftmaxRowsWithInfinitiesOrNan) {
  Tensor x = F32({5, 3}, {kInf, 1, 2, kNan, 1, 2, -kInf, -kInf, -kInf, -kInf, 0, 0, kMax, kMax, 0});
  std::vector<float> y = Run1("Softmax", {x});
  ASSERT_EQ(y.size(), 15u);
  for (int i = 0; i < 9; ++i) EXPECT_TRUE(std::isnan(y[i])) << i;  // +inf, NaN, all -inf: NaN rows
  EXPECT_THAT(std::vector<float>(y.begin() + 9, y.end()), ElementsAre(0, 0.5f, 0.5f, 0.5f, 0.5f, 0));
}

Tensor Ones(int64_t n) { return F32({n}, std::vector<float>(n, 1.0f)); }

// The squares overflow f32, so the variance is +inf, InvStdDev 0 and Y = B.
TEST(SpecialValuesKernelTest, LayerNormWhoseSquaresOverflowIsTheBias) {
  Tensor x = F32({2, 8}, {-0.0f, 3e38f, -3e38f, 1e-45f, 0, 0, 0, 0, 1e20f, -1e20f, 0, 0, 0, 0, 0, 0});
  Tensor bias = F32({8}, {0.5f, 0, -0.5f, 0, 0, 0, 0, 0});
  auto out = RunOp("LayerNormalization", {x, Ones(8), bias}, {}, 17, /*num_outputs=*/3);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Values<float>((*out)[0]),
              ElementsAre(0.5f, 0, -0.5f, 0, 0, 0, 0, 0, 0.5f, 0, -0.5f, 0, 0, 0, 0, 0));
  EXPECT_THAT(Values<float>((*out)[2]), ElementsAre(0, 0));  // InvStdDev
}

// The row of 4: ONNX Runtime's scalar loop for rows shorter than 8
// (Welford's update) overflows in its running mean and gives NaN; its
// vectorized kernel gives B for the same values in a row of 8 (above), and
// so does shapeshift at every length (graph/reference/normalization.cc).
TEST(SpecialValuesKernelTest, LayerNormOfTheShortOverflowingRowIsTheBiasAtEveryLength) {
  Tensor x = F32({1, 4}, {-0.0f, 3e38f, -3e38f, 1e-45f});
  EXPECT_THAT(Run1("LayerNormalization", {x, Ones(4), F32({4}, {1, 2, 3, 4})}), ElementsAre(1, 2, 3, 4));
}

TEST(SpecialValuesKernelTest, LayerNormMeanDoesNotOverflow) {
  // A row of FLT_MAX: the sum overflows f32, the mean does not; variance 0.
  std::vector<float> rows(16, 0.0f);
  for (int i = 0; i < 8; ++i) rows[i] = kMax;
  for (int i = 8; i < 14; ++i) rows[i] = kMax;
  Tensor bias = F32({8}, {0.25f, 0, 0, 0, 0, 0, 0, 0});
  auto out = RunOp("LayerNormalization", {F32({2, 8}, rows), Ones(8), bias}, {}, 17, /*num_outputs=*/2);
  ASSERT_TRUE(out.ok()) << out.status();
  // Row 2: mean 3/4 FLT_MAX, (x - mean)^2 overflows: Y = B.
  EXPECT_THAT(Values<float>((*out)[0]), ElementsAre(0.25f, 0, 0, 0, 0, 0, 0, 0, 0.25f, 0, 0, 0, 0, 0, 0, 0));
  EXPECT_THAT(Values<float>((*out)[1]), ElementsAre(kMax, FloatEq(kMax * 0.75f)));
}

TEST(SpecialValuesKernelTest, LayerNormWithNanOrInfIsANanRow) {
  std::vector<float> rows = {kNan, 1, 2, 3, 4, 5, 6, 7, 1, 2, kInf, 3, 4, 5, 6, 7, 1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<float> y = Run1("LayerNormalization", {F32({3, 8}, rows), Ones(8)});
  for (int i = 0; i < 16; ++i) EXPECT_TRUE(std::isnan(y[i])) << i;
  for (int i = 16; i < 24; ++i) EXPECT_TRUE(std::isfinite(y[i])) << i;
}

// x - mean beyond the f32 range is infinite, times InvStdDev 0: NaN there.
TEST(SpecialValuesKernelTest, LayerNormWhoseCenteredValueOverflowsIsNanThere) {
  Tensor x = F32({1, 8}, {kMax, kMax, kMax, -kMax, 0, 0, 0, 0});  // x[3] - mean = -1.25 FLT_MAX
  EXPECT_THAT(Run1("LayerNormalization", {x, Ones(8)}), ElementsAre(0, 0, 0, IsNan(), 0, 0, 0, 0));
}

}  // namespace
}  // namespace shapeshift
