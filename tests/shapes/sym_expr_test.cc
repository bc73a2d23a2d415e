#include "shapes/sym_expr.h"

#include <limits>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace shapeshift {
namespace {

SymExpr S(const char* name) { return SymExpr::Symbol(name); }

TEST(SymExprTest, InterningMakesEqualExpressionsIdentical) {
  EXPECT_EQ(S("seq"), S("seq"));
  EXPECT_EQ(S("seq") + 1, S("seq") + 1);
  EXPECT_EQ((S("seq") + 1).node(), (1 + S("seq")).node());
  EXPECT_NE(S("seq"), S("batch"));
  EXPECT_EQ(SymExpr(), SymExpr(0));
}

TEST(SymExprTest, CanonicalPolynomialMergesLikeTerms) {
  SymExpr s0 = S("s0"), s1 = S("s1");
  EXPECT_EQ(2 * s0 + s1 - s0, s0 + s1);
  EXPECT_EQ(s0 - s0, SymExpr(0));
  EXPECT_EQ((s0 + 1) * (s0 - 1), s0 * s0 - 1);
  EXPECT_EQ(s0 * s1, s1 * s0);
  EXPECT_EQ((s0 + s1) * 3 - 3 * s1, 3 * s0);
}

TEST(SymExprTest, PrintsReadably) {
  SymExpr seq = S("seq");
  EXPECT_EQ((2 * seq + 1).ToString(), "2*seq + 1");
  EXPECT_EQ((seq - 2 * S("b")).ToString(), "-2*b + seq");
  EXPECT_EQ(CeilDiv(seq, 16).ToString(), "(seq + 15) // 16");
  EXPECT_EQ(Mod(seq, 16).ToString(), "seq % 16");
  EXPECT_EQ(Min(seq, 128).ToString(), "min(128, seq)");
  EXPECT_EQ((S("a") * FloorDiv(seq, 2)).ToString(), "a*(seq // 2)");
  EXPECT_EQ(SymExpr(-5).ToString(), "-5");
  EXPECT_EQ((-seq).ToString(), "-seq");
}

TEST(SymExprTest, FloorSemanticsOnIntegers) {
  EXPECT_EQ(FloorDivInt(-7, 2), -4);
  EXPECT_EQ(FloorModInt(-7, 2), 1);
  EXPECT_EQ(FloorModInt(7, -2), -1);
  EXPECT_EQ(FloorDivInt(7, -2), -4);
  EXPECT_EQ(FloorDivInt(6, 3), 2);
  EXPECT_EQ(FloorModInt(std::numeric_limits<int64_t>::min(), -1), 0);
  for (int64_t a = -20; a <= 20; ++a) {
    for (int64_t b : {-7, -3, -1, 1, 2, 5}) {
      EXPECT_EQ(a, b * FloorDivInt(a, b) + FloorModInt(a, b)) << a << " " << b;
    }
  }
}

TEST(SymExprTest, DivisionSimplifications) {
  SymExpr x = S("x");
  EXPECT_EQ(FloorDiv(x, 1), x);
  EXPECT_EQ(FloorDiv(x, -1), -x);
  EXPECT_EQ(FloorDiv(SymExpr(-7), 2), SymExpr(-4));
  EXPECT_EQ(FloorDiv(16 * x + 3, 16), x);
  EXPECT_EQ(FloorDiv(16 * x + 35, 16), x + 2);
  EXPECT_EQ(FloorDiv(FloorDiv(x, 4), 8), FloorDiv(x, 32));
  EXPECT_EQ(Mod(16 * x, 16), SymExpr(0));
  EXPECT_EQ(Mod(16 * x + 5, 16), Mod(SymExpr(5), 16));
  EXPECT_EQ(Mod(Mod(x, 32), 16), Mod(x, 16));
  EXPECT_EQ(Mod(x, 1), SymExpr(0));
  EXPECT_EQ(Min(x, x), x);
  EXPECT_EQ(Min(x + 1, x), x);
  EXPECT_EQ(Max(x + 1, x), x + 1);
  EXPECT_EQ(Min(x, S("y")), Min(S("y"), x));
}

TEST(SymExprTest, EvaluatesWithFloorSemantics) {
  SymExpr x = S("x"), y = S("y");
  Assignment v{{"x", -7}, {"y", 2}};
  EXPECT_EQ(*FloorDiv(x, y).Evaluate(v), -4);
  EXPECT_EQ(*Mod(x, y).Evaluate(v), 1);
  EXPECT_EQ(*(3 * x * y + Max(x, y)).Evaluate(v), -40);
  EXPECT_EQ(*Min(x, y).Evaluate(v), -7);
}

TEST(SymExprTest, EvaluationErrorsAreValues) {
  SymExpr x = S("x");
  absl::StatusOr<int64_t> missing = (x + 1).Evaluate({});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("'x'"), std::string::npos);
  EXPECT_FALSE(FloorDiv(1, x).Evaluate({{"x", 0}}).ok());
  EXPECT_FALSE(Mod(x, S("y")).Evaluate({{"x", 3}, {"y", 0}}).ok());
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  EXPECT_EQ((x + 1).Evaluate({{"x", kMax}}).status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ((x * x).Evaluate({{"x", int64_t{1} << 32}}).status().code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(FloorDiv(x, S("y")).Evaluate({{"x", kMin}, {"y", -1}}).status().code(),
            absl::StatusCode::kOutOfRange);
}

TEST(SymExprTest, CoefficientOverflowStaysUnexpandedAndFailsEvaluation) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  SymExpr big = SymExpr(kMax) * S("x") + SymExpr(kMax) * S("x");
  EXPECT_EQ(big.Evaluate({{"x", 1}}).status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(*big.Evaluate({{"x", 0}}), 0);
  SymExpr over = SymExpr(kMax) + 1;
  EXPECT_FALSE(over.IsConst());
  EXPECT_EQ(over.Evaluate({}).status().code(), absl::StatusCode::kOutOfRange);
}

TEST(SymExprTest, Substitute) {
  SymExpr x = S("x"), y = S("y");
  SymExpr e = 2 * x + FloorDiv(x, 4);
  EXPECT_EQ(e.Substitute({{"x", y + 1}}), 2 * y + 2 + FloorDiv(y + 1, 4));
  EXPECT_EQ(e.Substitute({{"x", SymExpr(8)}}), SymExpr(18));
  EXPECT_EQ(e.Substitute({}), e);
}

TEST(SymExprTest, SymbolsAndOrder) {
  SymExpr e = S("b") * S("a") + Min(S("c"), 3);
  EXPECT_EQ(e.Symbols(), (absl::btree_set<std::string>{"a", "b", "c"}));
  EXPECT_TRUE(SymExpr(1) < S("a"));
  EXPECT_FALSE(S("a") < S("a"));
  EXPECT_TRUE(S("a") < S("b"));
}

TEST(SymExprTest, InterningIsThreadSafe) {
  std::vector<std::thread> threads;
  // The results are kept: nodes are freed with their last reference, so
  // identity is only meaningful between live expressions.
  std::vector<SymExpr> results(8);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([t, &results] {
      SymExpr acc;
      for (int i = 0; i < 2000; ++i) acc = acc + SymExpr::Symbol("thread_sym") * (i % 7);
      results[t] = acc;
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 1; t < 8; ++t) EXPECT_EQ(results[t].node(), results[0].node());
}

}  // namespace
}  // namespace shapeshift
