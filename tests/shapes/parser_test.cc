#include "gtest/gtest.h"
#include "shapes/predicate.h"
#include "shapes/sym_expr.h"

namespace shapeshift {
namespace {

SymExpr S(const char* name) { return SymExpr::Symbol(name); }

TEST(ParseSymExprTest, ParsesOperatorsWithPrecedence) {
  EXPECT_EQ(*ParseSymExpr("2*seq + 1"), 2 * S("seq") + 1);
  EXPECT_EQ(*ParseSymExpr("(seq + 15) // 16"), CeilDiv(S("seq"), 16));
  EXPECT_EQ(*ParseSymExpr("a - b - c"), S("a") - S("b") - S("c"));
  EXPECT_EQ(*ParseSymExpr("a * b // 4 % 3"), Mod(FloorDiv(S("a") * S("b"), 4), 3));
  EXPECT_EQ(*ParseSymExpr("-x // 2"), FloorDiv(-S("x"), 2));
  EXPECT_EQ(*ParseSymExpr("x // -2"), FloorDiv(S("x"), -2));
  EXPECT_EQ(*ParseSymExpr("min(a, max(b, 3))"), Min(S("a"), Max(S("b"), 3)));
  EXPECT_EQ(*ParseSymExpr("  7 "), SymExpr(7));
}

TEST(ParseSymExprTest, RoundTripsPrintedText) {
  SymExpr x = S("x"), y = S("y");
  for (SymExpr e : {2 * x + 1, x - 2 * y, FloorDiv(x + y, 3) * x, Mod(-x, 5), Min(x, 3) - Max(y, -2),
                    FloorDiv(x, y * 2), -x * y, SymExpr(std::numeric_limits<int64_t>::min()),
                    x * FloorDiv(y, x)}) {
    absl::StatusOr<SymExpr> back = ParseSymExpr(e.ToString());
    ASSERT_TRUE(back.ok()) << e.ToString() << ": " << back.status();
    EXPECT_EQ(*back, e) << e.ToString() << " came back as " << back->ToString();
  }
}

TEST(ParseSymExprTest, ReportsErrorsWithColumn) {
  absl::StatusOr<SymExpr> bad = ParseSymExpr("seq + * 2");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("column 7"), std::string::npos) << bad.status();
  EXPECT_FALSE(ParseSymExpr("").ok());
  EXPECT_FALSE(ParseSymExpr("a $ b").ok());
  EXPECT_FALSE(ParseSymExpr("(a + b").ok());
  EXPECT_FALSE(ParseSymExpr("min(a)").ok());
  EXPECT_FALSE(ParseSymExpr("99999999999999999999").ok());
  EXPECT_FALSE(ParseSymExpr("a b").ok());
}

TEST(ParsePredicateTest, ParsesGuards) {
  absl::StatusOr<Predicate> p = ParsePredicate("seq > 128 && seq % 16 == 0");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(*p, Predicate::Gt(S("seq"), 128) && Predicate::Divisible(S("seq"), 16));
  EXPECT_EQ(p->ToString(), "seq > 128 && seq % 16 == 0");
  EXPECT_EQ(*ParsePredicate("true"), Predicate::True());
  EXPECT_EQ(*ParsePredicate("false || a < 3"), Predicate::Lt(S("a"), 3));
  EXPECT_EQ(*ParsePredicate("(a + 1) * 2 < b"), Predicate::Lt((S("a") + 1) * 2, S("b")));
  EXPECT_EQ(*ParsePredicate("!(a == b) || (c <= 4)"),
            Predicate::Ne(S("a"), S("b")) || Predicate::Le(S("c"), 4));
  EXPECT_EQ(*ParsePredicate("a<=b&&b<c"), Predicate::Le(S("a"), S("b")) && Predicate::Lt(S("b"), S("c")));
}

TEST(ParsePredicateTest, RoundTripsPrintedText) {
  SymExpr a = S("a"), b = S("b");
  std::vector<Predicate> preds = {
      Predicate::Gt(a, 128) && Predicate::Divisible(a, 16),
      Predicate::Lt(a, 3) || Predicate::Ge(b, 4),
      (Predicate::Lt(a, 3) || Predicate::Ge(b, 4)) && Predicate::Ne(a, b),
      Predicate::Not(Predicate::Divisible(a + b, 8)),
      Predicate::Not(Predicate::Lt(a, 3) && Predicate::Lt(b, 3)),
      Predicate::Eq(FloorDiv(a, 2) * 2, a),
      Predicate::True(),
      Predicate::False(),
  };
  for (const Predicate& p : preds) {
    absl::StatusOr<Predicate> back = ParsePredicate(p.ToString());
    ASSERT_TRUE(back.ok()) << p.ToString() << ": " << back.status();
    EXPECT_EQ(*back, p) << p.ToString() << " came back as " << back->ToString();
  }
}

TEST(ParsePredicateTest, ReportsErrors) {
  EXPECT_FALSE(ParsePredicate("seq").ok());
  EXPECT_FALSE(ParsePredicate("seq >").ok());
  EXPECT_FALSE(ParsePredicate("seq > 1 &&").ok());
  EXPECT_FALSE(ParsePredicate("(seq > 1").ok());
  EXPECT_FALSE(ParsePredicate("seq = 1").ok());
  absl::StatusOr<Predicate> p = ParsePredicate("seq > 1 && )");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("column 12"), std::string::npos) << p.status();
}

TEST(ParserNestingTest, DeepNestingIsAnErrorNotAStackOverflow) {
  const std::string parens = std::string(20000, '(') + "x" + std::string(20000, ')');
  absl::StatusOr<SymExpr> e = ParseSymExpr(parens);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("nesting deeper than"), std::string::npos) << e.status();
  EXPECT_FALSE(ParseSymExpr(std::string(20000, '-') + "x").ok());
  absl::StatusOr<Predicate> p = ParsePredicate(std::string(20000, '!') + "x > 1");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("nesting deeper than"), std::string::npos) << p.status();
  // Moderate nesting still parses.
  EXPECT_EQ(*ParseSymExpr(std::string(100, '(') + "x" + std::string(100, ')')), S("x"));
}

}  // namespace
}  // namespace shapeshift
