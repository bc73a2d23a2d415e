// SymExpr lifetime: interned nodes are reference counted and leave the
// intern table with their last reference, so the table holds only what is
// alive (a long-running process compiling many shapes stays bounded); deep
// expressions are freed without recursion; depth and tree size are tracked
// for the doors that bound them.
#include <cstdint>
#include <thread>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "shapes/sym_expr.h"

namespace shapeshift {
namespace {

SymExpr S(const char* name) { return SymExpr::Symbol(name); }

TEST(SymExprLifetimeTest, DroppedExpressionsLeaveTheInternTable) {
  const size_t before = LiveSymExprCount();
  {
    std::vector<SymExpr> kept;
    for (int64_t k = 2000; k < 7000; ++k) {
      kept.push_back(FloorDiv(S("seq") * k + 7, S("batch")) + Max(S("seq"), k));
    }
    EXPECT_GE(LiveSymExprCount(), before + 5000 * 4);
  }
  EXPECT_EQ(LiveSymExprCount(), before);
}

TEST(SymExprLifetimeTest, ASubexpressionLivesWhileAnyExpressionUsesIt) {
  const size_t before = LiveSymExprCount();
  SymExpr outer;
  {
    SymExpr inner = FloorDiv(S("lifetime_a"), 3);
    outer = Max(inner, S("lifetime_b")) + 1;
  }
  // `inner` went out of scope, but `outer` still holds it: rebuilding it
  // finds the same node.
  SymExpr again = FloorDiv(S("lifetime_a"), 3);
  ASSERT_EQ(outer.kind(), ExprKind::kAdd);
  SymExpr max = outer.operands()[0];  // max(...) + 1: the constant term comes last
  ASSERT_EQ(max.kind(), ExprKind::kMax);
  EXPECT_TRUE(max.operands()[0] == again || max.operands()[1] == again);
  EXPECT_EQ(outer.ToString(), "max(lifetime_b, lifetime_a // 3) + 1");
  outer = 0;
  again = 0;
  max = 0;
  EXPECT_EQ(LiveSymExprCount(), before);
}

TEST(SymExprLifetimeTest, CopiesAndMovesKeepTheValue) {
  SymExpr e = S("seq") * 4096 + 3;
  SymExpr copy = e;
  SymExpr moved = std::move(copy);
  EXPECT_EQ(moved, e);
  EXPECT_EQ(copy, SymExpr(0));  // a moved-from SymExpr is the constant 0
  e = e;                        // self-assignment keeps the node alive
  EXPECT_EQ(e.ToString(), "4096*seq + 3");
  std::vector<SymExpr> v(1000, e);
  v.resize(5000, moved);  // reallocation moves every element
  for (const SymExpr& x : v) EXPECT_EQ(x, e);
}

// 200,000 levels: a recursive free would need a stack frame per level.
TEST(SymExprLifetimeTest, AVeryDeepExpressionIsFreedIteratively) {
  const size_t before = LiveSymExprCount();
  {
    SymExpr e = S("deep");
    // FloorDiv by a symbol and + 1 build one node each, without comparing
    // the deep operand structurally.
    for (int i = 0; i < 100000; ++i) e = FloorDiv(e + 1, S("d"));
    EXPECT_EQ(e.depth(), 200001);
  }
  EXPECT_EQ(LiveSymExprCount(), before);
}

TEST(SymExprLifetimeTest, ThreadsBuildingTheSameExpressionsShareNodesAndLeaveNothing) {
  const size_t before = LiveSymExprCount();
  constexpr int kThreads = 4;
  std::vector<std::vector<SymExpr>> built(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &built] {
      for (int round = 0; round < 20; ++round) {
        std::vector<SymExpr> mine;
        for (int64_t k = 5000; k < 5400; ++k) mine.push_back(Min(S("seq") * k, S("past") + k) + k * k);
        if (round == 19) built[t] = std::move(mine);  // keep the last round, drop the others
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 1; t < kThreads; ++t) {
    ASSERT_EQ(built[t].size(), built[0].size());
    for (size_t i = 0; i < built[0].size(); ++i) EXPECT_EQ(built[t][i].node(), built[0][i].node());
  }
  built.clear();
  EXPECT_EQ(LiveSymExprCount(), before);
}

TEST(SymExprSizeTest, DepthAndTreeSizeCountASharedSubexpressionAtEveryOccurrence) {
  SymExpr seq = S("seq");
  EXPECT_EQ(seq.depth(), 1);
  EXPECT_EQ(seq.tree_size(), 1);
  EXPECT_EQ(SymExpr(7).depth(), 1);
  SymExpr q = FloorDiv(seq + 15, 16);  // floordiv(add(seq, 15), 16)
  EXPECT_EQ(q.depth(), 3);
  EXPECT_EQ(q.tree_size(), 5);
  // e_{k+1} = max(e_k, e_k // 2): one new node per level, twice the tree.
  SymExpr e = seq;
  for (int k = 0; k < 40; ++k) e = Max(e, FloorDiv(e, 2));
  EXPECT_EQ(e.depth(), 1 + 2 * 40);
  EXPECT_GT(e.tree_size(), kMaxSymExprTreeSize);  // exponential as a tree
  EXPECT_LT(e.tree_size(), int64_t{1} << 62);     // saturates, never overflows
}

}  // namespace
}  // namespace shapeshift
