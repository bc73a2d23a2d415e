#include "shapes/predicate.h"

#include "gtest/gtest.h"

namespace shapeshift {
namespace {

SymExpr S(const char* name) { return SymExpr::Symbol(name); }

TEST(PredicateTest, ConstantComparisonsFold) {
  EXPECT_EQ(Predicate::Lt(3, 4), Predicate::True());
  EXPECT_EQ(Predicate::Eq(S("x") + 1, S("x")), Predicate::False());
  EXPECT_EQ(Predicate::Le(S("x"), S("x")), Predicate::True());
  EXPECT_EQ(Predicate::Divisible(32, 16), Predicate::True());
  EXPECT_EQ(Predicate::Divisible(16 * S("x"), 8), Predicate::True());
}

TEST(PredicateTest, NormalizesForDeduplication) {
  SymExpr seq = S("seq");
  EXPECT_EQ(Predicate::Lt(128, seq), Predicate::Gt(seq, 128));
  EXPECT_EQ(Predicate::Le(seq + 1, 5), Predicate::Le(seq, 4));
  EXPECT_EQ(Predicate::Eq(S("a"), S("b")), Predicate::Eq(S("b"), S("a")));
  EXPECT_EQ(Predicate::Eq(Mod(seq, 16), 0), Predicate::Divisible(seq, 16));
  EXPECT_EQ(Predicate::Ne(Mod(seq, 16), 0), Predicate::Not(Predicate::Divisible(seq, 16)));
  EXPECT_EQ(Predicate::Divisible(seq + 32, 16), Predicate::Divisible(seq, 16));
  EXPECT_EQ(Predicate::Divisible(seq, -16), Predicate::Divisible(seq, 16));
  EXPECT_EQ(Predicate::Not(Predicate::Lt(seq, 4)), Predicate::Ge(seq, 4));
  EXPECT_EQ(Predicate::Not(Predicate::Not(Predicate::Divisible(seq, 4))), Predicate::Divisible(seq, 4));
  EXPECT_EQ(Predicate::Gt(seq, 128).ToString(), "seq > 128");
}

TEST(PredicateTest, JunctionsFlattenAndDeduplicate) {
  Predicate a = Predicate::Lt(S("a"), 3), b = Predicate::Gt(S("b"), 4);
  EXPECT_EQ(Predicate::And({a, Predicate::True(), a}), a);
  EXPECT_EQ(Predicate::And({a, Predicate::False()}), Predicate::False());
  EXPECT_EQ(Predicate::Or({a, Predicate::True()}), Predicate::True());
  EXPECT_EQ(Predicate::And({}), Predicate::True());
  EXPECT_EQ(Predicate::Or({}), Predicate::False());
  Predicate nested = Predicate::And({a, Predicate::And({b, a})});
  ASSERT_EQ(nested.kind(), PredKind::kAnd);
  EXPECT_EQ(nested.children().size(), 2u);
  EXPECT_EQ(nested, a && b);
  EXPECT_NE(a && b, a || b);
}

TEST(PredicateTest, Evaluates) {
  SymExpr seq = S("seq");
  Predicate p = Predicate::Gt(seq, 128) && Predicate::Divisible(seq, 16);
  EXPECT_TRUE(*p.Evaluate({{"seq", 144}}));
  EXPECT_FALSE(*p.Evaluate({{"seq", 136}}));
  EXPECT_FALSE(*p.Evaluate({{"seq", 64}}));
  EXPECT_TRUE(*Predicate::Divisible(seq, 16).Evaluate({{"seq", -32}}));
  EXPECT_TRUE(*(!Predicate::Divisible(seq, 16)).Evaluate({{"seq", 3}}));
}

TEST(PredicateTest, EvaluationErrorsPropagateWithoutShortCircuit) {
  SymExpr x = S("x");
  Predicate p = Predicate::Gt(x, 100) && Predicate::Eq(FloorDiv(10, x), 1);
  EXPECT_FALSE(p.Evaluate({{"x", 0}}).ok());  // false && error is an error
  EXPECT_FALSE(Predicate::Lt(x, 3).Evaluate({}).ok());
}

TEST(PredicateTest, SubstituteAndSymbols) {
  Predicate p = Predicate::Lt(S("a"), S("b")) && Predicate::Divisible(S("c"), 4);
  absl::btree_set<std::string> names;
  p.CollectSymbols(&names);
  EXPECT_EQ(names, (absl::btree_set<std::string>{"a", "b", "c"}));
  EXPECT_EQ(p.Substitute({{"a", SymExpr(1)}, {"b", SymExpr(2)}}), Predicate::Divisible(S("c"), 4));
  EXPECT_EQ(p.Substitute({{"c", SymExpr(5)}}), Predicate::False());
}

TEST(PredicateTest, HashAgreesWithEquality) {
  Predicate a = Predicate::Lt(S("a"), 3) && Predicate::Gt(S("b"), 1);
  Predicate b = Predicate::Gt(S("b"), 1) && Predicate::Lt(S("a"), 3);
  Predicate a2 = Predicate::Lt(S("a"), 3) && Predicate::Gt(S("b"), 1);
  EXPECT_EQ(a, a2);
  EXPECT_EQ(a.hash(), a2.hash());
  EXPECT_NE(a, b);  // structural: order of conjuncts is kept
}

}  // namespace
}  // namespace shapeshift
