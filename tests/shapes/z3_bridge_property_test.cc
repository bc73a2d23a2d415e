// Property tests tying the Z3 translation to our evaluator: floordiv/mod
// agree for every sign, random expressions evaluate identically, and Z3
// proves each canonicalized expression equal to the operation tree it was
// built from, under declared ranges.
#include "gtest/gtest.h"
#include "shapes/z3_bridge.h"
#include "tests/shapes/random_expr.h"

namespace shapeshift {
namespace {

using testing::RawExpr;
using testing::RawOp;
using testing::RandomExprs;
using testing::TestSeed;

TEST(Z3BridgePropertyTest, FloorDivAndModAgreeForAllSigns) {
  Z3Bridge z3;
  RandomExprs gen(TestSeed() + 6000);
  SymExpr x = SymExpr::Symbol("x"), y = SymExpr::Symbol("y");
  SymExpr div = FloorDiv(x, y), mod = Mod(x, y);
  for (int i = 0; i < 10000; ++i) {
    int64_t a = gen.Uniform(-1000, 1000), b = gen.Uniform(-40, 40);
    if (b == 0) continue;
    Assignment v{{"x", a}, {"y", b}};
    ASSERT_EQ(*z3.EvaluateInZ3(div, v), FloorDivInt(a, b)) << a << " // " << b;
    ASSERT_EQ(*z3.EvaluateInZ3(mod, v), FloorModInt(a, b)) << a << " % " << b;
  }
}

TEST(Z3BridgePropertyTest, RandomExpressionsEvaluateIdentically) {
  Z3Bridge z3;
  RandomExprs gen(TestSeed() + 7000);
  int compared = 0;
  for (int i = 0; i < 10000; ++i) {
    SymExpr e = gen.Expr(3)->Build();
    Assignment v = gen.Values(-30, 30);
    absl::StatusOr<int64_t> ours = e.Evaluate(v);
    if (!ours.ok()) continue;  // division by zero: unspecified in Z3
    absl::StatusOr<int64_t> theirs = z3.EvaluateInZ3(e, v);
    ASSERT_TRUE(theirs.ok()) << e.ToString() << ": " << theirs.status();
    ASSERT_EQ(*theirs, *ours) << e.ToString();
    ++compared;
  }
  EXPECT_GT(compared, 5000);
}

// Names every node of a raw tree with a fresh symbol defined by one
// operation on its children's symbols, so the definitions are the tree as
// written and cannot be simplified away.
class TreeDefinitions {
 public:
  SymExpr Name(const RawExpr& e) {
    SymExpr t = SymExpr::Symbol("t" + std::to_string(next_++));
    SymExpr def;
    switch (e.op) {
      case RawOp::kConst: def = SymExpr(e.value); break;
      case RawOp::kSymbol: def = SymExpr::Symbol(e.name); break;
      default: {
        SymExpr a = Name(*e.a), b = Name(*e.b);
        switch (e.op) {
          case RawOp::kAdd: def = a + b; break;
          case RawOp::kSub: def = a - b; break;
          case RawOp::kMul: def = a * b; break;
          case RawOp::kFloorDiv: def = FloorDiv(a, b); defined_.push_back(Predicate::Ne(b, 0)); break;
          case RawOp::kMod: def = Mod(a, b); defined_.push_back(Predicate::Ne(b, 0)); break;
          case RawOp::kMin: def = Min(a, b); break;
          default: def = Max(a, b); break;
        }
      }
    }
    defs_.push_back(Predicate::Eq(t, def));
    return t;
  }
  std::vector<Predicate> Assumptions() const {
    std::vector<Predicate> all = defs_;
    all.insert(all.end(), defined_.begin(), defined_.end());
    return all;
  }

 private:
  int next_ = 0;
  std::vector<Predicate> defs_;
  std::vector<Predicate> defined_;  // every divisor is non-zero
};

TEST(Z3BridgePropertyTest, ProvesSimplifiedEqualsOriginalUnderRanges) {
  Z3Bridge z3(/*timeout_ms=*/200);
  RandomExprs gen(TestSeed() + 8000);
  gen.set_linear(true);
  Predicate ranges = *ParsePredicate("a >= 1 && a <= 64 && b >= -8 && b <= 512 && c >= 0 && c <= 16");
  int proven = 0;
  constexpr int kSample = 200;
  for (int i = 0; i < kSample; ++i) {
    auto raw = gen.Expr(3);
    TreeDefinitions defs;
    SymExpr root = defs.Name(*raw);
    std::vector<Predicate> assumptions = defs.Assumptions();
    assumptions.push_back(ranges);
    ImplicationResult r = z3.Implies(assumptions, Predicate::Eq(root, raw->Build()));
    ASSERT_NE(r.verdict, Verdict::kRefuted) << raw->Build().ToString();
    if (r.verdict == Verdict::kProven) ++proven;
  }
  // Linear arithmetic with floordiv/mod by constants is decidable; allow a
  // few timeouts on a loaded machine, never a refutation.
  EXPECT_GE(proven, kSample * 95 / 100);
}

}  // namespace
}  // namespace shapeshift
