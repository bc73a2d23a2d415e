#include <cmath>
#include <limits>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/graph/reference/kernel_test_util.h"

namespace shapeshift {
namespace {

using ::testing::ElementsAre;
using ::testing::FloatNear;
using ::testing::HasSubstr;
using namespace shapeshift::kernel_testing;

TEST(ElementwiseKernelTest, AddBroadcastsLikeNumpy) {
  auto out = RunOp("Add", {F32({2, 3}, {1, 2, 3, 4, 5, 6}), F32({3}, {10, 20, 30})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT((*out)[0].shape(), ElementsAre(2, 3));
  EXPECT_THAT(Values<float>((*out)[0]), ElementsAre(11, 22, 33, 14, 25, 36));
  auto both = RunOp("Mul", {F32({2, 1}, {2, 3}), F32({1, 3}, {1, 10, 100})});
  ASSERT_TRUE(both.ok()) << both.status();
  EXPECT_THAT(Values<float>((*both)[0]), ElementsAre(2, 20, 200, 3, 30, 300));
}

TEST(ElementwiseKernelTest, IncompatibleShapesAndDTypesAreErrorsNamingTheNode) {
  auto bad = RunOp("Add", {F32({2}, {1, 2}), F32({3}, {1, 2, 3})});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("test_node"));
  EXPECT_THAT(bad.status().message(), HasSubstr("broadcast"));
  auto mixed = RunOp("Add", {F32({1}, {1}), I64({1}, {1})});
  ASSERT_FALSE(mixed.ok());
  EXPECT_EQ(mixed.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ElementwiseKernelTest, UnknownOpIsUnsupported) {
  auto unknown = RunOp("Conv", {F32({1}, {1})});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(unknown.status().message(), HasSubstr("unsupported op Conv"));
}

TEST(ElementwiseKernelTest, HalfInputsComputeInF32AndRoundBack) {
  Tensor half = Tensor::FromVector<uint16_t>(DType::kF16, {2}, {0x3c00, 0x4000});  // 1, 2
  auto sum = RunOp("Add", {half, half});
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_EQ((*sum)[0].dtype(), DType::kF16);
  EXPECT_THAT(Values<uint16_t>((*sum)[0]), ElementsAre(0x4000, 0x4400));  // 2, 4
  auto less = RunOp("Less", {half, half});
  ASSERT_TRUE(less.ok()) << less.status();
  EXPECT_EQ((*less)[0].dtype(), DType::kBool);
  Tensor bf = Tensor::FromVector<uint16_t>(DType::kBF16, {1}, {0x4040});  // 3
  auto neg = RunOp("Neg", {bf});
  ASSERT_TRUE(neg.ok()) << neg.status();
  EXPECT_EQ((*neg)[0].dtype(), DType::kBF16);
  EXPECT_EQ((*neg)[0].GetAsDouble(0), -3.0);
  // Mixed precisions are not silently unified.
  EXPECT_FALSE(RunOp("Add", {half, F32({2}, {1, 2})}).ok());
  auto norm = RunOp("LayerNormalization", {half, half});
  ASSERT_FALSE(norm.ok());
  EXPECT_EQ(norm.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(norm.status().message(), HasSubstr("f16"));
}

TEST(ElementwiseKernelTest, IntegerDivisionTruncatesAndRejectsZero) {
  auto out = RunOp("Div", {I64({2}, {7, -7}), I64({2}, {2, 2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Values<int64_t>((*out)[0]), ElementsAre(3, -3));
  EXPECT_FALSE(RunOp("Div", {I64({1}, {1}), I64({1}, {0})}).ok());
  const int64_t lowest = std::numeric_limits<int64_t>::lowest();
  auto wrap = RunOp("Div", {I64({1}, {lowest}), I64({1}, {-1})});
  ASSERT_TRUE(wrap.ok()) << wrap.status();
  EXPECT_EQ((*wrap)[0].GetAsInt64(0), lowest);
  auto mod = RunOp("Mod", {I64({1}, {lowest}), I64({1}, {-1})});
  ASSERT_TRUE(mod.ok()) << mod.status();
  EXPECT_EQ((*mod)[0].GetAsInt64(0), 0);
}

TEST(ElementwiseKernelTest, ModFollowsFmodAttribute) {
  auto python_style = RunOp("Mod", {I64({2}, {-7, 7}), I64({2}, {3, -3})});
  ASSERT_TRUE(python_style.ok()) << python_style.status();
  EXPECT_THAT(Values<int64_t>((*python_style)[0]), ElementsAre(2, -2));
  Attributes fmod;
  fmod.Set("fmod", int64_t{1});
  auto c_style = RunOp("Mod", {I64({2}, {-7, 7}), I64({2}, {3, -3})}, fmod);
  ASSERT_TRUE(c_style.ok()) << c_style.status();
  EXPECT_THAT(Values<int64_t>((*c_style)[0]), ElementsAre(-1, 1));
  EXPECT_FALSE(RunOp("Mod", {F32({1}, {1}), F32({1}, {2})}).ok());
}

TEST(ElementwiseKernelTest, PowAcceptsMixedExponentType) {
  auto out = RunOp("Pow", {F32({3}, {1, 2, 3}), I64({1}, {2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].dtype(), DType::kF32);
  EXPECT_THAT(Values<float>((*out)[0]), ElementsAre(1, 4, 9));
}

TEST(ElementwiseKernelTest, IntegerPowWithUnrepresentableResultIsAnError) {
  auto exact = RunOp("Pow", {I64({2}, {-2, 3}), F32({1}, {3})});
  ASSERT_TRUE(exact.ok()) << exact.status();
  EXPECT_THAT(Values<int64_t>((*exact)[0]), ElementsAre(-8, 27));
  // (-1)^0.5 is NaN and 10^30 overflows int64: an error, never a garbage cast.
  for (float e : {0.5f, 30.0f}) {
    auto bad = RunOp("Pow", {I64({1}, {e == 0.5f ? -1 : 10}), F32({1}, {e})});
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.status().message().find("not representable in i64"), std::string::npos)
        << bad.status();
  }
}

TEST(ElementwiseKernelTest, ComparisonsAndLogicProduceBool) {
  auto less = RunOp("Less", {I32({3}, {1, 5, 3}), I32({1}, {3})});
  ASSERT_TRUE(less.ok()) << less.status();
  EXPECT_EQ((*less)[0].dtype(), DType::kBool);
  EXPECT_THAT(Values<uint8_t>((*less)[0]), ElementsAre(1, 0, 0));
  auto xor_out = RunOp("Xor", {Bool({2, 2}, {0, 1, 0, 1}), Bool({2}, {0, 1})});
  ASSERT_TRUE(xor_out.ok()) << xor_out.status();
  EXPECT_THAT(Values<uint8_t>((*xor_out)[0]), ElementsAre(0, 0, 0, 0));
  auto not_out = RunOp("Not", {Bool({2}, {0, 1})});
  ASSERT_TRUE(not_out.ok());
  EXPECT_THAT(Values<uint8_t>((*not_out)[0]), ElementsAre(1, 0));
  EXPECT_EQ(RunOp("And", {F32({1}, {1}), F32({1}, {1})}).status().code(),
            absl::StatusCode::kUnimplemented);
}

TEST(ElementwiseKernelTest, WhereBroadcastsAllThreeInputs) {
  auto out = RunOp("Where", {Bool({2, 1}, {1, 0}), I64({3}, {1, 2, 3}), I64({1}, {-1})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT((*out)[0].shape(), ElementsAre(2, 3));
  EXPECT_THAT(Values<int64_t>((*out)[0]), ElementsAre(1, 2, 3, -1, -1, -1));
}

TEST(ElementwiseKernelTest, VariadicSumMeanMaxMin) {
  Tensor a = F32({2}, {1, 8});
  Tensor b = F32({2}, {3, 4});
  Tensor c = F32({1}, {5});
  EXPECT_THAT(Values<float>((*RunOp("Sum", {a, b, c}))[0]), ElementsAre(9, 17));
  EXPECT_THAT(Values<float>((*RunOp("Mean", {a, b, c}))[0]), ElementsAre(3, FloatNear(17.f / 3, 1e-6)));
  EXPECT_THAT(Values<float>((*RunOp("Max", {a, b, c}))[0]), ElementsAre(5, 8));
  EXPECT_THAT(Values<float>((*RunOp("Min", {a}))[0]), ElementsAre(1, 8));
}

TEST(ElementwiseKernelTest, UnaryMathWithAttributes) {
  Tensor x = F32({3}, {-1, 0, 2});
  Attributes alpha;
  alpha.Set("alpha", 0.5f);
  auto leaky = RunOp("LeakyRelu", {x}, alpha);
  ASSERT_TRUE(leaky.ok()) << leaky.status();
  EXPECT_THAT(Values<float>((*leaky)[0]), ElementsAre(-0.5f, 0, 2));
  auto elu = RunOp("Elu", {x});
  ASSERT_TRUE(elu.ok());
  EXPECT_THAT(Values<float>((*elu)[0]), ElementsAre(FloatNear(std::exp(-1.f) - 1, 1e-6), 0, 2));
  auto round = RunOp("Round", {F32({4}, {0.5f, 1.5f, 2.5f, -0.5f})});
  ASSERT_TRUE(round.ok());
  EXPECT_THAT(Values<float>((*round)[0]), ElementsAre(0, 2, 2, -0.f));
  auto relu = RunOp("Relu", {I64({2}, {-3, 3})});
  ASSERT_TRUE(relu.ok());
  EXPECT_THAT(Values<int64_t>((*relu)[0]), ElementsAre(0, 3));
  auto sign = RunOp("Sign", {F32({3}, {-2, 0, 3})});
  EXPECT_THAT(Values<float>((*sign)[0]), ElementsAre(-1, 0, 1));
}

TEST(ElementwiseKernelTest, IsNaNIsInfAndClip) {
  const float inf = std::numeric_limits<float>::infinity();
  Tensor x = F32({3}, {std::nanf(""), inf, -inf});
  EXPECT_THAT(Values<uint8_t>((*RunOp("IsNaN", {x}))[0]), ElementsAre(1, 0, 0));
  Attributes only_negative;
  only_negative.Set("detect_positive", int64_t{0});
  EXPECT_THAT(Values<uint8_t>((*RunOp("IsInf", {x}, only_negative))[0]), ElementsAre(0, 0, 1));

  Tensor v = F32({3}, {-5, 0, 5});
  Tensor lo = F32({}, {-1});
  auto clip11 = RunOpWithAbsent("Clip", {&v, &lo, nullptr});
  ASSERT_TRUE(clip11.ok()) << clip11.status();
  EXPECT_THAT(Values<float>((*clip11)[0]), ElementsAre(-1, 0, 5));
  Attributes bounds;
  bounds.Set("min", -2.f);
  bounds.Set("max", 2.f);
  auto clip6 = RunOp("Clip", {v}, bounds, /*opset=*/6);
  ASSERT_TRUE(clip6.ok()) << clip6.status();
  EXPECT_THAT(Values<float>((*clip6)[0]), ElementsAre(-2, 0, 2));
}

}  // namespace
}  // namespace shapeshift
