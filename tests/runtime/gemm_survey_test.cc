// Program::SurveyShortRequestGemms: the GEMM classes `shapeshift tune` and a
// model's first run measure, found without a compile. It must list exactly
// what Compile's short_request_gemms() lists, with the same engines, under
// every option that changes them (a tuning, the panels, no packing), while
// compiling no kernel, warming no primitive and packing no weight: a survey
// that packed would hold a second copy of every weight, as the compile it
// replaced did (8.2 GB peak for a 4.4 GB Llama, bench/RESULTS.md).
#include <omp.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "codegen/cpu/skinny_matmul.h"
#include "examples/models/bert.h"
#include "examples/models/gpt2.h"
#include "gtest/gtest.h"
#include "runtime/program.h"
#include "runtime/tuning/gemm_tuning.h"
#include "tests/runtime/e2e_util.h"

namespace shapeshift::runtime {
namespace {

namespace cpu = codegen::cpu;

absl::StatusOr<ImportedModel> SmallBert() { return examples::BuildBert(testing::SmallBertConfig()); }

absl::StatusOr<ImportedModel> SmallGpt2WithCache() {
  examples::Gpt2Config config;
  config.layers = 2;
  config.hidden = 128;
  config.heads = 2;
  config.vocab = 2048;
  config.kv_cache = true;
  return examples::BuildGpt2(config);
}

using ModelFn = absl::StatusOr<ImportedModel> (*)();

std::string Describe(const ShortRequestGemm& g) {
  return cpu::DescribeConfig(g.config) + " engine=" + g.engine + " rows=" + std::to_string(g.min_rows) + ".." +
         std::to_string(g.max_rows) + " prefetch=" + std::to_string(g.prefetch_rows) + " long=" + g.long_engine +
         " tuned=" + std::to_string(g.tuned) + " steps=" + std::to_string(g.steps);
}

// Compiles one copy of the model and surveys another with `options`; the
// two lists must be equal entry by entry, and the survey must have done none
// of a compile's work.
void ExpectSurveyMatchesCompile(ModelFn build, const CompileOptions& options) {
  absl::StatusOr<ImportedModel> compiled_model = build();
  absl::StatusOr<ImportedModel> surveyed_model = build();
  ASSERT_TRUE(compiled_model.ok()) << compiled_model.status();
  ASSERT_TRUE(surveyed_model.ok()) << surveyed_model.status();
  absl::StatusOr<std::unique_ptr<Program>> program =
      Program::Compile(*compiled_model->graph, *compiled_model->env, options);
  ASSERT_TRUE(program.ok()) << program.status();
  absl::StatusOr<GemmSurvey> survey =
      Program::SurveyShortRequestGemms(*surveyed_model->graph, *surveyed_model->env, options);
  ASSERT_TRUE(survey.ok()) << survey.status();

  // Without packing there is no short-request path, so nothing to list.
  const std::vector<ShortRequestGemm>& want = (*program)->short_request_gemms();
  ASSERT_EQ(want.empty(), !options.pack_small_row_gemms);
  ASSERT_EQ(survey->gemms.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(Describe(survey->gemms[i]), Describe(want[i])) << "class " << i;

  EXPECT_EQ(survey->stats.kernels, 0);
  EXPECT_EQ(survey->stats.gemms_warmed, 0);
  EXPECT_EQ(survey->stats.packed_weight_bytes, 0);
  EXPECT_EQ(survey->stats.released_weight_bytes, 0);
  EXPECT_EQ(survey->stats.gemm_calls, 0);
  EXPECT_GT((*program)->stats().kernels, 0);
  const bool packs = std::any_of(want.begin(), want.end(), [](const ShortRequestGemm& g) { return g.engine != "onednn"; });
  EXPECT_EQ((*program)->stats().packed_weight_bytes > 0, packs);
}

// A tuning for this machine that gives every class of `build`'s model the
// skinny GEMM for 1..`max_rows` rows (0: oneDNN at every row count).
std::shared_ptr<const GemmTuning> TuningFor(ModelFn build, int64_t max_rows, LongRows long_rows) {
  absl::StatusOr<ImportedModel> model = build();
  EXPECT_TRUE(model.ok()) << model.status();
  absl::StatusOr<GemmSurvey> survey = Program::SurveyShortRequestGemms(*model->graph, *model->env, CompileOptions{});
  EXPECT_TRUE(survey.ok()) << survey.status();
  auto tuning = std::make_shared<GemmTuning>();
  tuning->machine = HostMachineKey(*cpu::SkinnyMatmul::HostIsa(), omp_get_max_threads());
  for (const ShortRequestGemm& g : survey->gemms) {
    GemmChoice choice{cpu::DescribeConfig(g.config), 1, max_rows, 24, {}};
    tuning->Choices(long_rows).emplace(choice.config, choice);
  }
  return tuning;
}

TEST(GemmSurveyTest, ListsWhatACompileListsAndPacksNothing) {
  for (ModelFn build : {&SmallBert, &SmallGpt2WithCache}) {
    SCOPED_TRACE(build == &SmallBert ? "bert" : "gpt2 with cache");
    ExpectSurveyMatchesCompile(build, CompileOptions{});
    CompileOptions no_packing;
    no_packing.pack_small_row_gemms = false;
    ExpectSurveyMatchesCompile(build, no_packing);
  }
}

TEST(GemmSurveyTest, FollowsATuningAndThePanels) {
  if (!cpu::SkinnyMatmul::HostIsa()) {
    GTEST_SKIP() << "this CPU has neither AVX2 nor AVX-512: no skinny GEMM for a tuning to choose";
  }
  for (ModelFn build : {&SmallBert, &SmallGpt2WithCache}) {
    SCOPED_TRACE(build == &SmallBert ? "bert" : "gpt2 with cache");
    CompileOptions tuned;
    tuned.tuning = TuningFor(build, 48, LongRows::kPlain);
    ExpectSurveyMatchesCompile(build, tuned);
    CompileOptions never_skinny;
    never_skinny.tuning = TuningFor(build, 0, LongRows::kPlain);
    ExpectSurveyMatchesCompile(build, never_skinny);
    CompileOptions panels;
    panels.long_rows_on_panels = true;
    panels.tuning = TuningFor(build, 16, LongRowsFor(true, *cpu::SkinnyMatmul::HostIsa()));
    ExpectSurveyMatchesCompile(build, panels);
  }
}

TEST(GemmSurveyTest, ACudaProgramIsRefused) {
  absl::StatusOr<ImportedModel> model = SmallBert();
  ASSERT_TRUE(model.ok()) << model.status();
  CompileOptions options;
  options.device = Device::kCuda;
  absl::StatusOr<GemmSurvey> survey = Program::SurveyShortRequestGemms(*model->graph, *model->env, options);
  ASSERT_FALSE(survey.ok());
  EXPECT_EQ(survey.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(survey.status().message().find("CPU"), std::string::npos) << survey.status();
}

}  // namespace
}  // namespace shapeshift::runtime
