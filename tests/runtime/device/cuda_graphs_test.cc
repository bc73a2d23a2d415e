// The CUDA graph plan: which symbol is bucketed, the proofs that make a
// graph placed at a bucket's upper bound hold every request of the bucket,
// and the bucket guards with their provenance.
#include "runtime/device/cuda_graphs.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace shapeshift::runtime {
namespace {

using ::testing::HasSubstr;

class CudaGraphPlanTest : public ::testing::Test {
 protected:
  CudaGraphPlanTest() {
    batch = env.DeclareSymbol({"batch", 1, 8}).value();
    seq = env.DeclareSymbol({"seq", 1, 512}).value();
  }
  ShapeEnv env;
  SymExpr batch, seq;
};

TEST_F(CudaGraphPlanTest, BucketsTheWidestSymbolWhenSizesGrowWithIt) {
  CudaGraphPlan plan = PlanCudaGraphs(env, {"batch", "seq"}, "", true, false, 2,
                                      {{"scores", batch * seq * seq * 16}, {"hidden", batch * seq * 768 * 4},
                                       {"weights", SymExpr(768 * 768 * 4)}, {"mask", batch * seq * 8}});
  ASSERT_TRUE(plan.enabled) << plan.disabled_reason;
  EXPECT_EQ(plan.symbol, "seq");
  EXPECT_EQ(plan.symbol_slot, 1);
  EXPECT_EQ(plan.proven_sizes, 3);  // the weights do not depend on seq
  EXPECT_EQ(plan.BucketOf(70), (Bucket{65, 128}));
  EXPECT_EQ(plan.BucketOf(1), (Bucket{1, 1}));
  EXPECT_EQ(plan.BucketOf(512), (Bucket{257, 512}));
  EXPECT_EQ(plan.Describe(plan.BucketOf(300)), "CUDA graph bucket 257..512 of seq");
}

TEST_F(CudaGraphPlanTest, ASizeThatShrinksAsTheSymbolGrowsTurnsGraphsOffWithTheReason) {
  CudaGraphPlan plan = PlanCudaGraphs(env, {"batch", "seq"}, "seq", true, false, 2,
                                      {{"hidden", batch * seq * 4}, {"buffer 'tail'", (SymExpr(512) - seq) * 4}});
  EXPECT_FALSE(plan.enabled);
  EXPECT_THAT(plan.disabled_reason, HasSubstr("buffer 'tail'"));
  EXPECT_THAT(plan.disabled_reason, HasSubstr("not provably non-decreasing in seq"));
}

TEST_F(CudaGraphPlanTest, AChosenSymbolMustBeBoundAndGraphsCanBeTurnedOff) {
  EXPECT_THAT(PlanCudaGraphs(env, {"batch", "seq"}, "past", true, false, 2, {}).disabled_reason,
              HasSubstr("'past' is not a symbol"));
  EXPECT_EQ(PlanCudaGraphs(env, {"batch", "seq"}, "batch", true, false, 2, {}).symbol, "batch");
  EXPECT_FALSE(PlanCudaGraphs(env, {"batch", "seq"}, "", false, false, 2, {}).enabled);
  ShapeEnv fixed;
  ASSERT_TRUE(fixed.DeclareSymbol({"batch", 4, 4}).ok());
  EXPECT_THAT(PlanCudaGraphs(fixed, {"batch"}, "", true, false, 2, {}).disabled_reason,
              HasSubstr("no dynamic symbol"));
}

TEST_F(CudaGraphPlanTest, BucketBoundsAreGuardAtomsWithTheDispatchersProvenance) {
  CudaGraphPlan plan = PlanCudaGraphs(env, {"batch", "seq"}, "seq", true, false, 2, {});
  ASSERT_TRUE(plan.enabled);
  std::vector<GuardAtom> atoms = plan.BucketGuards(Bucket{65, 128});
  ASSERT_EQ(atoms.size(), 2u);
  EXPECT_EQ(atoms[0].provenance.pass, "dispatcher");
  EXPECT_EQ(atoms[0].provenance.reason, "CUDA graph bucket 65..128 of seq");
  EXPECT_EQ(atoms[0].predicate.ToString() + "; " + atoms[1].predicate.ToString(), "seq >= 65; seq <= 128");
  absl::StatusOr<GuardProgram> guards = CompileBucketGuards(plan, Bucket{65, 128});
  ASSERT_TRUE(guards.ok()) << guards.status();
  const int64_t inside[] = {3, 100}, below[] = {3, 64}, above[] = {3, 129};
  EXPECT_TRUE(guards->Evaluate(inside).pass);
  EXPECT_FALSE(guards->Evaluate(below).pass);
  EXPECT_FALSE(guards->Evaluate(above).pass);
}

TEST(CudaGraphMentionsTest, FindsTheSymbolAnywhereInAnExpression) {
  SymExpr seq = SymExpr::Symbol("seq"), batch = SymExpr::Symbol("batch");
  EXPECT_TRUE(Mentions(batch * seq, "seq"));
  EXPECT_TRUE(Mentions(FloorDiv(seq + 1, 2), "seq"));
  EXPECT_FALSE(Mentions(batch * 768, "seq"));
}

}  // namespace
}  // namespace shapeshift::runtime
