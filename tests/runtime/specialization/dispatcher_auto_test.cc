// Dispatcher under the auto policy: exactly one compile before the first
// result, tier-ups compiled on the background thread when the cost model
// says so (deterministic: a fake clock feeds the latencies), at most one
// per bucket that saw traffic, and a tier-up that measures no gain removed.
#include <atomic>
#include <memory>
#include <set>

#include "gtest/gtest.h"
#include "runtime/specialization/dispatcher.h"
#include "tests/runtime/runtime_test_util.h"

namespace shapeshift::runtime {
namespace {

using testing::RandomF32;

constexpr int64_t kMs = 1000000;

// Every reading advances by `step` ns: a request (two readings) takes one
// step, whatever the machine is doing.
struct FakeClock {
  std::atomic<int64_t> now{0};
  std::atomic<int64_t> step{kMs};
};

std::unique_ptr<Dispatcher> MakeAuto(std::shared_ptr<FakeClock> clock, TierUpOptions tier_up) {
  testing::BuiltModel model = testing::AddRelu();  // batch 1..8, seq 1..64
  DispatcherOptions options;
  options.policy = SpecializationPolicy::kAuto;
  options.tier_up = tier_up;
  options.clock_ns = [clock] { return clock->now.fetch_add(clock->step) + clock->step; };
  absl::StatusOr<std::unique_ptr<Dispatcher>> d =
      Dispatcher::Create(std::move(model.graph), std::move(model.env), options);
  EXPECT_TRUE(d.ok()) << d.status();
  return d.ok() ? *std::move(d) : nullptr;
}

// Tier up after `n` requests of a region: every request saves its whole
// latency (1 ms), and the compile estimate is one clock step (1 ms).
TierUpOptions AfterRequests(int64_t n) {
  TierUpOptions o;
  o.min_requests = n;
  o.bucketed_speedup_prior = 1.0;
  o.static_speedup_prior = 1.0;
  o.probation_requests = 4;
  return o;
}

Tier RunOne(Dispatcher& d, int64_t batch, int64_t seq) {
  std::vector<Tensor> in = {RandomF32({batch, seq, 8}, 1), RandomF32({batch, seq, 8}, 2)};
  std::vector<TensorView> views = {TensorView::Of(in[0]), TensorView::Of(in[1])};
  ExecutionContext ctx;
  absl::StatusOr<std::vector<Tensor>> out = d.Run(views, ctx);
  EXPECT_TRUE(out.ok()) << out.status();
  absl::StatusOr<std::shared_ptr<const CacheEntry>> entry = d.Acquire(views);
  EXPECT_TRUE(entry.ok()) << entry.status();
  return entry.ok() ? (*entry)->tier : Tier::kPolymorphic;
}

TEST(DispatcherAutoTest, OneCompileBeforeTheFirstResultThenATierUpAfterNRequests) {
  auto clock = std::make_shared<FakeClock>();
  std::unique_ptr<Dispatcher> d = MakeAuto(clock, AfterRequests(5));
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->stats().compiles, 1) << "the polymorphic compile happens in Create";
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(RunOne(*d, 1, 33 + i), Tier::kPolymorphic);
  d->WaitForTierUps();
  EXPECT_EQ(d->stats().compiles, 1) << "4 requests do not repay a compile";
  EXPECT_EQ(RunOne(*d, 1, 40), Tier::kPolymorphic);  // the 5th queues the tier-up
  d->WaitForTierUps();
  DispatcherStats s = d->stats();
  EXPECT_EQ(s.compiles, 2);
  EXPECT_EQ(s.misses, 0);
  EXPECT_EQ(s.tier_ups, 1);
  std::vector<RecompileEvent> events = d->events();
  ASSERT_EQ(events.size(), 2u);
  const RecompileEvent& e = events[1];
  EXPECT_EQ(e.trigger, RecompileTrigger::kTierUp);
  EXPECT_EQ(e.new_tier, Tier::kBucketed);
  ASSERT_TRUE(e.cost.has_value());
  EXPECT_EQ(e.cost->requests, 5);
  EXPECT_DOUBLE_EQ(e.cost->latency_ms, 1.0);
  EXPECT_DOUBLE_EQ(e.cost->gain_ms, 5.0);
  EXPECT_DOUBLE_EQ(e.cost->compile_ms, 1.0);
  std::vector<std::string> atoms;
  for (const AtomRecord& a : e.new_guards) atoms.push_back(a.atom);
  EXPECT_EQ(atoms, (std::vector<std::string>{"batch <= 1", "seq >= 33"}));
  // The bucket's requests now run on the tier-up; faster, so it is kept.
  clock->step = kMs / 2;
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(RunOne(*d, 1, 50 + i), Tier::kBucketed);
  EXPECT_EQ(d->stats().tier_ups_reverted, 0);
  EXPECT_EQ(RunOne(*d, 1, 10), Tier::kPolymorphic) << "other buckets stay polymorphic";
  SpecializationMetrics m = d->Metrics();
  EXPECT_EQ(m.compiles_initial, 1);
  EXPECT_EQ(m.compiles_tier_up, 1);
  EXPECT_EQ(m.compiles_bucketed, 1);
  EXPECT_EQ(m.misses, 0);
  EXPECT_EQ(m.tier_ups, 1);
}

TEST(DispatcherAutoTest, ATierUpThatMeasuresNoGainIsRemovedAndNotRetried) {
  auto clock = std::make_shared<FakeClock>();
  std::unique_ptr<Dispatcher> d = MakeAuto(clock, AfterRequests(5));
  ASSERT_NE(d, nullptr);
  for (int64_t i = 0; i < 5; ++i) RunOne(*d, 1, 33 + i);
  d->WaitForTierUps();
  ASSERT_EQ(d->cache().size(), 2u);
  // Same latency on the tier-up: after its probation (4 requests) it goes.
  for (int64_t i = 0; i < 3; ++i) EXPECT_EQ(RunOne(*d, 1, 40 + i), Tier::kBucketed);
  EXPECT_EQ(d->stats().tier_ups_reverted, 0);
  EXPECT_EQ(RunOne(*d, 1, 43), Tier::kPolymorphic) << "the 4th request's verdict removed the tier-up";
  EXPECT_EQ(d->stats().tier_ups_reverted, 1);
  EXPECT_EQ(d->cache().size(), 1u);
  for (int64_t i = 0; i < 20; ++i) EXPECT_EQ(RunOne(*d, 1, 33 + i % 30), Tier::kPolymorphic);
  d->WaitForTierUps();
  EXPECT_EQ(d->stats().tier_ups, 1) << "the region is not retried";
  EXPECT_EQ(d->Metrics().tier_ups_reverted, 1);
}

TEST(DispatcherAutoTest, TierUpsNeverExceedTheBucketsThatSawTraffic) {
  auto clock = std::make_shared<FakeClock>();
  std::unique_ptr<Dispatcher> d = MakeAuto(clock, AfterRequests(3));
  ASSERT_NE(d, nullptr);
  std::set<std::pair<int64_t, int64_t>> buckets;
  for (int round = 0; round < 6; ++round) {
    for (int64_t seq = 1; seq <= 64; seq += 3) {
      const int64_t batch = 1 + (seq + round) % 8;
      RunOne(*d, batch, seq);
      buckets.insert({PowerOfTwoBucket(batch, 1, 8).hi, PowerOfTwoBucket(seq, 1, 64).hi});
    }
    d->WaitForTierUps();
  }
  DispatcherStats s = d->stats();
  EXPECT_GT(s.tier_ups, 0);
  EXPECT_LE(s.tier_ups + s.tier_up_errors, static_cast<int64_t>(buckets.size()));
  EXPECT_EQ(s.misses, 0);
  EXPECT_EQ(s.compiles, 1 + s.tier_ups);
}

}  // namespace
}  // namespace shapeshift::runtime
