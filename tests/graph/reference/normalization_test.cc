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

TEST(NormalizationKernelTest, SoftmaxOpset13IsPerAxisButOpset11CoercesTo2D) {
  Tensor x = F32({1, 2, 2}, {0, 0, 0, std::log(3.f)});
  Attributes axis1;
  axis1.Set("axis", int64_t{1});
  auto v13 = RunOp("Softmax", {x}, axis1, 13);
  ASSERT_TRUE(v13.ok()) << v13.status();
  EXPECT_THAT(Values<float>((*v13)[0]),
              ElementsAre(FloatNear(0.5, 1e-6), FloatNear(0.25, 1e-6), FloatNear(0.5, 1e-6),
                          FloatNear(0.75, 1e-6)));
  auto v11 = RunOp("Softmax", {x}, axis1, 11);
  ASSERT_TRUE(v11.ok()) << v11.status();
  EXPECT_THAT(Values<float>((*v11)[0]),
              ElementsAre(FloatNear(1.f / 6, 1e-6), FloatNear(1.f / 6, 1e-6),
                          FloatNear(1.f / 6, 1e-6), FloatNear(0.5, 1e-6)));
}

// S = 2 queries over T = 3 keys (one past key): query i sees keys j <= i + 1;
// with window 1 only key i + 1. Masked entries add fill, allowed ones M.
TEST(NormalizationKernelTest, CausalSoftmaxMasksKeysPastEachQueryAndOutsideTheWindow) {
  Tensor x = F32({1, 2, 3}, {0, 0, 0, 0, 0, 0});
  Attributes causal;
  causal.Set("fill", -std::numeric_limits<float>::infinity());
  auto out = RunOp("CausalSoftmax", {x}, causal, 17);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Values<float>((*out)[0]), ElementsAre(0.5f, 0.5f, 0.0f, FloatNear(1.f / 3, 1e-7),
                                                    FloatNear(1.f / 3, 1e-7), FloatNear(1.f / 3, 1e-7)));
  Attributes window = causal;
  window.Set("window", int64_t{1});
  auto windowed = RunOp("CausalSoftmax", {x}, window, 17);
  ASSERT_TRUE(windowed.ok()) << windowed.status();
  EXPECT_THAT(Values<float>((*windowed)[0]), ElementsAre(0.0f, 1.0f, 0.0f, 0.0f, 0.0f, 1.0f));
  // M = -inf on key 1 masks it for every query: query 0 then sees only key 0.
  auto padded = RunOp("CausalSoftmax", {x, F32({1, 1, 3}, {0, -std::numeric_limits<float>::infinity(), 0})}, causal, 17);
  ASSERT_TRUE(padded.ok()) << padded.status();
  EXPECT_THAT(Values<float>((*padded)[0]), ElementsAre(1.0f, 0.0f, 0.0f, 0.5f, 0.0f, 0.5f));
  Attributes no_fill;
  EXPECT_FALSE(RunOp("CausalSoftmax", {x}, no_fill, 17).ok());
}

// A bool M selects (masked_fill's form): (allowed and M) ? X : fill. A NaN or
// infinite score where the mask is off never reaches the softmax (an added
// fill would carry it); a row with every key off is the softmax of fills.
TEST(NormalizationKernelTest, CausalSoftmaxWithABoolMaskSelectsTheScores) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float lowest = std::numeric_limits<float>::lowest();
  Tensor x = F32({1, 2, 3}, {0, nan, std::numeric_limits<float>::infinity(), 0, nan, 0});
  Attributes causal;
  causal.Set("fill", lowest);
  Tensor keep = Tensor::FromVector<uint8_t>(DType::kBool, {1, 1, 3}, {1, 0, 1});  // key 1 padded
  auto out = RunOp("CausalSoftmax", {x, keep}, causal, 17);
  ASSERT_TRUE(out.ok()) << out.status();
  // Query 0 sees keys 0 and 1 (1 padded: its NaN is replaced); query 1 sees 0 and 2.
  EXPECT_THAT(Values<float>((*out)[0]), ElementsAre(1.0f, 0.0f, 0.0f, 0.5f, 0.0f, 0.5f));
  Tensor none = Tensor::FromVector<uint8_t>(DType::kBool, {1, 1, 3}, {0, 0, 0});
  auto masked = RunOp("CausalSoftmax", {x, none}, causal, 17);
  ASSERT_TRUE(masked.ok()) << masked.status();
  EXPECT_THAT(Values<float>((*masked)[0]), ElementsAre(FloatNear(1.f / 3, 1e-7), FloatNear(1.f / 3, 1e-7),
                                                       FloatNear(1.f / 3, 1e-7), FloatNear(1.f / 3, 1e-7),
                                                       FloatNear(1.f / 3, 1e-7), FloatNear(1.f / 3, 1e-7)));
  EXPECT_FALSE(RunOp("CausalSoftmax", {x, Tensor::FromVector<int64_t>(DType::kI64, {3}, {1, 1, 1})}, causal, 17).ok());
}

// The keep stage (GPT-Neo's Where over its `bias` table): X is first
// keep(i, j) ? X : keep_fill, keep a band of 2 here (query i keeps keys i and
// i + 1 of T = 3, past 1), then the mask stage adds M or fill as before.
// A NaN score the keep stage drops never reaches the result; keep_fill +
// fill is -inf; a padded key M = lowest makes keep_fill + M.
TEST(NormalizationKernelTest, CausalSoftmaxKeepStageSelectsBeforeTheMaskIsAdded) {
  const float lowest = std::numeric_limits<float>::lowest();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = F32({1, 2, 3}, {1, 2, 3, nan, 4, 6});
  Attributes attrs;
  attrs.Set("fill", lowest);
  attrs.Set("keep_fill", lowest);
  attrs.Set("keep_window", int64_t{2});
  auto out = RunOp("CausalSoftmax", {x, F32({1, 1, 3}, {lowest, 0, 0})}, attrs, 17);
  ASSERT_TRUE(out.ok()) << out.status();
  // Query 0: [1 + lowest, 2, lowest + lowest = -inf]; query 1: [lowest + lowest, 4, 6].
  const float e2 = std::exp(-2.0f) / (1 + std::exp(-2.0f));
  EXPECT_THAT(Values<float>((*out)[0]),
              ElementsAre(0.0f, 1.0f, 0.0f, 0.0f, FloatNear(e2, 1e-7), FloatNear(1 - e2, 1e-7)));
  // Every key padded: query 0 is [1 + lowest, 2 + lowest, -inf] = [lowest, lowest, -inf].
  auto padded = RunOp("CausalSoftmax", {x, F32({1, 1, 3}, {lowest, lowest, lowest})}, attrs, 17);
  ASSERT_TRUE(padded.ok()) << padded.status();
  EXPECT_THAT(Values<float>((*padded)[0]), ElementsAre(0.5f, 0.5f, 0.0f, 0.0f, 0.5f, 0.5f));
}

TEST(NormalizationKernelTest, LogSoftmaxIsStableForLargeInputs) {
  auto out = RunOp("LogSoftmax", {F32({2}, {1000, 1000})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Values<float>((*out)[0]),
              ElementsAre(FloatNear(-std::log(2.f), 1e-6), FloatNear(-std::log(2.f), 1e-6)));
}

TEST(NormalizationKernelTest, LayerNormalizationWithStatsOutputs) {
  Tensor x = F32({2, 2}, {1, 3, 2, 6});
  Tensor scale = F32({2}, {1, 2});
  Tensor bias = F32({1}, {10});
  Attributes eps;
  eps.Set("epsilon", 0.f);
  auto out = RunOp("LayerNormalization", {x, scale, bias}, eps, 17, /*num_outputs=*/3);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Values<float>((*out)[0]), ElementsAre(9, 12, 9, 12));
  EXPECT_THAT((*out)[1].shape(), ElementsAre(2, 1));
  EXPECT_THAT(Values<float>((*out)[1]), ElementsAre(2, 4));
  EXPECT_THAT(Values<float>((*out)[2]), ElementsAre(1, 0.5));
  auto no_bias = RunOpWithAbsent("LayerNormalization", {&x, &scale, nullptr});
  ASSERT_TRUE(no_bias.ok()) << no_bias.status();
  EXPECT_EQ(no_bias->size(), 1u);
}

// y = x / sqrt(mean(x^2) + eps) * scale; a sum of squares past FLT_MAX is
// +inf, so the row is 0 (x * 0), as the decomposed f32 form computes it.
TEST(NormalizationKernelTest, RMSNormalizationScalesByTheRootMeanSquare) {
  Tensor x = F32({2, 2}, {3, 4, 1e30f, 1e30f});
  Tensor scale = F32({2}, {1, 2});
  Attributes eps;
  eps.Set("epsilon", 0.f);
  auto out = RunOp("RMSNormalization", {x, scale}, eps, 23);
  ASSERT_TRUE(out.ok()) << out.status();
  const float rms = std::sqrt(12.5f);
  EXPECT_THAT(Values<float>((*out)[0]),
              ElementsAre(FloatNear(3 / rms, 1e-6), FloatNear(8 / rms, 1e-6), 0, 0));
  auto bad_scale = RunOp("RMSNormalization", {x, F32({3}, {1, 1, 1})}, eps, 23);
  EXPECT_FALSE(bad_scale.ok());
}

}  // namespace
}  // namespace shapeshift
