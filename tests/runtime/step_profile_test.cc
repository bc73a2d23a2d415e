// The step profile (runtime/step_profile.h, `run --profile`): rows add the
// steps of one label, slowest first; a profiled request times each of its
// steps exactly once, under the engine that ran it (which depends on the
// request's rows), within the request's own time; and a session stops
// profiling when asked.
#include "runtime/step_profile.h"

#include <omp.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "codegen/cpu/onednn_matmul.h"
#include "codegen/cpu/skinny_matmul.h"
#include "examples/models/bert.h"
#include "gtest/gtest.h"
#include "runtime/session.h"
#include "runtime/tuning/gemm_tuning.h"
#include "tests/runtime/e2e_util.h"

namespace shapeshift::runtime {
namespace {

namespace cpu = codegen::cpu;

TEST(StepProfileTest, AddsTheStepsOfOneLabelIntoOneRowSlowestFirst) {
  StepProfile profile;
  profile.Add("kernel", "layer_norm", 10);
  profile.Add("matmul", "matmul[m=?, k=8, n=8] on onednn", 50);
  profile.Add("kernel", "layer_norm", 15);
  profile.Add("matmul", "layer_norm", 5);  // another kind: another row
  profile.AddRequest(100);
  const std::vector<StepProfileRow> rows = profile.Rows();
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].label, "matmul[m=?, k=8, n=8] on onednn");
  EXPECT_EQ(rows[0].calls, 1);
  EXPECT_EQ(rows[1].kind, "kernel");
  EXPECT_EQ(rows[1].label, "layer_norm");
  EXPECT_EQ(rows[1].calls, 2);
  EXPECT_EQ(rows[1].ns, 25);
  EXPECT_EQ(rows[2].kind, "matmul");
  EXPECT_EQ(profile.requests(), 1);
  EXPECT_EQ(profile.request_ns(), 100);
  profile.Reset();
  EXPECT_TRUE(profile.Rows().empty());
  EXPECT_EQ(profile.requests(), 0);
}

struct KindCalls {
  int64_t kernel = 0, matmul = 0, attention = 0, skinny = 0, other = 0;
  int64_t ns = 0;
};

KindCalls Count(const StepProfile& profile) {
  KindCalls c;
  for (const StepProfileRow& row : profile.Rows()) {
    c.ns += row.ns;
    if (row.kind == "kernel") {
      c.kernel += row.calls;
    } else if (row.kind == "matmul") {
      c.matmul += row.calls;
      if (absl::StrContains(row.label, " on skinny-")) c.skinny += row.calls;
    } else if (row.kind == "attention") {
      c.attention += row.calls;
    } else {
      c.other += row.calls;
    }
  }
  return c;
}

TEST(StepProfileTest, EveryStepOfAProfiledRequestIsTimedOnceUnderTheEngineThatRanIt) {
  const std::optional<cpu::SkinnyMatmul::Isa> isa = cpu::SkinnyMatmul::HostIsa();
  if (!isa) GTEST_SKIP() << "this CPU has no skinny GEMM core (neither AVX-512F nor AVX2+FMA)";
  const examples::BertConfig config = testing::SmallBertConfig();
  // Every constant-weight GEMM on the skinny GEMM for 1..8 rows, on oneDNN
  // above: which engine a request's GEMMs ran on is in their rows' labels.
  absl::StatusOr<ImportedModel> model = examples::BuildBert(config);
  ASSERT_TRUE(model.ok()) << model.status();
  absl::StatusOr<GemmSurvey> survey = Program::SurveyShortRequestGemms(*model->graph, *model->env, CompileOptions{});
  ASSERT_TRUE(survey.ok()) << survey.status();
  auto tuning = std::make_shared<GemmTuning>();
  tuning->machine = HostMachineKey(*isa, omp_get_max_threads());
  for (const ShortRequestGemm& g : survey->gemms) {
    GemmChoice choice{cpu::DescribeConfig(g.config), 1, 8, 16, {}};
    tuning->Choices(LongRows::kPlain).emplace(choice.config, choice);
  }
  CompileOptions options;
  options.tuning = tuning;
  std::unique_ptr<Session> session = testing::BuiltSession(examples::BuildBert, config, options);
  ASSERT_NE(session, nullptr);
  const ProgramStats stats = session->stats().program;
  ASSERT_GT(stats.attention_calls, 0);
  const int64_t constant_gemms = static_cast<int64_t>(config.layers) * 6;  // q, k, v, o, up, down

  for (const int64_t seq : {4, 40}) {
    SCOPED_TRACE(::testing::Message() << "seq " << seq);
    auto profile = std::make_shared<StepProfile>();
    session->ProfileSteps(profile);
    const std::vector<Tensor> inputs = examples::MakeBertInputs(config, 1, seq, 3);
    ASSERT_TRUE(session->Run(inputs).ok());
    session->ProfileSteps(nullptr);
    ASSERT_TRUE(session->Run(inputs).ok());  // not profiled

    EXPECT_EQ(profile->requests(), 1);
    const KindCalls calls = Count(*profile);
    EXPECT_EQ(calls.kernel, stats.kernel_calls);
    EXPECT_EQ(calls.matmul, stats.gemm_calls);
    EXPECT_EQ(calls.attention, stats.attention_calls);
    EXPECT_GT(calls.other, 0);  // the embeddings' gathers
    EXPECT_EQ(calls.skinny, seq <= 8 ? constant_gemms : 0);
    EXPECT_GT(calls.ns, 0);
    EXPECT_LE(calls.ns, profile->request_ns());
    bool has_layer_norm = false;
    for (const StepProfileRow& row : profile->Rows()) has_layer_norm |= row.label == "layer_norm";
    EXPECT_TRUE(has_layer_norm);
  }
}

// Concurrent requests share one profile, and the profile may be switched
// off while requests run (each context holds it until its request ends):
// every request that counted added all of its steps.
TEST(StepProfileTest, ConcurrentRequestsShareOneProfile) {
  const examples::BertConfig config = testing::SmallBertConfig();
  std::unique_ptr<Session> session = testing::BuiltSession(examples::BuildBert, config, CompileOptions{});
  ASSERT_NE(session, nullptr);
  const ProgramStats stats = session->stats().program;
  auto profile = std::make_shared<StepProfile>();
  session->ProfileSteps(profile);
  const std::vector<Tensor> inputs = examples::MakeBertInputs(config, 1, 6, 5);
  constexpr int kThreads = 3, kRequests = 8;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRequests; ++r) {
        if (!session->Run(inputs).ok()) ++failures;
        if (t == 0 && r == kRequests / 2) session->ProfileSteps(nullptr);  // off, under the others' requests
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  const int64_t requests = profile->requests();
  EXPECT_GE(requests, kRequests / 2 + 1);
  EXPECT_LE(requests, kThreads * kRequests);
  const KindCalls calls = Count(*profile);
  EXPECT_EQ(calls.kernel, requests * stats.kernel_calls);
  EXPECT_EQ(calls.matmul, requests * stats.gemm_calls);
  EXPECT_EQ(calls.attention, requests * stats.attention_calls);
}

}  // namespace
}  // namespace shapeshift::runtime
