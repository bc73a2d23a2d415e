#include "shapes/sym_expr_visitor.h"

#include <initializer_list>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace shapeshift {
namespace {

using ::testing::ElementsAre;

// Names the Visit* a node reaches and what it was given.
class KindNamer final : public SymExprVisitor<std::string, int> {
  std::string VisitConst(const SymExpr&, int64_t value, int tag) override { return absl::StrCat("const ", value, " #", tag); }
  std::string VisitSymbol(const SymExpr&, const std::string& name, int tag) override {
    return absl::StrCat("symbol ", name, " #", tag);
  }
  std::string VisitAdd(const SymExpr&, absl::Span<const SymExpr> terms, int tag) override {
    return absl::StrCat("add of ", terms.size(), " #", tag);
  }
  std::string VisitMul(const SymExpr&, absl::Span<const SymExpr> factors, int tag) override {
    return absl::StrCat("mul of ", factors.size(), " #", tag);
  }
  std::string VisitFloorDiv(const SymExpr&, const SymExpr& a, const SymExpr& b, int tag) override {
    return absl::StrCat("floordiv ", a.ToString(), " by ", b.ToString(), " #", tag);
  }
  std::string VisitMod(const SymExpr&, const SymExpr& a, const SymExpr& b, int tag) override {
    return absl::StrCat("mod ", a.ToString(), " by ", b.ToString(), " #", tag);
  }
  std::string VisitMin(const SymExpr&, const SymExpr& a, const SymExpr& b, int tag) override {
    return absl::StrCat("min ", a.ToString(), ", ", b.ToString(), " #", tag);
  }
  std::string VisitMax(const SymExpr&, const SymExpr& a, const SymExpr& b, int tag) override {
    return absl::StrCat("max ", a.ToString(), ", ", b.ToString(), " #", tag);
  }
};

TEST(SymExprVisitorTest, EveryKindReachesItsOwnVisitWithItsOperands) {
  SymExpr s = SymExpr::Symbol("seq");
  SymExpr b = SymExpr::Symbol("batch");
  std::vector<SymExpr> one_of_each = {SymExpr(-7), s, s + b + 1, 2 * s * b, FloorDiv(s + 15, 16),
                                      Mod(s, b),   Min(s, 128), Max(s, b)};
  KindNamer namer;
  std::vector<std::string> names;
  for (size_t i = 0; i < one_of_each.size(); ++i) {
    EXPECT_EQ(static_cast<size_t>(one_of_each[i].kind()), i) << one_of_each[i];  // enum order
    names.push_back(namer.Visit(one_of_each[i], static_cast<int>(i)));
  }
  EXPECT_THAT(names, ElementsAre("const -7 #0", "symbol seq #1", "add of 3 #2", "mul of 3 #3",
                                 "floordiv seq + 15 by 16 #4", "mod seq by batch #5", "min 128, seq #6",
                                 "max batch, seq #7"));
  // A kind appended to ExprKind must be added above (and to KindNamer,
  // which otherwise does not compile).
  EXPECT_EQ(static_cast<size_t>(ExprKind::kMax) + 1, names.size());
}

// A fold written on the base: the number of distinct nodes, each counted
// once however often it is shared.
class DistinctNodes final : public SymExprVisitor<void> {
 public:
  int Of(const SymExpr& e) {
    Count(e);
    return count_;
  }

 private:
  void Count(const SymExpr& e) {
    if (!seen_.insert(e).second) return;
    ++count_;
    Visit(e);
  }
  void VisitConst(const SymExpr&, int64_t) override {}
  void VisitSymbol(const SymExpr&, const std::string&) override {}
  void VisitAdd(const SymExpr&, absl::Span<const SymExpr> ops) override { All(ops); }
  void VisitMul(const SymExpr&, absl::Span<const SymExpr> ops) override { All(ops); }
  void VisitFloorDiv(const SymExpr&, const SymExpr& a, const SymExpr& b) override { All({a, b}); }
  void VisitMod(const SymExpr&, const SymExpr& a, const SymExpr& b) override { All({a, b}); }
  void VisitMin(const SymExpr&, const SymExpr& a, const SymExpr& b) override { All({a, b}); }
  void VisitMax(const SymExpr&, const SymExpr& a, const SymExpr& b) override { All({a, b}); }
  void All(std::initializer_list<SymExpr> ops) { All(absl::MakeConstSpan(ops.begin(), ops.size())); }
  void All(absl::Span<const SymExpr> ops) {
    for (const SymExpr& o : ops) Count(o);
  }

  int count_ = 0;
  absl::flat_hash_set<SymExpr> seen_;
};

TEST(SymExprVisitorTest, AWalkOnTheBaseSeesSharedNodesOnce) {
  SymExpr x = SymExpr::Symbol("x");
  SymExpr e = x;
  for (int i = 0; i < 40; ++i) e = Max(e, FloorDiv(e, 2));  // 2^40 leaves as a tree
  // Each level adds max(...) and (...) // 2; plus x and the constant 2.
  EXPECT_EQ(DistinctNodes().Of(e), 2 * 40 + 2);
}

}  // namespace
}  // namespace shapeshift
