// Property tests for predicates: printing round-trips through the parser,
// and normalization at construction never changes the meaning.
#include "gtest/gtest.h"
#include "shapes/predicate.h"
#include "tests/shapes/random_expr.h"

namespace shapeshift {
namespace {

using testing::RandomExprs;
using testing::TestSeed;

constexpr int kPredicates = 10000;

TEST(PredicatePropertyTest, PrintingRoundTripsThroughTheParser) {
  RandomExprs gen(TestSeed() + 3000);
  for (int i = 0; i < kPredicates; ++i) {
    Predicate p = gen.Pred(3, 2);
    absl::StatusOr<Predicate> back = ParsePredicate(p.ToString());
    if (testing::HasZeroDivisor(p)) {  // `x % 0` is refused as text, never read back as a value
      ASSERT_FALSE(back.ok()) << p.ToString() << " parsed as " << back->ToString();
      ASSERT_NE(back.status().message().find("division by zero"), std::string::npos) << back.status();
      continue;
    }
    ASSERT_TRUE(back.ok()) << p.ToString() << ": " << back.status();
    ASSERT_EQ(*back, p) << p.ToString() << " parsed as " << back->ToString();
  }
}

TEST(PredicatePropertyTest, NormalizationKeepsMeaning) {
  RandomExprs gen(TestSeed() + 4000);
  int compared = 0;
  for (int i = 0; i < kPredicates; ++i) {
    auto l = gen.Expr(3), r = gen.Expr(3);
    const int op = static_cast<int>(gen.Uniform(0, 6));
    int64_t k = gen.Uniform(1, 12);
    Predicate p = op == 0   ? Predicate::Eq(l->Build(), r->Build())
                  : op == 1 ? Predicate::Ne(l->Build(), r->Build())
                  : op == 2 ? Predicate::Lt(l->Build(), r->Build())
                  : op == 3 ? Predicate::Le(l->Build(), r->Build())
                  : op == 4 ? Predicate::Gt(l->Build(), r->Build())
                  : op == 5 ? Predicate::Ge(l->Build(), r->Build())
                            : Predicate::Divisible(l->Build(), k);
    for (int s = 0; s < 3; ++s) {
      Assignment v = gen.Values(-30, 30);
      std::optional<int64_t> a = l->Eval(v), b = r->Eval(v);
      if (!a || !b) continue;
      bool want = op == 0   ? *a == *b
                  : op == 1 ? *a != *b
                  : op == 2 ? *a < *b
                  : op == 3 ? *a <= *b
                  : op == 4 ? *a > *b
                  : op == 5 ? *a >= *b
                            : FloorModInt(*a, k) == 0;
      absl::StatusOr<bool> got = p.Evaluate(v);
      if (!got.ok() && got.status().code() == absl::StatusCode::kOutOfRange) continue;
      ASSERT_TRUE(got.ok()) << p.ToString() << ": " << got.status();
      ASSERT_EQ(*got, want) << p.ToString() << " at a=" << v["a"] << " b=" << v["b"]
                            << " c=" << v["c"];
      ++compared;
    }
    Predicate negated = Predicate::Not(p);
    Assignment v = gen.Values(-30, 30);
    absl::StatusOr<bool> pv = p.Evaluate(v), nv = negated.Evaluate(v);
    ASSERT_EQ(pv.ok(), nv.ok());
    if (pv.ok()) ASSERT_NE(*pv, *nv) << p.ToString() << " vs " << negated.ToString();
  }
  EXPECT_GT(compared, kPredicates);
}

}  // namespace
}  // namespace shapeshift
