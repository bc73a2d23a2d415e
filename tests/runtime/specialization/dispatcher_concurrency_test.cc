// 8 threads send requests of varying shapes to one Dispatcher under each
// policy: every result is right, compiles stay within what the policy
// allows, events are numbered in order. Meant to run clean under
// ThreadSanitizer (-DSHAPESHIFT_SANITIZE=thread), tier-ups included.
#include <set>
#include <thread>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "runtime/specialization/dispatcher.h"
#include "tests/runtime/runtime_test_util.h"

namespace shapeshift::runtime {
namespace {

constexpr int kThreads = 8;
constexpr int kRequestsPerThread = 24;

// Shape of request `i` of thread `t`: a few shapes shared by all threads,
// the rest spread over batch 1..2, seq 1..12 (25 shapes in all).
std::pair<int64_t, int64_t> ShapeOf(int t, int i) {
  if (i % 3 == 0) return {1, 16};
  return {1 + (t + i) % 2, 1 + (t * 7 + i * 5) % 12};
}

// relu(x + y), computed directly.
absl::Status Check(const std::vector<Tensor>& in, const std::vector<Tensor>& out) {
  const int64_t n = in[0].num_elements();
  if (out.size() != 1 || out[0].shape() != in[0].shape()) return absl::InternalError("wrong output shape");
  for (int64_t k = 0; k < n; ++k) {
    const float want = std::max(0.0f, in[0].data<float>()[k] + in[1].data<float>()[k]);
    if (out[0].data<float>()[k] != want) return absl::InternalError(absl::StrCat("wrong value at ", k));
  }
  return absl::OkStatus();
}

class DispatcherConcurrencyTest : public ::testing::TestWithParam<SpecializationPolicy> {};

TEST_P(DispatcherConcurrencyTest, EightThreadsWithVaryingShapesGetRightResults) {
  testing::BuiltModel model = testing::AddRelu();
  DispatcherOptions options;
  options.policy = GetParam();
  options.recompile_limit = 1000;  // the static policy compiles every distinct shape
  options.tier_up.min_requests = 4;  // tier-ups while requests run
  options.tier_up.bucketed_speedup_prior = 1.0;
  options.tier_up.static_speedup_prior = 1.0;
  options.tier_up.probation_requests = 2;
  absl::StatusOr<std::unique_ptr<Dispatcher>> created =
      Dispatcher::Create(std::move(model.graph), std::move(model.env), options);
  ASSERT_TRUE(created.ok()) << created.status();
  Dispatcher& d = **created;
  std::vector<absl::Status> results(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      ExecutionContext ctx;
      for (int i = 0; i < kRequestsPerThread; ++i) {
        auto [batch, seq] = ShapeOf(t, i);
        std::vector<Tensor> in = {testing::RandomF32({batch, seq, 8}, t * 100 + i),
                                  testing::RandomF32({batch, seq, 8}, t * 100 + i + 1)};
        std::vector<TensorView> views = {TensorView::Of(in[0]), TensorView::Of(in[1])};
        absl::StatusOr<std::vector<Tensor>> out = d.Run(views, ctx);
        absl::Status s = out.ok() ? Check(in, *out) : out.status();
        if (!s.ok()) {
          results[t] = absl::Status(s.code(), absl::StrCat("batch=", batch, " seq=", seq, ": ", s.message()));
          return;
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  d.WaitForTierUps();
  for (const absl::Status& s : results) EXPECT_TRUE(s.ok()) << s;

  std::set<std::pair<int64_t, int64_t>> shapes;
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kRequestsPerThread; ++i) shapes.insert(ShapeOf(t, i));
  }
  const DispatcherStats s = d.stats();
  switch (GetParam()) {
    case SpecializationPolicy::kPolymorphic:
      EXPECT_EQ(s.compiles, 1);
      break;
    case SpecializationPolicy::kStatic:
      EXPECT_EQ(s.compiles, static_cast<int64_t>(shapes.size())) << "one compile per distinct shape";
      break;
    case SpecializationPolicy::kBucketed:
      EXPECT_LE(s.compiles, static_cast<int64_t>(shapes.size()));
      break;
    case SpecializationPolicy::kAuto:
      EXPECT_EQ(s.misses, 0);
      EXPECT_EQ(s.compiles, 1 + s.tier_ups);
      break;
  }
  const SpecializationMetrics m = d.Metrics();
  EXPECT_EQ(m.requests, kThreads * kRequestsPerThread);
  std::vector<RecompileEvent> events = d.events();
  EXPECT_EQ(static_cast<int64_t>(events.size()), s.compiles);
  for (size_t i = 0; i < events.size(); ++i) EXPECT_EQ(events[i].sequence, static_cast<int64_t>(i) + 1);
}

INSTANTIATE_TEST_SUITE_P(Policies, DispatcherConcurrencyTest,
                         ::testing::Values(SpecializationPolicy::kPolymorphic, SpecializationPolicy::kBucketed,
                                           SpecializationPolicy::kStatic, SpecializationPolicy::kAuto),
                         [](const auto& info) { return std::string(SpecializationPolicyName(info.param)); });

}  // namespace
}  // namespace shapeshift::runtime
