#include "graph/tensor.h"

#include <cmath>

#include "graph/attributes.h"
#include "graph/dtype.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace shapeshift {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(DTypeTest, SizesNamesAndOnnxNumbersRoundTrip) {
  EXPECT_EQ(DTypeSize(DType::kF32), 4u);
  EXPECT_EQ(DTypeSize(DType::kI64), 8u);
  EXPECT_EQ(DTypeSize(DType::kBool), 1u);
  EXPECT_EQ(DTypeName(DType::kBF16), "bf16");
  EXPECT_TRUE(IsFloat(DType::kF16));
  EXPECT_FALSE(IsInteger(DType::kBool));
  for (DType t : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16, DType::kI64, DType::kI32,
                  DType::kI8, DType::kU8, DType::kBool}) {
    EXPECT_EQ(DTypeFromOnnx(DTypeToOnnx(t)), t) << DTypeName(t);
  }
  EXPECT_EQ(DTypeFromOnnx(1), DType::kF32);
  EXPECT_EQ(DTypeFromOnnx(8), std::nullopt);  // STRING
}

TEST(TensorTest, DefaultIsF32ScalarZero) {
  Tensor t;
  EXPECT_EQ(t.dtype(), DType::kF32);
  EXPECT_EQ(t.rank(), 0);
  EXPECT_EQ(t.num_elements(), 1);
  EXPECT_EQ(t.GetAsDouble(0), 0.0);
}

TEST(TensorTest, ZerosRejectsNegativeAndHugeShapes) {
  EXPECT_FALSE(Tensor::Zeros(DType::kF32, {2, -1}).ok());
  absl::StatusOr<Tensor> huge = Tensor::Zeros(DType::kF32, {int64_t{1} << 30, int64_t{1} << 30});
  ASSERT_FALSE(huge.ok());
  EXPECT_THAT(huge.status().message(), HasSubstr("elements"));
  absl::StatusOr<Tensor> empty = Tensor::Zeros(DType::kI64, {3, 0});
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->num_elements(), 0);
}

TEST(TensorTest, CopiesShareAndCloneIsPrivate) {
  Tensor a = Tensor::FromVector<float>(DType::kF32, {2}, {1.f, 2.f});
  Tensor shared = a;
  Tensor cloned = a.Clone();
  a.mutable_data<float>()[0] = 5.f;
  EXPECT_EQ(shared.data<float>()[0], 5.f);
  EXPECT_EQ(cloned.data<float>()[0], 1.f);
}

TEST(TensorTest, ReshapedKeepsCountAndRejectsMismatch) {
  Tensor a = Tensor::FromVector<int64_t>(DType::kI64, {2, 3}, {0, 1, 2, 3, 4, 5});
  absl::StatusOr<Tensor> b = a.Reshaped({3, 2});
  ASSERT_TRUE(b.ok());
  EXPECT_THAT(b->shape(), ElementsAre(3, 2));
  EXPECT_EQ(b->GetAsInt64(5), 5);
  EXPECT_FALSE(a.Reshaped({4}).ok());
}

TEST(TensorTest, ConversionsAndDebugString) {
  Tensor h = Tensor::FromVector<uint16_t>(DType::kF16, {2}, {0x3c00, 0xc000});  // 1, -2
  EXPECT_EQ(h.GetAsDouble(0), 1.0);
  EXPECT_EQ(h.GetAsDouble(1), -2.0);
  Tensor bf = Tensor::FromVector<uint16_t>(DType::kBF16, {1}, {0x3fc0});  // 1.5
  EXPECT_EQ(bf.GetAsDouble(0), 1.5);
  Tensor f = Tensor::FromVector<float>(DType::kF32, {3}, {-2.7f, 1.f, 2.f});
  EXPECT_EQ(f.GetAsInt64(0), -2);
  EXPECT_EQ(f.DebugString(2), "f32[3] {-2.7, 1, ...}");
  Tensor b = Tensor::FromVector<uint8_t>(DType::kBool, {2}, {1, 0});
  EXPECT_EQ(b.DebugString(), "bool[2] {true, false}");
  EXPECT_EQ(Tensor::ScalarI64(7).DebugString(), "i64[] {7}");
}

TEST(AttributesTest, TypedGettersFallBackAndNameTheAttribute) {
  Attributes attrs;
  attrs.Set("axis", int64_t{-1});
  attrs.Set("perm", std::vector<int64_t>{1, 0});
  attrs.Set("epsilon", 1e-5f);
  EXPECT_EQ(*attrs.GetInt("axis", 0), -1);
  EXPECT_EQ(*attrs.GetInt("keepdims", 1), 1);
  EXPECT_THAT(*attrs.GetInts("perm"), ElementsAre(1, 0));
  EXPECT_FLOAT_EQ(*attrs.GetFloat("epsilon", 0.f), 1e-5f);
  absl::StatusOr<int64_t> wrong = attrs.GetInt("perm", 0);
  ASSERT_FALSE(wrong.ok());
  EXPECT_THAT(wrong.status().message(), HasSubstr("'perm'"));
  absl::StatusOr<Tensor> missing = attrs.GetTensor("value");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("'value'"));
}

}  // namespace
}  // namespace shapeshift
