#include "shapes/z3_bridge.h"

#include "gtest/gtest.h"

namespace shapeshift {
namespace {

SymExpr S(const char* name) { return SymExpr::Symbol(name); }
Predicate P(const char* text) { return *ParsePredicate(text); }

TEST(Z3BridgeTest, ImpliesProvesOrGivesACheckedCounterexample) {
  Z3Bridge z3;
  ImplicationResult r = z3.Implies({P("seq >= 1 && seq <= 512"), P("seq % 16 == 0")}, P("seq % 8 == 0"));
  EXPECT_EQ(r.verdict, Verdict::kProven);
  r = z3.Implies({P("seq >= 1 && seq <= 512")}, P("seq <= 128"));
  ASSERT_EQ(r.verdict, Verdict::kRefuted);
  int64_t seq = r.counterexample.at("seq");
  EXPECT_GT(seq, 128);
  EXPECT_LE(seq, 512);
}

TEST(Z3BridgeTest, FloorSemanticsForNegativeDivisors) {
  Z3Bridge z3;
  // floordiv(-7, 2) == -4 and mod(7, -2) == -1 must be provable from the values.
  EXPECT_EQ(z3.Implies({P("x == -7"), P("y == 2")}, P("x // y == -4 && x % y == 1")).verdict,
            Verdict::kProven);
  EXPECT_EQ(z3.Implies({P("x == 7"), P("y == -2")}, P("x // y == -4 && x % y == -1")).verdict,
            Verdict::kProven);
  EXPECT_EQ(z3.Implies({P("x == -7")}, P("x // -2 == 3 && x % -2 == -1")).verdict, Verdict::kProven);
  // The identity a == b*(a//b) + a%b holds for every non-zero divisor.
  EXPECT_EQ(z3.Implies({P("y != 0")}, P("y * (x // y) + x % y == x")).verdict, Verdict::kProven);
  EXPECT_EQ(z3.Implies({P("y < 0")}, P("x % y <= 0 && x % y > y")).verdict, Verdict::kProven);
  EXPECT_EQ(*z3.EvaluateInZ3(FloorDiv(S("x"), S("y")), {{"x", -7}, {"y", 2}}), -4);
  EXPECT_EQ(*z3.EvaluateInZ3(Mod(S("x"), S("y")), {{"x", 7}, {"y", -2}}), -1);
  EXPECT_FALSE(z3.EvaluateInZ3(S("x") + 1, {}).ok());
}

TEST(Z3BridgeTest, SimplifyDropsImpliedAtomsAndDetectsContradictions) {
  Z3Bridge z3;
  Predicate domain = P("seq >= 1 && seq <= 512");
  std::vector<Predicate> atoms = {P("seq <= 1000"), P("seq % 16 == 0"), P("seq % 8 == 0"),
                                  P("seq > 100")};
  SimplifyResult r = z3.Simplify(domain, atoms);
  EXPECT_EQ(r.consistency, Verdict::kProven);
  EXPECT_EQ(r.kept, (std::vector<size_t>{1, 3}));
  EXPECT_EQ(r.dropped, (std::vector<size_t>{0, 2}));
  EXPECT_TRUE(*Predicate::And(atoms).Evaluate(r.witness));
  SimplifyResult bad = z3.Simplify(domain, {P("seq > 300"), P("seq < 200")});
  EXPECT_EQ(bad.consistency, Verdict::kRefuted);
  EXPECT_EQ(bad.kept.size(), 2u);
}

TEST(Z3BridgeTest, UnsatCoreNamesTheMinimalFailingAtoms) {
  Z3Bridge z3;
  std::vector<Predicate> atoms = {P("batch <= 8"), P("seq > 128"), P("seq % 16 == 0"),
                                  P("seq <= 256")};
  UnsatCoreResult r = z3.UnsatCore(atoms, {{"batch", 4}, {"seq", 96}});
  ASSERT_EQ(r.verdict, Verdict::kProven);
  EXPECT_EQ(r.failing, (std::vector<size_t>{1}));
  EXPECT_EQ(r.core, (std::vector<size_t>{1}));
  EXPECT_EQ(r.core_symbols, (std::vector<std::string>{"seq"}));
  EXPECT_EQ(z3.UnsatCore(atoms, {{"batch", 4}, {"seq", 144}}).verdict, Verdict::kRefuted);
}

TEST(Z3BridgeTest, UnsatCoreWithADerivedSymbolLeftFree) {
  Z3Bridge z3;
  // `t` is derived (t == seq // 16) and not bound: only the atoms together fail.
  std::vector<Predicate> atoms = {P("batch <= 8"), P("t == seq // 16"), P("t >= 10")};
  UnsatCoreResult r = z3.UnsatCore(atoms, {{"batch", 1}, {"seq", 100}});
  ASSERT_EQ(r.verdict, Verdict::kProven);
  EXPECT_EQ(r.core, (std::vector<size_t>{1, 2}));
  EXPECT_EQ(r.core_symbols, (std::vector<std::string>{"seq"}));
}

TEST(Z3BridgeTest, CoverageFindsARealUncoveredPoint) {
  Z3Bridge z3;
  Predicate domain = P("seq >= 1 && seq <= 512");
  std::vector<std::vector<Predicate>> sets = {{P("seq <= 128")}, {P("seq > 128"), P("seq % 16 == 0")}};
  CoverageResult r = z3.Coverage(domain, sets);
  ASSERT_EQ(r.verdict, Verdict::kRefuted);
  int64_t seq = r.witness.at("seq");
  EXPECT_GT(seq, 128);
  EXPECT_NE(seq % 16, 0);
  sets.push_back({P("seq > 128")});
  EXPECT_EQ(z3.Coverage(domain, sets).verdict, Verdict::kProven);
  EXPECT_EQ(z3.Coverage(domain, {}).verdict, Verdict::kRefuted);
}

TEST(Z3BridgeTest, WidestIntervalAroundAValue) {
  Z3Bridge z3;
  std::vector<Predicate> atoms = {P("seq > 128"), P("seq <= 256"), P("seq * batch <= 1000")};
  IntervalResult r = z3.WidestInterval("seq", {{"seq", 150}, {"batch", 4}}, atoms, {1, 512});
  ASSERT_EQ(r.verdict, Verdict::kProven) << r.detail;
  EXPECT_EQ(r.lo, 129);
  EXPECT_EQ(r.hi, 250);
  // Nothing fails above: the limit bounds the interval.
  r = z3.WidestInterval("seq", {{"seq", 300}}, {P("seq > 128")}, {1, 512});
  ASSERT_EQ(r.verdict, Verdict::kProven);
  EXPECT_EQ(r.lo, 129);
  EXPECT_EQ(r.hi, 512);
  // A divisibility atom holds on no interval wider than one point.
  r = z3.WidestInterval("seq", {{"seq", 144}}, {P("seq % 16 == 0")}, {1, 512});
  ASSERT_EQ(r.verdict, Verdict::kProven);
  EXPECT_EQ(r.lo, 144);
  EXPECT_EQ(r.hi, 144);
  EXPECT_EQ(z3.WidestInterval("seq", {{"seq", 100}}, {P("seq > 128")}, {1, 512}).verdict,
            Verdict::kRefuted);
  EXPECT_EQ(z3.WidestInterval("seq", {{"seq", 150}}, atoms, {1, 512}).verdict, Verdict::kUnknown);
}

TEST(Z3BridgeTest, TimeoutAnswersUnknownNeverProven) {
  Z3Bridge z3(/*timeout_ms=*/1);
  // Nonlinear integer arithmetic with no small model: hard enough to time out.
  ImplicationResult r = z3.Implies(
      {P("x > 1 && y > 1 && z > 1"), P("x * x * x + y * y * y == z * z * z + 0 * x")},
      P("x > 100000"));
  EXPECT_NE(r.verdict, Verdict::kProven);
  if (r.verdict == Verdict::kUnknown) {
    EXPECT_FALSE(r.detail.empty());
  }
}

TEST(Z3BridgeTest, VerdictNames) {
  EXPECT_STREQ(VerdictName(Verdict::kProven), "proven");
  EXPECT_STREQ(VerdictName(Verdict::kRefuted), "refuted");
  EXPECT_STREQ(VerdictName(Verdict::kUnknown), "unknown");
}

}  // namespace
}  // namespace shapeshift
