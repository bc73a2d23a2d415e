#include "runtime/sym_tape.h"

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

}  // namespace
}  // namespace shapeshift::runtime
