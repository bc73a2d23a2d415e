// Metrics: counted by the dispatcher (requests, hits, compiles by tier and
// trigger) and rendered as text and in the Prometheus exposition format.
#include "runtime/specialization/metrics.h"

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "runtime/session.h"
#include "tests/runtime/runtime_test_util.h"

namespace shapeshift::runtime {
namespace {

SpecializationMetrics Sample() {
  SpecializationMetrics m;
  m.requests = 10;
  m.hits = 8;
  m.hit_rate = 0.8;
  m.misses = 1;
  m.compiles = 2;
  m.compiles_bucketed = 2;
  m.compiles_initial = 1;
  m.compiles_miss = 1;
  m.compile_ms_total = 250;
  m.first_request_ms = 125;
  return m;
}

TEST(MetricsTest, TextHasOneLinePerField) {
  const std::string text = FormatMetricsText(Sample());
  EXPECT_NE(text.find("requests 10\n"), std::string::npos) << text;
  EXPECT_NE(text.find("hit_rate 0.8000\n"), std::string::npos) << text;
  EXPECT_NE(text.find("compiles_bucketed 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("compile_ms_total 250.000\n"), std::string::npos) << text;
  EXPECT_NE(text.find("cache_loads 0\n"), std::string::npos) << text;
}

TEST(MetricsTest, PrometheusFamiliesHaveHelpTypeAndSamples) {
  const std::string text = FormatMetricsPrometheus(Sample());
  EXPECT_NE(text.find("# HELP shapeshift_requests_total "), std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE shapeshift_requests_total counter\nshapeshift_requests_total 10\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("shapeshift_compiles_total{tier=\"bucketed\"} 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("shapeshift_compiles_total{tier=\"static\"} 0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("shapeshift_compiles_by_trigger_total{trigger=\"miss\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("shapeshift_compile_seconds_total 0.25\n"), std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE shapeshift_cache_hit_ratio gauge\nshapeshift_cache_hit_ratio 0.8\n"),
            std::string::npos)
      << text;
  // Every sample line belongs to a family declared just before it.
  std::string family;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    if (absl::StartsWith(line, "# TYPE ")) {
      std::vector<std::string> parts = absl::StrSplit(line, ' ');
      family = parts[2];
    } else if (!absl::StartsWith(line, "# HELP ")) {
      EXPECT_TRUE(absl::StartsWith(line, family + " ") || absl::StartsWith(line, family + "{")) << line;
    }
  }
}

TEST(MetricsTest, SessionCountsHitsMissesAndCompilesByTier) {
  testing::BuiltModel model = testing::AddRelu();
  SessionOptions options;
  options.policy = SpecializationPolicy::kStatic;
  absl::StatusOr<std::unique_ptr<Session>> s =
      Session::Create(ModelSource::Built(std::move(model.graph), std::move(model.env)), options);
  ASSERT_TRUE(s.ok()) << s.status();
  for (int64_t seq : {4, 5, 4, 4, 5, 6}) {
    std::vector<Tensor> in = {testing::RandomF32({1, seq, 8}, 1), testing::RandomF32({1, seq, 8}, 2)};
    ASSERT_TRUE((*s)->Run(in).ok());
  }
  SpecializationMetrics m = (*s)->Metrics();
  EXPECT_EQ(m.requests, 6);
  EXPECT_EQ(m.hits, 3);
  EXPECT_DOUBLE_EQ(m.hit_rate, 0.5);
  EXPECT_EQ(m.compiles, 3);
  EXPECT_EQ(m.compiles_static, 3);
  EXPECT_EQ(m.compiles_initial, 1);
  EXPECT_EQ(m.compiles_miss, 2);
  EXPECT_EQ(m.misses, 2);
  EXPECT_EQ(m.entries, 3);
  EXPECT_GT(m.compile_ms_total, 0);
  EXPECT_GT(m.first_request_ms, 0);
  EXPECT_GE(m.guard_eval_ms_total, 0);
}

}  // namespace
}  // namespace shapeshift::runtime
