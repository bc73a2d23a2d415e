#include "shapes/modular_analysis.h"

#include "gtest/gtest.h"
#include "tests/shapes/random_expr.h"

namespace shapeshift {
namespace {

SymExpr E(const char* text) { return *ParseSymExpr(text); }

TEST(ModularAnalysisTest, ComposesCongruences) {
  SymbolFacts f;
  f.Declare("seq", 1, 512);
  f.Assume(*ParsePredicate("seq % 16 == 0"));
  ModularAnalysis m(&f);
  EXPECT_EQ(m.Of(E("seq")), (Congruence{16, 0}));
  EXPECT_EQ(m.Of(E("seq + 3")), (Congruence{16, 3}));
  EXPECT_EQ(m.Of(E("2*seq + 1")), (Congruence{32, 1}));
  EXPECT_EQ(m.Of(E("seq // 4")), (Congruence{4, 0}));
  EXPECT_EQ(m.Of(E("(seq + 5) % 8")), Congruence::Exactly(5));
  EXPECT_EQ(m.Of(E("seq * b")), (Congruence{16, 0}));
  EXPECT_EQ(m.Of(E("max(seq, 8)")), (Congruence{8, 0}));
  EXPECT_EQ(m.Of(E("b")), Congruence::Unknown());
  EXPECT_EQ(m.Of(E("(b + 15) // 16 * 16")), (Congruence{16, 0}));
}

// Every value an expression takes satisfies its congruence.
TEST(ModularAnalysisPropertyTest, CongruencesAreSound) {
  testing::RandomExprs gen(testing::TestSeed() + 10000);
  int checked = 0;
  for (int i = 0; i < 10000; ++i) {
    SymbolFacts f;
    const int64_t ka = gen.Uniform(1, 8), kb = gen.Uniform(1, 8);
    f.Assume(Predicate::Divisible(SymExpr::Symbol("a"), ka));
    f.Assume(Predicate::Divisible(SymExpr::Symbol("b"), kb));
    ModularAnalysis m(&f);
    SymExpr e = gen.Expr(3)->Build();
    Congruence c = m.Of(e);
    for (int k = 0; k < 4; ++k) {
      Assignment v = gen.Values(-20, 20);
      v["a"] *= ka;
      v["b"] *= kb;
      absl::StatusOr<int64_t> value = e.Evaluate(v);
      if (!value.ok()) continue;
      if (c.modulus == 0) {
        ASSERT_EQ(*value, c.residue) << e.ToString();
      } else {
        ASSERT_EQ(FloorModInt(*value, c.modulus), c.residue)
            << e.ToString() << " = " << *value << " vs " << c.residue << " mod " << c.modulus;
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 20000);
}

}  // namespace
}  // namespace shapeshift
