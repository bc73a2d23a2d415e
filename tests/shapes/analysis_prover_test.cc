#include "shapes/analysis_prover.h"

#include "gtest/gtest.h"
#include "tests/shapes/random_expr.h"

namespace shapeshift {
namespace {

Predicate P(const char* text) { return *ParsePredicate(text); }

TEST(AnalysisProverTest, DecidesSimpleShapeQuestions) {
  SymbolFacts f;
  f.Declare("seq", 1, 512);
  f.Declare("batch", 1, 32);
  f.Assume(P("seq % 16 == 0"));
  AnalysisProver p(&f);
  EXPECT_EQ(p.Prove(P("seq * batch <= 16384")), true);
  EXPECT_EQ(p.Prove(P("seq > 512")), false);
  EXPECT_EQ(p.Prove(P("seq + 1 > seq")), true);
  EXPECT_EQ(p.Prove(P("seq % 8 == 0")), true);
  EXPECT_EQ(p.Prove(P("seq % 32 == 0")), std::nullopt);
  EXPECT_EQ(p.Prove(P("seq == 100")), false);  // 100 is not a multiple of 16
  EXPECT_EQ(p.Prove(P("seq <= 128")), std::nullopt);
  EXPECT_EQ(p.Prove(P("seq <= 128 || seq > 0")), true);
  // No case splitting: each disjunct alone is undecided.
  EXPECT_EQ(p.Prove(P("seq <= 128 || seq > 64")), std::nullopt);
  EXPECT_EQ(p.Prove(P("seq > 600 && batch < 8")), false);
  EXPECT_EQ(p.Prove(P("!(seq >= 16)")), false);
  EXPECT_EQ(p.Prove(P("(seq + 2) % 16 == 0")), false);
}

TEST(AnalysisProverTest, NoMultipleInsideTheRange) {
  SymbolFacts f;
  f.Declare("x", 17, 20);
  AnalysisProver p(&f);
  EXPECT_EQ(p.Prove(P("x % 8 == 0")), false);
  EXPECT_EQ(p.Prove(P("x % 5 == 0")), std::nullopt);
}

TEST(AnalysisProverTest, ContradictoryFactsDecideNothing) {
  SymbolFacts f;
  f.Declare("x", 1, 4);
  f.Assume(P("x > 10"));
  AnalysisProver p(&f);
  EXPECT_EQ(p.Prove(P("x < 100")), std::nullopt);
}

// Whatever the prover decides holds on every sampled assignment in range.
TEST(AnalysisProverPropertyTest, DecisionsAreSound) {
  testing::RandomExprs gen(testing::TestSeed() + 11000);
  int decided = 0;
  for (int i = 0; i < 10000; ++i) {
    SymbolFacts f;
    Assignment lo = gen.Values(-10, 10);
    for (const char* s : {"a", "b", "c"}) f.Declare(s, lo[s], lo[s] + gen.Uniform(0, 12));
    AnalysisProver prover(&f);
    Predicate q = gen.Pred(1, 2);
    std::optional<bool> verdict = prover.Prove(q);
    if (!verdict) continue;
    ++decided;
    for (int k = 0; k < 4; ++k) {
      Assignment v;
      for (const char* s : {"a", "b", "c"}) v[s] = gen.Uniform(f.Get(s).range.lo, f.Get(s).range.hi);
      absl::StatusOr<bool> value = q.Evaluate(v);
      if (!value.ok()) continue;
      ASSERT_EQ(*value, *verdict) << q.ToString() << " at a=" << v["a"] << " b=" << v["b"]
                                  << " c=" << v["c"];
    }
  }
  EXPECT_GT(decided, 1000);
}

}  // namespace
}  // namespace shapeshift
