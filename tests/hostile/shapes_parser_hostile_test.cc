// Hostile text at the shape parsers' door (what `--guards`, `--dim` and
// recorded guard logs feed them): empty or garbage text, integers that do
// not fit int64, bytes outside ASCII, and nesting deep enough to exhaust a
// naive recursive-descent parser's stack. Each is an error naming the
// problem (and its column), never a crash.
#include <string>

#include "gmock/gmock.h"
#include "graph/onnx/importer.h"
#include "gtest/gtest.h"
#include "shapes/predicate.h"
#include "shapes/sym_expr.h"

namespace shapeshift {
namespace {

using ::testing::HasSubstr;

std::string ExprError(const std::string& text) {
  absl::StatusOr<SymExpr> e = ParseSymExpr(text);
  EXPECT_FALSE(e.ok()) << "`" << text << "` parsed as " << e->ToString();
  return e.ok() ? "" : std::string(e.status().message());
}

std::string PredError(const std::string& text) {
  absl::StatusOr<Predicate> p = ParsePredicate(text);
  EXPECT_FALSE(p.ok()) << "`" << text << "` parsed as " << p->ToString();
  return p.ok() ? "" : std::string(p.status().message());
}

TEST(ShapesParserHostileTest, EmptyAndBlank) {
  EXPECT_THAT(ExprError(""), HasSubstr("end of input"));
  EXPECT_THAT(ExprError(" \t\n"), HasSubstr("end of input"));
  EXPECT_THAT(PredError(""), HasSubstr("end of input"));
}

TEST(ShapesParserHostileTest, IntegersBeyondInt64) {
  EXPECT_THAT(ExprError("9223372036854775808"), HasSubstr("does not fit in int64"));
  EXPECT_THAT(ExprError("x + 99999999999999999999999999"), HasSubstr("column 5"));
  EXPECT_THAT(PredError("x < 18446744073709551616"), HasSubstr("does not fit in int64"));
}

TEST(ShapesParserHostileTest, ZeroDivisorsAreErrorsNotAnswers) {
  EXPECT_THAT(PredError("seq%0 == 0"), HasSubstr("division by zero"));
  EXPECT_THAT(PredError("seq%0 == 0"), HasSubstr("column 4"));
  EXPECT_THAT(ExprError("seq // 0"), HasSubstr("column 5"));
  EXPECT_THAT(ExprError("(seq + 1) // (seq - seq)"), HasSubstr("division by zero"));
}

TEST(ShapesParserHostileTest, BytesOutsideTheGrammar) {
  EXPECT_THAT(ExprError(std::string("a \0 b", 5)), HasSubstr("column 3"));
  EXPECT_THAT(ExprError("seq / 2"), HasSubstr("unexpected character '/'"));
  EXPECT_THAT(ExprError("s\xc3\xa9q"), HasSubstr("column 2"));
  EXPECT_THAT(PredError("a = b"), HasSubstr("unexpected character '='"));
}

TEST(ShapesParserHostileTest, TruncatedAndUnbalanced) {
  for (const char* text : {"min(", "min(a,", "max(a, b", "a //", "(a + 1", "a + 1)", "-", "a b"}) {
    EXPECT_THAT(ExprError(text), HasSubstr("column")) << text;
  }
  for (const char* text : {"a <", "a < b &&", "!(a < b", "(a < b))", "a < b < c", "true false"}) {
    EXPECT_THAT(PredError(text), HasSubstr("column")) << text;
  }
}

TEST(ShapesParserHostileTest, DimRangeFlags) {
  for (const char* flag : {"seq", "seq=", "seq=5..1", "=1..4", "seq=1..", "seq=a..b",
                           "seq=1..99999999999999999999", "seq=-5..-1"}) {
    ImportOptions options;
    absl::Status s = ParseDimRangeFlag(flag, &options);
    EXPECT_FALSE(s.ok()) << flag;
    EXPECT_THAT(std::string(s.message()), HasSubstr(flag)) << flag;
  }
}

}  // namespace
}  // namespace shapeshift
