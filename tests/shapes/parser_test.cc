#include <limits>
#include <utility>
#include <vector>

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

TEST(ParseSymExprTest, ZeroDivisorIsAnErrorNamingTheOperator) {
  // `seq % 0` has no value at any seq: refused as text, not answered later.
  for (const auto& [text, column] : std::vector<std::pair<const char*, const char*>>{
           {"seq % 0", "column 5"}, {"seq // 0", "column 5"}, {"seq%0", "column 4"},
           {"seq // (2 - 2)", "column 5"}, {"seq % (x - x)", "column 5"}, {"1 + seq // -0", "column 9"}}) {
    absl::StatusOr<SymExpr> e = ParseSymExpr(text);
    ASSERT_FALSE(e.ok()) << text << " parsed as " << e->ToString();
    EXPECT_NE(e.status().message().find("division by zero"), std::string::npos) << e.status();
    EXPECT_NE(e.status().message().find(column), std::string::npos) << text << ": " << e.status();
  }
  absl::StatusOr<Predicate> p = ParsePredicate("seq%0 == 0");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("column 4"), std::string::npos) << p.status();
  // A divisor that is not the constant 0 is still fine.
  EXPECT_EQ(*ParseSymExpr("seq % (x - 1)"), Mod(S("seq"), S("x") - 1));
}

TEST(ParseSymExprTest, Int64MinIsWritable) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(*ParseSymExpr("-9223372036854775808"), SymExpr(kMin));
  EXPECT_EQ(*ParseSymExpr("seq + -9223372036854775808"), S("seq") + kMin);
  EXPECT_EQ(*ParseSymExpr("9223372036854775807"), SymExpr(std::numeric_limits<int64_t>::max()));
  // Its magnitude alone is no int64: the error says the range.
  for (const char* text : {"9223372036854775808", "seq - 9223372036854775808", "-9223372036854775809"}) {
    absl::StatusOr<SymExpr> e = ParseSymExpr(text);
    ASSERT_FALSE(e.ok()) << text << " parsed as " << e->ToString();
    EXPECT_NE(e.status().message().find("-9223372036854775808..9223372036854775807"), std::string::npos)
        << e.status();
  }
  absl::StatusOr<Predicate> p = ParsePredicate("seq >= -9223372036854775808");
  ASSERT_TRUE(p.ok()) << p.status();
}

TEST(ParsePredicateTest, ComparisonsWhoseConstantsOverflowRoundTrip) {
  // Found by fuzz_smoke.predicate: constants whose difference or sum is no
  // int64 must still print as text that parses back to the same predicate.
  for (const char* text : {"014804 !=  - 9223372036854775807 ", "-9223372036854775807 - 922337203675807 <= 0",
                           "9223372036854775807 > -9223372036854775808",
                           "seq + 9223372036854775807 + 9223372036854775807 <= 0",
                           "-9223372036854775807 - 922337203675807 + seq < 5"}) {
    absl::StatusOr<Predicate> p = ParsePredicate(text);
    ASSERT_TRUE(p.ok()) << text << ": " << p.status();
    absl::StatusOr<Predicate> back = ParsePredicate(p->ToString());
    ASSERT_TRUE(back.ok()) << p->ToString() << ": " << back.status();
    EXPECT_EQ(*back, *p) << text << " prints as " << p->ToString() << ", which parses to " << back->ToString();
  }
  // Two constants compare exactly even when their difference overflows.
  EXPECT_EQ(*ParsePredicate("14804 != -9223372036854775807"), Predicate::True());
  EXPECT_EQ(*ParsePredicate("9223372036854775807 < -9223372036854775808"), Predicate::False());
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
