// SmallRowsMatmul: the packed static-M path for short requests must compute
// exactly what the runtime-M primitive does, at every m it covers, with every
// epilogue, and refuse what it does not cover.
#include "codegen/cpu/small_rows_matmul.h"

#include <cmath>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/codegen/matmul_reference.h"
#include "tests/codegen/test_util.h"

namespace shapeshift::codegen::cpu {
namespace {

using ::shapeshift::codegen::testing::Close;
using ::shapeshift::codegen::testing::MatmulReference;
using ::shapeshift::codegen::testing::RandomFloats;
using ::testing::HasSubstr;

MatmulConfig WeightGemm(int64_t k, int64_t n) {
  MatmulConfig cfg;
  cfg.k = k;
  cfg.n = n;
  return cfg;
}

void CheckRows(const SmallRowsMatmul& small, const MatmulConfig& cfg, int64_t m, uint32_t seed) {
  MatmulShape s{1, m, cfg.k, cfg.n};
  SCOPED_TRACE(DescribeConfig(cfg) + " m=" + std::to_string(m));
  std::vector<float> a = RandomFloats(m * s.k, seed), b = RandomFloats(s.k * s.n, seed + 1);
  std::vector<float> bias = RandomFloats(s.n, seed + 2), residual = RandomFloats(m * s.n, seed + 3);
  std::vector<double> want = MatmulReference(cfg, s, a, b, bias, residual);
  absl::StatusOr<PackedWeights> packed = small.PackB(b.data());
  ASSERT_TRUE(packed.ok()) << packed.status();
  std::vector<float> c(m * s.n, NAN);
  MatmulOperands ops{a.data(), packed->data(), bias.data(), residual.data(), c.data()};
  ASSERT_TRUE(small.Execute(s, ops).ok());
  for (size_t i = 0; i < c.size(); ++i) {
    ASSERT_TRUE(Close(c[i], want[i], 1e-4, 1e-4 * std::sqrt(double(s.k)))) << "at " << i << ": " << c[i] << " vs "
                                                                            << want[i];
  }
}

TEST(SmallRowsMatmulTest, EveryCoveredRowCountMatchesTheReference) {
  MatmulConfig cfg = WeightGemm(96, 80);
  absl::StatusOr<std::unique_ptr<SmallRowsMatmul>> small = SmallRowsMatmul::Create(cfg);
  ASSERT_TRUE(small.ok()) << small.status();
  for (int64_t m = SmallRowsMatmul::kMinRows; m <= SmallRowsMatmul::kMaxRows; ++m) {
    CheckRows(**small, cfg, m, static_cast<uint32_t>(100 + m));
  }
}

TEST(SmallRowsMatmulTest, EpiloguesAndTransposedWeights) {
  MatmulConfig cfg = WeightGemm(64, 48);
  cfg.bias = true;
  cfg.scale = 0.5f;
  cfg.activation = MatmulActivation::kGeluErf;
  cfg.residual = true;
  for (bool transpose : {false, true}) {
    cfg.transpose_b = transpose;
    absl::StatusOr<std::unique_ptr<SmallRowsMatmul>> small = SmallRowsMatmul::Create(cfg);
    ASSERT_TRUE(small.ok()) << small.status();
    for (int64_t m : {SmallRowsMatmul::kMinRows, int64_t{17}, SmallRowsMatmul::kMaxRows}) CheckRows(**small, cfg, m, 7);
  }
}

TEST(SmallRowsMatmulTest, AppliesOnlyToTwoDimensionalRuntimeRowGemms) {
  EXPECT_TRUE(SmallRowsMatmul::Applies(WeightGemm(768, 768)));
  MatmulConfig static_m = WeightGemm(768, 768);
  static_m.m = 16;
  EXPECT_FALSE(SmallRowsMatmul::Applies(static_m));
  MatmulConfig runtime_k = WeightGemm(kRuntimeDim, 768);
  EXPECT_FALSE(SmallRowsMatmul::Applies(runtime_k));
  MatmulConfig batched = WeightGemm(64, 64);
  batched.batch = kRuntimeDim;
  EXPECT_FALSE(SmallRowsMatmul::Applies(batched));
  absl::StatusOr<std::unique_ptr<SmallRowsMatmul>> refused = SmallRowsMatmul::Create(runtime_k);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("static k and n"));
}

TEST(SmallRowsMatmulTest, RowCountsOutsideTheRangeAreRefused) {
  MatmulConfig cfg = WeightGemm(32, 32);
  absl::StatusOr<std::unique_ptr<SmallRowsMatmul>> small = SmallRowsMatmul::Create(cfg);
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_FALSE((*small)->Covers(SmallRowsMatmul::kMinRows - 1));
  EXPECT_FALSE((*small)->Covers(SmallRowsMatmul::kMaxRows + 1));
  std::vector<float> a(64 * 32), b(32 * 32), c(64 * 32);
  absl::StatusOr<PackedWeights> packed = (*small)->PackB(b.data());
  ASSERT_TRUE(packed.ok());
  MatmulOperands ops{a.data(), packed->data(), nullptr, nullptr, c.data()};
  absl::Status s = (*small)->Execute({1, SmallRowsMatmul::kMaxRows + 1, 32, 32}, ops);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("outside the small-rows range"));
}

}  // namespace
}  // namespace shapeshift::codegen::cpu
