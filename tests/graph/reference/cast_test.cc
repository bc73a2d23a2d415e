#include <cmath>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "graph/reference/float16.h"
#include "tests/graph/reference/kernel_test_util.h"

namespace shapeshift {
namespace {

using ::testing::ElementsAre;
using namespace shapeshift::kernel_testing;

Attributes To(DType t) {
  Attributes a;
  a.Set("to", static_cast<int64_t>(DTypeToOnnx(t)));
  return a;
}

TEST(CastKernelTest, FloatToIntTruncatesTowardZeroAndSaturates) {
  auto out = RunOp("Cast", {F32({4}, {2.7f, -2.7f, 1e20f, std::nanf("")})}, To(DType::kI32));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Values<int32_t>((*out)[0]), ElementsAre(2, -2, 2147483647, 0));
}

TEST(CastKernelTest, BoolConversions) {
  auto to_bool = RunOp("Cast", {F32({3}, {0.f, -0.5f, 2.f})}, To(DType::kBool));
  ASSERT_TRUE(to_bool.ok());
  EXPECT_THAT(Values<uint8_t>((*to_bool)[0]), ElementsAre(0, 1, 1));
  auto from_bool = RunOp("Cast", {Bool({2}, {1, 0})}, To(DType::kF32));
  ASSERT_TRUE(from_bool.ok());
  EXPECT_THAT(Values<float>((*from_bool)[0]), ElementsAre(1, 0));
}

TEST(CastKernelTest, IntegerNarrowingWraps) {
  auto out = RunOp("Cast", {I64({2}, {300, -1})}, To(DType::kU8));
  ASSERT_TRUE(out.ok());
  EXPECT_THAT(Values<uint8_t>((*out)[0]), ElementsAre(44, 255));
}

TEST(CastKernelTest, HalfRoundsToNearestEven) {
  EXPECT_EQ(DoubleToHalfBits(1.0), 0x3c00);
  EXPECT_EQ(DoubleToHalfBits(-2.0), 0xc000);
  EXPECT_EQ(DoubleToHalfBits(65504.0), 0x7bff);
  EXPECT_EQ(DoubleToHalfBits(1e6), 0x7c00);
  EXPECT_EQ(DoubleToHalfBits(1.0 + 1.0 / 2048), 0x3c00);      // tie → even
  EXPECT_EQ(DoubleToHalfBits(1.0 + 3.0 / 2048), 0x3c02);      // tie → even (up)
  EXPECT_EQ(DoubleToHalfBits(std::ldexp(1.0, -24)), 0x0001);  // smallest subnormal
  EXPECT_TRUE(std::isnan(HalfBitsToFloat(DoubleToHalfBits(std::nan("")))));
  for (uint16_t bits : {0x0001, 0x03ff, 0x0400, 0x3555, 0x7bff, 0xfbff}) {
    EXPECT_EQ(DoubleToHalfBits(HalfBitsToFloat(bits)), bits);
  }
  EXPECT_EQ(FloatToBFloat16Bits(1.0f), 0x3f80);
  EXPECT_EQ(BFloat16BitsToFloat(FloatToBFloat16Bits(1.5f)), 1.5f);
  auto out = RunOp("Cast", {F32({2}, {0.5f, -3.f})}, To(DType::kF16));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].dtype(), DType::kF16);
  EXPECT_THAT(Values<uint16_t>((*out)[0]), ElementsAre(0x3800, 0xc200));
  auto back = RunOp("Cast", {(*out)[0]}, To(DType::kF64));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_THAT(Values<double>((*back)[0]), ElementsAre(0.5, -3.0));
}

TEST(GeneratorKernelTest, ConstantForms) {
  Attributes floats;
  floats.Set("value_floats", std::vector<float>{1.5f, 2.5f});
  auto f = RunOp("Constant", {}, floats);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_THAT(Values<float>((*f)[0]), ElementsAre(1.5, 2.5));
  Attributes integer;
  integer.Set("value_int", int64_t{7});
  auto i = RunOp("Constant", {}, integer);
  ASSERT_TRUE(i.ok());
  EXPECT_EQ((*i)[0].rank(), 0);
  EXPECT_EQ((*i)[0].GetAsInt64(0), 7);
  Attributes tensor;
  tensor.Set("value", I64({2}, {3, 4}));
  EXPECT_THAT(Values<int64_t>((*RunOp("Constant", {}, tensor))[0]), ElementsAre(3, 4));
  Attributes text;
  text.Set("value_string", std::string("hi"));
  EXPECT_EQ(RunOp("Constant", {}, text).status().code(), absl::StatusCode::kUnimplemented);
}

TEST(GeneratorKernelTest, ConstantOfShapeAndRange) {
  auto zeros = RunOp("ConstantOfShape", {I64({2}, {2, 2})});
  ASSERT_TRUE(zeros.ok()) << zeros.status();
  EXPECT_EQ((*zeros)[0].dtype(), DType::kF32);
  EXPECT_THAT(Values<float>((*zeros)[0]), ElementsAre(0, 0, 0, 0));
  Attributes value;
  value.Set("value", I64({1}, {5}));
  auto fives = RunOp("ConstantOfShape", {I64({1}, {3})}, value);
  ASSERT_TRUE(fives.ok());
  EXPECT_THAT(Values<int64_t>((*fives)[0]), ElementsAre(5, 5, 5));
  auto range = RunOp("Range", {I32({}, {10}), I32({}, {4}), I32({}, {-3})});
  ASSERT_TRUE(range.ok()) << range.status();
  EXPECT_THAT(Values<int32_t>((*range)[0]), ElementsAre(10, 7));
  auto frange = RunOp("Range", {F32({}, {1}), F32({}, {2}), F32({}, {0.25})});
  ASSERT_TRUE(frange.ok());
  EXPECT_THAT(Values<float>((*frange)[0]), ElementsAre(1, 1.25, 1.5, 1.75));
  EXPECT_FALSE(RunOp("Range", {I32({}, {0}), I32({}, {4}), I32({}, {0})}).ok());
}

}  // namespace
}  // namespace shapeshift
