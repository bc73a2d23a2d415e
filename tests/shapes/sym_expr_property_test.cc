// Property tests for the canonical form: random operation trees, built with
// the public operators, must keep the value the tree has when evaluated
// operation by operation, and must print/parse back to the same object.
#include "gtest/gtest.h"
#include "shapes/sym_expr.h"
#include "tests/shapes/random_expr.h"

namespace shapeshift {
namespace {

using testing::RandomExprs;
using testing::TestSeed;

constexpr int kExpressions = 10000;

TEST(SymExprPropertyTest, CanonicalFormPreservesValue) {
  RandomExprs gen(TestSeed());
  int compared = 0, overflowed_only_canonically = 0;
  for (int i = 0; i < kExpressions; ++i) {
    auto raw = gen.Expr(4);
    SymExpr e = raw->Build();
    for (int k = 0; k < 4; ++k) {
      Assignment v = gen.Values(-30, 30);
      std::optional<int64_t> want = raw->Eval(v);
      if (!want) continue;  // the tree itself divides by zero or overflows
      absl::StatusOr<int64_t> got = e.Evaluate(v);
      if (!got.ok() && got.status().code() == absl::StatusCode::kOutOfRange) {
        // Expanding products can overflow where the factored tree did not.
        ++overflowed_only_canonically;
        continue;
      }
      ASSERT_TRUE(got.ok()) << e.ToString() << ": " << got.status();
      ASSERT_EQ(*got, *want) << "canonical " << e.ToString() << " at a=" << v["a"]
                             << " b=" << v["b"] << " c=" << v["c"];
      ++compared;
    }
  }
  EXPECT_GT(compared, kExpressions);  // most samples are defined
  EXPECT_LT(overflowed_only_canonically, compared / 1000 + 1);
}

TEST(SymExprPropertyTest, PrintingRoundTripsThroughTheParser) {
  RandomExprs gen(TestSeed() + 1000);
  for (int i = 0; i < kExpressions; ++i) {
    SymExpr e = gen.Expr(4)->Build();
    absl::StatusOr<SymExpr> back = ParseSymExpr(e.ToString());
    if (testing::HasZeroDivisor(e)) {  // `x % 0` is refused as text, never read back as a value
      ASSERT_FALSE(back.ok()) << e.ToString() << " parsed as " << back->ToString();
      ASSERT_NE(back.status().message().find("division by zero"), std::string::npos) << back.status();
      continue;
    }
    ASSERT_TRUE(back.ok()) << e.ToString() << ": " << back.status();
    ASSERT_EQ(*back, e) << e.ToString() << " parsed as " << back->ToString();
  }
}

TEST(SymExprPropertyTest, ConstructionIsCanonical) {
  // Building the same polynomial in two orders gives the same object.
  RandomExprs gen(TestSeed() + 2000);
  for (int i = 0; i < kExpressions; ++i) {
    SymExpr x = gen.Expr(2)->Build(), y = gen.Expr(2)->Build(), z = gen.Expr(2)->Build();
    ASSERT_EQ((x + y) + z, x + (y + z));
    ASSERT_EQ(x * (y + z), x * y + x * z);
    ASSERT_EQ(x - y + y, x);
  }
}

}  // namespace
}  // namespace shapeshift
