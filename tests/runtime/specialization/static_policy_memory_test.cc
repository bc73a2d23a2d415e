// A long-running process under the static policy: every distinct length
// compiles its own entry, with its own constants (37*8, seq == 37, ...).
// SymExprs are freed with their last reference (shapes/sym_expr.h), so
// compiles whose artifacts are dropped leave nothing behind in the intern
// table, and one session's table grows only with the entries it holds.
#include <cstdint>
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/session.h"
#include "shapes/sym_expr.h"
#include "tests/runtime/runtime_test_util.h"

namespace shapeshift::runtime {
namespace {

std::unique_ptr<Session> StaticSession(int recompile_limit) {
  testing::BuiltModel model = testing::AddRelu();
  SessionOptions options;
  options.policy = SpecializationPolicy::kStatic;
  options.recompile_limit = recompile_limit;
  options.compile.dims = {{"batch", {1, 1}}, {"seq", {1, 4096}}};
  absl::StatusOr<std::unique_ptr<Session>> s =
      Session::Create(ModelSource::Built(std::move(model.graph), std::move(model.env)), options);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *std::move(s) : nullptr;
}

void Serve(Session& session, int64_t seq) {
  absl::StatusOr<std::vector<Tensor>> out =
      session.Run({testing::RandomF32({1, seq, 8}, 1), testing::RandomF32({1, seq, 8}, 2)});
  ASSERT_TRUE(out.ok()) << "seq=" << seq << ": " << out.status();
}

// 100 static compiles of distinct lengths, each session dropped after its
// request: the table is back to its size after the first one every time.
// (Before nodes were freed it grew by every compile's new constants and
// guard atoms, without bound.)
TEST(StaticPolicyMemoryTest, CompilesWhoseArtifactsAreDroppedLeaveTheInternTableAsItWas) {
  {
    std::unique_ptr<Session> warm = StaticSession(4);
    ASSERT_NE(warm, nullptr);
    Serve(*warm, 1);  // process-wide one-time state (LLVM, op tables) is made here
  }
  const size_t baseline = LiveSymExprCount();
  for (int64_t seq = 1000; seq < 1100; ++seq) {
    std::unique_ptr<Session> session = StaticSession(4);
    ASSERT_NE(session, nullptr);
    Serve(*session, seq);
    EXPECT_EQ(session->stats().dispatcher.compiles, 1);
    session.reset();
    ASSERT_LE(LiveSymExprCount(), baseline) << "after the compile for seq=" << seq;
  }
}

// One session keeping every entry: the table grows with the entries it
// holds (a bounded number of expressions per entry), and shrinks back when
// the session goes.
TEST(StaticPolicyMemoryTest, OneSessionsTableGrowsOnlyWithTheEntriesItHolds) {
  const size_t baseline = LiveSymExprCount();
  std::unique_ptr<Session> session = StaticSession(100);
  ASSERT_NE(session, nullptr);
  Serve(*session, 2000);
  const size_t one_entry = LiveSymExprCount();
  for (int64_t seq = 2001; seq < 2050; ++seq) Serve(*session, seq);
  EXPECT_EQ(session->stats().entries, 50u);
  const size_t per_entry = (one_entry - baseline) + 1;
  EXPECT_LE(LiveSymExprCount(), baseline + 50 * per_entry);
  session.reset();
  EXPECT_LE(LiveSymExprCount(), baseline);
}

}  // namespace
}  // namespace shapeshift::runtime
