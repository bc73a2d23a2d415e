#include "shapes/symbol_facts.h"

#include "gtest/gtest.h"

namespace shapeshift {
namespace {

Predicate P(const char* text) { return *ParsePredicate(text); }

TEST(SymbolFactsTest, DeclaredRangesAndSimpleFacts) {
  SymbolFacts f;
  f.Declare("seq", 1, 512);
  EXPECT_EQ(f.Get("seq").range, (Interval{1, 512}));
  f.Assume(P("seq > 128 && seq <= 300"));
  EXPECT_EQ(f.Get("seq").range, (Interval{129, 300}));
  f.Assume(P("seq != 129"));
  EXPECT_EQ(f.Get("seq").range.lo, 130);
  f.Assume(P("seq % 16 == 0"));
  EXPECT_EQ(f.Get("seq").congruence, (Congruence{16, 0}));
  EXPECT_EQ(f.Get("seq").range, (Interval{144, 288}));  // rounded to multiples of 16
  f.Assume(P("seq % 24 == 0"));
  EXPECT_EQ(f.Get("seq").congruence.modulus, 48);
  EXPECT_FALSE(f.contradictory());
  EXPECT_EQ(f.Get("other").range, Interval::Everything());
}

TEST(SymbolFactsTest, IgnoresWhatItCannotExpressAndDetectsContradictions) {
  SymbolFacts f;
  f.Declare("a", 1, 10);
  f.Assume(P("a < b || a > 3"));
  f.Assume(P("a + b <= 4"));
  EXPECT_EQ(f.Get("a").range, (Interval{1, 10}));
  f.Assume(P("a == 4"));
  EXPECT_EQ(f.Get("a").range, Interval::Point(4));
  f.Assume(P("a % 3 == 0"));
  EXPECT_TRUE(f.contradictory());
}

TEST(CongruenceTest, NormalizesResidues) {
  EXPECT_EQ(Congruence::Make(8, -3), (Congruence{8, 5}));
  EXPECT_EQ(Congruence::Make(-8, 11), (Congruence{8, 3}));
  EXPECT_EQ(Congruence::Make(0, -3), Congruence::Exactly(-3));
}

}  // namespace
}  // namespace shapeshift
