#include "graph/tensor_compare.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"

namespace shapeshift {
namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

Tensor F32(std::vector<float> v) { return Tensor::FromVector<float>(DType::kF32, {static_cast<int64_t>(v.size())}, v); }

TEST(ElementsAgreeTest, NanMatchesOnlyNan) {
  EXPECT_TRUE(ElementsAgree(kNan, kNan));
  EXPECT_TRUE(ElementsAgree(-kNan, kNan));
  EXPECT_FALSE(ElementsAgree(kNan, 0.0));
  EXPECT_FALSE(ElementsAgree(0.0, kNan));
  EXPECT_FALSE(ElementsAgree(kNan, kInf));
}

TEST(ElementsAgreeTest, InfinitiesMatchBySign) {
  EXPECT_TRUE(ElementsAgree(kInf, kInf));
  EXPECT_TRUE(ElementsAgree(-kInf, -kInf));
  EXPECT_FALSE(ElementsAgree(kInf, -kInf));
  EXPECT_FALSE(ElementsAgree(std::numeric_limits<float>::max(), kInf));
  EXPECT_FALSE(ElementsAgree(kInf, std::numeric_limits<float>::max()));
}

TEST(ElementsAgreeTest, FiniteValuesWithinTheDefaultTolerance) {
  // |a - e| <= 1e-3 + 1e-3 * |e|
  EXPECT_TRUE(ElementsAgree(1.0019, 1.0));
  EXPECT_FALSE(ElementsAgree(1.0021, 1.0));
  EXPECT_TRUE(ElementsAgree(1000.0 + 1.0009, 1000.0));
  EXPECT_FALSE(ElementsAgree(1000.0 + 1.002, 1000.0));
  EXPECT_TRUE(ElementsAgree(-0.0, 0.0));
  EXPECT_TRUE(ElementsAgree(1.0, 1.0, Tolerance{.rtol = 0, .atol = 0}));
  EXPECT_FALSE(ElementsAgree(1.0, std::nextafter(1.0, 2.0), Tolerance{.rtol = 0, .atol = 0}));
}

TEST(CompareTensorsTest, CountsMismatchesAndNamesTheFirst) {
  TensorComparison c = CompareTensors(F32({1, NAN, INFINITY, 5, 7}), F32({1, NAN, INFINITY, NAN, 8}));
  EXPECT_FALSE(c.agree);
  EXPECT_EQ(c.mismatches, 2);
  EXPECT_EQ(c.first_mismatch, "element 3: 5, expected nan");
  EXPECT_EQ(c.max_abs_error, kInf);  // a number where NaN was expected

  TensorComparison ok = CompareTensors(F32({1, NAN, -INFINITY, 2.0005f}), F32({1, NAN, -INFINITY, 2}));
  EXPECT_TRUE(ok.agree);
  EXPECT_EQ(ok.mismatches, 0);
  EXPECT_NEAR(ok.max_abs_error, 5e-4, 1e-6);  // agreeing NaN and Inf pairs add nothing
}

TEST(CompareTensorsTest, ShapeDtypeAndCountDifferencesDisagree) {
  EXPECT_FALSE(CompareTensors(F32({1, 2}), F32({1, 2, 3})).agree);
  Tensor i64 = Tensor::FromVector<int64_t>(DType::kI64, {2}, {1, 2});
  TensorComparison dtype = CompareTensors(i64, F32({1, 2}));
  EXPECT_FALSE(dtype.agree);
  EXPECT_EQ(dtype.first_mismatch, "i64[2], expected f32[2]");
  TensorComparison count = CompareTensorLists({F32({1})}, {F32({1}), F32({2})});
  EXPECT_FALSE(count.agree);
  EXPECT_EQ(count.first_mismatch, "1 outputs, expected 2");
}

TEST(CompareTensorsTest, IntegersAreExact) {
  const int64_t big = (int64_t{1} << 53) + 1;  // not representable as a double
  Tensor a = Tensor::FromVector<int64_t>(DType::kI64, {1}, {big});
  Tensor b = Tensor::FromVector<int64_t>(DType::kI64, {1}, {big - 1});
  EXPECT_FALSE(CompareTensors(a, b).agree);
  EXPECT_TRUE(CompareTensors(a, a).agree);
}

TEST(CompareTensorListsTest, NamesTheOutput) {
  TensorComparison c = CompareTensorLists({F32({1}), F32({2})}, {F32({1}), F32({3})});
  EXPECT_FALSE(c.agree);
  EXPECT_EQ(c.first_mismatch, "output 1 element 0: 2, expected 3");
}

}  // namespace
}  // namespace shapeshift
