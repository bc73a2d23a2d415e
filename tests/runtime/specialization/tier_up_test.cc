// TierUpModel: the cost model decides deterministically from the numbers it
// is fed — traffic × latency × speed-up against the compile estimate, at
// most one tier-up per region, static only for a dominant shape, and a
// tier-up that measures no gain is reverted and never retried.
#include "runtime/specialization/tier_up.h"

#include "gtest/gtest.h"

namespace shapeshift::runtime {
namespace {

const std::vector<int64_t> kRegion = {65, 128};  // seq bucket 65..128

TierUpOptions Options() {
  TierUpOptions o;
  o.bucketed_speedup_prior = 0.1;
  o.static_speedup_prior = 0.2;
  o.min_requests = 4;
  o.probation_requests = 2;
  o.latency_ewma_weight = 0.5;
  return o;
}

TEST(TierUpModelTest, FiresWhenTrafficTimesGainExceedsTheCompileEstimate) {
  TierUpModel model(Options());
  model.ObserveCompile(10.0);  // 10 ms compile; each request saves 0.1 × 10 ms = 1 ms
  std::optional<TierUpJob> job;
  int64_t n = 0;
  while (!job && n < 100) {
    const int64_t seq = 65 + n % 50;  // no dominant shape
    job = model.Record(kRegion, std::vector<int64_t>{seq}, /*entry_id=*/1, /*latency_ms=*/10.0).compile;
    ++n;
  }
  ASSERT_TRUE(job.has_value());
  EXPECT_EQ(n, 11) << "11 requests × 1 ms > 10 ms; 10 × 1 ms is not";
  EXPECT_EQ(job->tier, Tier::kBucketed);
  EXPECT_EQ(job->region, kRegion);
  EXPECT_EQ(job->cost.requests, 11);
  EXPECT_DOUBLE_EQ(job->cost.latency_ms, 10.0);
  EXPECT_DOUBLE_EQ(job->cost.speedup, 0.1);
  EXPECT_DOUBLE_EQ(job->cost.gain_ms, 11.0);
  EXPECT_DOUBLE_EQ(job->cost.compile_ms, 10.0);
  // Never twice for one region.
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(model.Record(kRegion, std::vector<int64_t>{70}, 1, 10.0).compile);
  EXPECT_EQ(model.tier_ups(), 1);
}

TEST(TierUpModelTest, NeverBeforeMinRequests) {
  TierUpOptions o = Options();
  o.min_requests = 50;
  TierUpModel model(o);  // compile estimate 0: any gain pays
  for (int i = 1; i < 50; ++i) ASSERT_FALSE(model.Record(kRegion, std::vector<int64_t>{70 + i % 9}, 1, 1.0).compile);
  EXPECT_TRUE(model.Record(kRegion, std::vector<int64_t>{70}, 1, 1.0).compile.has_value());
}

TEST(TierUpModelTest, ADominantShapeGetsAStaticTierUp) {
  TierUpModel model(Options());
  std::optional<TierUpJob> job;
  for (int i = 0; i < 10 && !job; ++i) job = model.Record(kRegion, std::vector<int64_t>{100}, 1, 1.0).compile;
  ASSERT_TRUE(job.has_value());
  EXPECT_EQ(job->tier, Tier::kStatic);
  EXPECT_EQ(job->trigger, (std::vector<int64_t>{100}));
  EXPECT_DOUBLE_EQ(job->cost.speedup, 0.2);
}

TEST(TierUpModelTest, ATierUpWithNoMeasuredGainIsRevertedAndNotRetried) {
  TierUpModel model(Options());
  std::optional<TierUpJob> job;
  for (int i = 0; i < 10 && !job; ++i) job = model.Record(kRegion, std::vector<int64_t>{65 + i}, 1, 5.0).compile;
  ASSERT_TRUE(job.has_value());
  model.TierUpReady(kRegion, /*entry_id=*/7);
  EXPECT_EQ(model.Record(kRegion, std::vector<int64_t>{80}, 7, 5.0).remove_entry, 0);  // probation 1 of 2
  EXPECT_EQ(model.Record(kRegion, std::vector<int64_t>{81}, 7, 5.0).remove_entry, 7);  // same latency: no gain
  EXPECT_EQ(model.reverted(), 1);
  EXPECT_DOUBLE_EQ(model.ExpectedSpeedup(Tier::kBucketed), 0.05) << "prior 0.1 halfway to the measured 0";
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(model.Record(kRegion, std::vector<int64_t>{66}, 1, 5.0).compile);
}

TEST(TierUpModelTest, ATierUpThatIsFasterIsKeptAndTeachesThePrior) {
  TierUpModel model(Options());
  std::optional<TierUpJob> job;
  for (int i = 0; i < 10 && !job; ++i) job = model.Record(kRegion, std::vector<int64_t>{65 + i}, 1, 5.0).compile;
  ASSERT_TRUE(job.has_value());
  model.TierUpReady(kRegion, 7);
  EXPECT_EQ(model.Record(kRegion, std::vector<int64_t>{80}, 7, 2.5).remove_entry, 0);
  EXPECT_EQ(model.Record(kRegion, std::vector<int64_t>{81}, 7, 2.5).remove_entry, 0);
  EXPECT_EQ(model.reverted(), 0);
  EXPECT_DOUBLE_EQ(model.ExpectedSpeedup(Tier::kBucketed), 0.3) << "prior 0.1 halfway to the measured 0.5";
}

TEST(TierUpModelTest, CompileEstimateIsAnEwmaOfObservedCompiles) {
  TierUpModel model(Options());
  EXPECT_DOUBLE_EQ(model.EstimatedCompileMs(), 0);
  model.ObserveCompile(100);
  EXPECT_DOUBLE_EQ(model.EstimatedCompileMs(), 100);
  model.ObserveCompile(50);
  EXPECT_DOUBLE_EQ(model.EstimatedCompileMs(), 75);
}

TEST(TierUpModelTest, AFailedTierUpIsNotRetried) {
  TierUpModel model(Options());
  std::optional<TierUpJob> job;
  for (int i = 0; i < 10 && !job; ++i) job = model.Record(kRegion, std::vector<int64_t>{65 + i}, 1, 5.0).compile;
  ASSERT_TRUE(job.has_value());
  model.TierUpFailed(kRegion);
  for (int i = 0; i < 50; ++i) EXPECT_FALSE(model.Record(kRegion, std::vector<int64_t>{66}, 1, 5.0).compile);
}

}  // namespace
}  // namespace shapeshift::runtime
