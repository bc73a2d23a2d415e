#include "runtime/sym_tape.h"

#include <limits>
#include <random>

#include "gtest/gtest.h"

namespace shapeshift::runtime {
namespace {

TEST(SymTapeTest, AgreesWithSymExprEvaluateOnRandomPoints) {
  SymExpr b = SymExpr::Symbol("batch"), s = SymExpr::Symbol("seq"), p = SymExpr::Symbol("past");
  std::vector<SymExpr> exprs = {b * s * 768 * 4, (s + p) * 4 - 3, FloorDiv(s + 15, 16) * 16, Mod(s - 7, 5),
                                Min(s, 128) + Max(p, 3), FloorDiv(-s, 3), 42, b * b * s - p * s};
  SymTape tape({"batch", "seq", "past"});
  std::vector<int> slots;
  for (SymExpr e : exprs) slots.push_back(tape.Add(e).value());
  std::mt19937 rng(7);
  std::vector<int64_t> values(tape.num_slots());
  for (int trial = 0; trial < 200; ++trial) {
    Assignment a = {{"batch", rng() % 9}, {"seq", rng() % 600}, {"past", rng() % 512}};
    values[0] = a["batch"], values[1] = a["seq"], values[2] = a["past"];
    ASSERT_TRUE(tape.Evaluate(absl::MakeSpan(values)).ok());
    for (size_t i = 0; i < exprs.size(); ++i) {
      EXPECT_EQ(values[slots[i]], exprs[i].Evaluate(a).value()) << exprs[i] << " at trial " << trial;
    }
  }
}

TEST(SymTapeTest, SharedSubexpressionsGetOneSlot) {
  SymExpr s = SymExpr::Symbol("seq");
  SymTape tape({"seq"});
  int first = tape.Add(s * s * 4).value();
  int again = tape.Add(s * s * 4).value();
  EXPECT_EQ(first, again);
  EXPECT_EQ(tape.Add(s).value(), 0);
}

TEST(SymTapeTest, UnboundSymbolIsAnErrorNamingIt) {
  SymTape tape({"seq"});
  absl::StatusOr<int> slot = tape.Add(SymExpr::Symbol("seq") + SymExpr::Symbol("vocab"));
  ASSERT_FALSE(slot.ok());
  EXPECT_NE(slot.status().message().find("vocab"), std::string::npos) << slot.status();
}

TEST(SymTapeTest, DivisionByZeroIsAnErrorNotACrash) {
  SymExpr s = SymExpr::Symbol("seq");
  SymTape tape({"seq"});
  ASSERT_TRUE(tape.Add(FloorDiv(100, s)).ok());
  std::vector<int64_t> values(tape.num_slots());
  values[0] = 0;
  EXPECT_FALSE(tape.Evaluate(absl::MakeSpan(values)).ok());
}

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

// Evaluates `expr` at seq = `value` with the tape and with SymExpr::Evaluate,
// which must agree: the same value, or both an error.
absl::StatusOr<int64_t> TapeValue(SymExpr expr, int64_t value) {
  SymTape tape({"seq"});
  absl::StatusOr<int> slot = tape.Add(expr);
  if (!slot.ok()) return slot.status();
  std::vector<int64_t> values(tape.num_slots());
  values[0] = value;
  if (absl::Status s = tape.Evaluate(absl::MakeSpan(values)); !s.ok()) return s;
  return values[*slot];
}

void ExpectOverflowOnlyPastTheBoundary(SymExpr expr, int64_t last_ok, int64_t first_bad) {
  absl::StatusOr<int64_t> ok = TapeValue(expr, last_ok);
  ASSERT_TRUE(ok.ok()) << expr << " at " << last_ok << ": " << ok.status();
  EXPECT_EQ(*ok, expr.Evaluate({{"seq", last_ok}}).value()) << expr;
  absl::StatusOr<int64_t> bad = TapeValue(expr, first_bad);
  ASSERT_FALSE(bad.ok()) << expr << " at " << first_bad << " gave " << *bad;
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kOutOfRange) << bad.status();
  EXPECT_NE(bad.status().message().find("overflow"), std::string::npos) << bad.status();
  EXPECT_NE(bad.status().message().find(expr.ToString()), std::string::npos) << bad.status();
  EXPECT_FALSE(expr.Evaluate({{"seq", first_bad}}).ok()) << "SymExpr::Evaluate disagrees on " << expr;
}

TEST(SymTapeTest, SumsOverflowAtTheInt64BoundariesAsErrorsNamingTheExpression) {
  SymExpr s = SymExpr::Symbol("seq");
  ExpectOverflowOnlyPastTheBoundary(s + kMax, 0, 1);
  ExpectOverflowOnlyPastTheBoundary(s + (kMax - 10), 10, 11);
  ExpectOverflowOnlyPastTheBoundary(s + kMin, 0, -1);
  ExpectOverflowOnlyPastTheBoundary(SymExpr(kMin) - s, 0, 1);
}

TEST(SymTapeTest, ProductsOverflowAtTheInt64BoundariesAsErrorsNamingTheExpression) {
  SymExpr s = SymExpr::Symbol("seq");
  // 3037000499^2 < 2^63 - 1 < 3037000500^2.
  ExpectOverflowOnlyPastTheBoundary(s * s, 3037000499, 3037000500);
  ExpectOverflowOnlyPastTheBoundary(s * s, -3037000499, -3037000500);
  ExpectOverflowOnlyPastTheBoundary(s * 768 * 4, kMax / 3072, kMax / 3072 + 1);
  ExpectOverflowOnlyPastTheBoundary(s * 2, kMin / 2, kMin / 2 - 1);
}

TEST(SymTapeTest, Int64MinFloorDivMinusOneIsAnOverflowNotATrap) {
  SymExpr s = SymExpr::Symbol("seq");
  SymExpr d = SymExpr::Symbol("d");
  SymTape tape({"seq", "d"});
  int div = tape.Add(FloorDiv(s, d)).value();
  int mod = tape.Add(Mod(s, d)).value();
  std::vector<int64_t> values(tape.num_slots());
  values[0] = kMin;
  values[1] = -1;
  absl::Status status = tape.Evaluate(absl::MakeSpan(values));
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), absl::StatusCode::kOutOfRange) << status;
  EXPECT_NE(status.message().find("seq // d"), std::string::npos) << status;
  // Mod alone is defined there (0), as in SymExpr::Evaluate.
  SymTape mod_only({"seq", "d"});
  mod = mod_only.Add(Mod(s, d)).value();
  std::vector<int64_t> mv(mod_only.num_slots());
  mv[0] = kMin;
  mv[1] = -1;
  ASSERT_TRUE(mod_only.Evaluate(absl::MakeSpan(mv)).ok());
  EXPECT_EQ(mv[mod], 0);
  values[1] = 2;
  ASSERT_TRUE(tape.Evaluate(absl::MakeSpan(values)).ok());
  EXPECT_EQ(values[div], kMin / 2);
}

TEST(SymTapeTest, DivisionByZeroNamesTheExpression) {
  SymExpr s = SymExpr::Symbol("seq");
  absl::StatusOr<int64_t> v = TapeValue(FloorDiv(100, s) + 1, 0);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("division by zero"), std::string::npos) << v.status();
  EXPECT_NE(v.status().message().find("100 // seq"), std::string::npos) << v.status();
}

}  // namespace
}  // namespace shapeshift::runtime
