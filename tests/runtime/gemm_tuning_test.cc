// The GEMM tuning file (runtime/tuning/gemm_tuning.h) and the tuner
// (gemm_tuner.h): a Program compiled with a pinned tuning makes exactly the
// file's choices (which engine a row count takes, seen through
// ExecutionContext::skinny_gemm_calls) and still agrees with the
// interpreter; a file for another machine is refused naming the field; and
// hostile files are errors naming the file and the entry, never a crash, a
// hang on a FIFO or a 16 MiB+ read.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "codegen/cpu/onednn_matmul.h"
#include "codegen/cpu/skinny_matmul.h"
#include "absl/strings/str_cat.h"
#include "examples/models/bert.h"
#include "graph/interpreter.h"
#include "gtest/gtest.h"
#include "runtime/execution_context.h"
#include "runtime/session.h"
#include "runtime/tensor_view.h"
#include "codegen/cpu/panel_rows_matmul.h"
#include "runtime/tuning/gemm_tuner.h"
#include "runtime/tuning/gemm_tuning.h"
#include "tests/runtime/e2e_util.h"

namespace shapeshift::runtime {
namespace {

namespace cpu = codegen::cpu;
using examples::BertConfig;

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/gemm_tuning_test_" + std::to_string(getpid()) + "_" + name;
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

std::optional<cpu::SkinnyMatmul::Isa> HostIsa() { return cpu::SkinnyMatmul::HostIsa(); }

BertConfig SmallBert() { return shapeshift::testing::SmallBertConfig(); }

// Every constant-weight GEMM class of `config`'s BERT, as its Program has them.
std::vector<cpu::MatmulConfig> BertGemms(const BertConfig& config) {
  absl::StatusOr<ImportedModel> model = examples::BuildBert(config);
  EXPECT_TRUE(model.ok()) << model.status();
  absl::StatusOr<GemmSurvey> survey = Program::SurveyShortRequestGemms(*model->graph, *model->env, CompileOptions{});
  EXPECT_TRUE(survey.ok()) << survey.status();
  std::vector<cpu::MatmulConfig> configs;
  if (!survey.ok()) return configs;
  for (const ShortRequestGemm& g : survey->gemms) configs.push_back(g.config);
  return configs;
}

// A tuning for this machine giving every one of `configs` min_rows..max_rows.
// (against `long_rows`: the list the choices go to).
GemmTuning PinnedTuning(const std::vector<cpu::MatmulConfig>& configs, int64_t max_rows, cpu::SkinnyMatmul::Isa isa,
                        int64_t min_rows = 1, LongRows long_rows = LongRows::kPlain) {
  GemmTuning tuning;
  tuning.machine = HostMachineKey(isa, omp_get_max_threads());
  for (const cpu::MatmulConfig& c : configs) {
    GemmChoice choice{cpu::DescribeConfig(c), min_rows, max_rows, 16, {}};
    tuning.Choices(long_rows).emplace(choice.config, choice);
  }
  return tuning;
}

std::unique_ptr<Session> CompileWith(const BertConfig& config, std::shared_ptr<const GemmTuning> tuning,
                                     absl::Status* error = nullptr, bool long_rows_on_panels = false) {
  absl::StatusOr<ImportedModel> model = examples::BuildBert(config);
  EXPECT_TRUE(model.ok()) << model.status();
  CompileOptions options;
  options.tuning = std::move(tuning);
  options.long_rows_on_panels = long_rows_on_panels;
  absl::StatusOr<std::unique_ptr<Session>> session =
      Session::Create(ModelSource::Built(std::move(model->graph), std::move(model->env)), options);
  if (error != nullptr) *error = session.status();
  if (!session.ok()) return nullptr;
  return *std::move(session);
}

// Skinny-GEMM calls of one request of `seq` rows (batch 1) on `session`'s
// program, after checking its outputs against the interpreter.
int64_t SkinnyCallsAt(const Session& session, const Graph& reference, const BertConfig& config, int64_t seq) {
  std::vector<Tensor> inputs = examples::MakeBertInputs(config, 1, seq, 11 + seq);
  std::vector<TensorView> views;
  for (const Tensor& t : inputs) views.push_back(TensorView::Of(t));
  ExecutionContext context;
  absl::StatusOr<std::vector<Tensor>> got = session.program()->Run(views, context);
  EXPECT_TRUE(got.ok()) << got.status();
  absl::StatusOr<std::vector<Tensor>> want = Interpret(reference, inputs);
  EXPECT_TRUE(want.ok()) << want.status();
  if (got.ok() && want.ok()) {
    for (size_t i = 0; i < got->size(); ++i) {
      EXPECT_TRUE(testing::TensorsClose((*got)[i], (*want)[i], 1e-3, 1e-4)) << "seq " << seq << ", output " << i;
    }
  }
  return context.skinny_gemm_calls();
}

TEST(GemmTuningTest, APinnedFileDecidesWhichEngineEachRowCountTakes) {
  if (!HostIsa()) GTEST_SKIP() << "this CPU has no skinny GEMM core (neither AVX-512F nor AVX2+FMA)";
  const BertConfig config = SmallBert();
  const std::vector<cpu::MatmulConfig> gemms = BertGemms(config);
  ASSERT_FALSE(gemms.empty());
  absl::StatusOr<ImportedModel> reference = examples::BuildBert(config);
  ASSERT_TRUE(reference.ok());
  const int64_t per_request = static_cast<int64_t>(config.layers) * 6;  // q, k, v, o, up, down

  const std::pair<int64_t, int64_t> ranges[] = {{1, 0}, {1, 8}, {1, 64}, {2, 48}};
  for (const auto& [min_rows, max_rows] : ranges) {
    SCOPED_TRACE(absl::StrCat("skinny rows ", min_rows, "..", max_rows));
    auto tuning = std::make_shared<const GemmTuning>(PinnedTuning(gemms, max_rows, *HostIsa(), min_rows));
    std::unique_ptr<Session> session = CompileWith(config, tuning);
    ASSERT_NE(session, nullptr);
    const ProgramStats& stats = session->stats().program;
    EXPECT_EQ(stats.tuned_gemms, per_request);
    EXPECT_EQ(stats.skinny_gemms, max_rows == 0 ? 0 : per_request);
    for (const ShortRequestGemm& g : session->program()->short_request_gemms()) {
      EXPECT_TRUE(g.tuned) << cpu::DescribeConfig(g.config);
      EXPECT_EQ(g.max_rows, max_rows);
      EXPECT_EQ(g.min_rows, min_rows);
      EXPECT_EQ(g.engine, max_rows == 0 ? "onednn" : absl::StrCat("skinny-", cpu::IsaName(*HostIsa())));
    }
    // Rows inside, at and past the pinned bound.
    for (const int64_t seq : {int64_t{1}, int64_t{2}, int64_t{8}, int64_t{9}, int64_t{48}, int64_t{49}, int64_t{64},
                              int64_t{65}}) {
      const int64_t calls = SkinnyCallsAt(*session, *reference->graph, config, seq);
      EXPECT_EQ(calls, seq >= min_rows && seq <= max_rows ? per_request : 0) << "seq " << seq;
    }
  }
}

// A Program whose other rows read the panels applies the choices measured
// against the panels, and only those; one whose other rows run on the
// runtime-M GEMM applies the other list.
TEST(GemmTuningTest, EachLongRowsEngineAppliesTheChoicesMeasuredAgainstIt) {
  if (HostIsa() != cpu::SkinnyMatmul::Isa::kAvx512) GTEST_SKIP() << "the panels' blocked GEMM needs AVX-512";
  const BertConfig config = SmallBert();
  const std::vector<cpu::MatmulConfig> gemms = BertGemms(config);
  absl::StatusOr<ImportedModel> reference = examples::BuildBert(config);
  ASSERT_TRUE(reference.ok());
  const int64_t per_request = static_cast<int64_t>(config.layers) * 6;
  auto panels_only = std::make_shared<const GemmTuning>(PinnedTuning(gemms, 48, *HostIsa(), 1, LongRows::kPanels));
  for (const bool on_panels : {true, false}) {
    SCOPED_TRACE(on_panels ? "other rows on the panels" : "other rows on the runtime-M GEMM");
    std::unique_ptr<Session> session = CompileWith(config, panels_only, nullptr, on_panels);
    ASSERT_NE(session, nullptr);
    EXPECT_EQ(session->stats().program.tuned_gemms, on_panels ? per_request : 0);
    for (const ShortRequestGemm& g : session->program()->short_request_gemms()) {
      EXPECT_EQ(g.tuned, on_panels) << cpu::DescribeConfig(g.config);
      EXPECT_EQ(g.max_rows, on_panels ? 48 : cpu::SkinnyOptions().max_rows);
      EXPECT_EQ(g.long_engine, on_panels ? "onednn-panels" : "onednn");
    }
    // 40 rows: past the default 32, inside the pinned 48.
    EXPECT_EQ(SkinnyCallsAt(*session, *reference->graph, config, 40), on_panels ? per_request : 0);
  }
}

TEST(GemmTuningTest, WithoutAFileTheDefaultsHoldAndNothingIsTuned) {
  if (!HostIsa()) GTEST_SKIP() << "this CPU has no skinny GEMM core (neither AVX-512F nor AVX2+FMA)";
  const BertConfig config = SmallBert();
  std::unique_ptr<Session> session = CompileWith(config, nullptr);
  ASSERT_NE(session, nullptr);
  EXPECT_EQ(session->stats().program.tuned_gemms, 0);
  for (const ShortRequestGemm& g : session->program()->short_request_gemms()) {
    EXPECT_FALSE(g.tuned);
    EXPECT_EQ(g.max_rows, cpu::SkinnyOptions().max_rows);
    EXPECT_EQ(g.prefetch_rows, cpu::SkinnyOptions().prefetch_rows);
  }
}

TEST(GemmTuningTest, TheAvx2CoreServesWhenTheFileSaysSo) {
  if (!cpu::SkinnyMatmul::Supported(cpu::SkinnyMatmul::Isa::kAvx2)) GTEST_SKIP() << "no AVX2+FMA on this CPU";
  const BertConfig config = SmallBert();
  const std::vector<cpu::MatmulConfig> gemms = BertGemms(config);
  auto tuning = std::make_shared<const GemmTuning>(PinnedTuning(gemms, 32, cpu::SkinnyMatmul::Isa::kAvx2));
  std::unique_ptr<Session> session = CompileWith(config, tuning);
  ASSERT_NE(session, nullptr);
  absl::StatusOr<ImportedModel> reference = examples::BuildBert(config);
  ASSERT_TRUE(reference.ok());
  for (const ShortRequestGemm& g : session->program()->short_request_gemms()) EXPECT_EQ(g.engine, "skinny-avx2");
  EXPECT_GT(SkinnyCallsAt(*session, *reference->graph, config, 5), 0);
}

TEST(GemmTuningTest, AFileFromAnotherMachineIsACompileErrorNamingTheField) {
  if (!HostIsa()) GTEST_SKIP() << "this CPU has no skinny GEMM core (neither AVX-512F nor AVX2+FMA)";
  const BertConfig config = SmallBert();
  const std::vector<cpu::MatmulConfig> gemms = BertGemms(config);
  struct Case {
    const char* field;
    void (*change)(MachineKey&);
  };
  const Case cases[] = {
      {"CPU", [](MachineKey& k) { k.cpu = "Some Other CPU"; }},
      {"CPU feature set", [](MachineKey& k) { k.features += ",+madeup"; }},
      {"thread count", [](MachineKey& k) { k.threads += 1; }},
      {"oneDNN version", [](MachineKey& k) { k.onednn = "0.0.1"; }},
      {"build of the GEMM engines", [](MachineKey& k) { k.compiler = "another build"; }},
  };
  for (const Case& c : cases) {
    GemmTuning tuning = PinnedTuning(gemms, 16, *HostIsa());
    c.change(tuning.machine);
    absl::Status error;
    std::unique_ptr<Session> session =
        CompileWith(config, std::make_shared<const GemmTuning>(std::move(tuning)), &error);
    EXPECT_EQ(session, nullptr) << c.field;
    EXPECT_EQ(error.code(), absl::StatusCode::kFailedPrecondition) << error;
    EXPECT_NE(error.message().find(absl::StrCat("another ", c.field)), std::string::npos) << error;
  }
}

TEST(GemmTuningTest, TheFileRoundTripsThroughDisk) {
  GemmTuning tuning;
  tuning.machine = {"cpu x", "+avx2,+fma", "avx2", 2, "3.1.4", "shapeshift test"};
  tuning.gemms["matmul[m=?, k=8, n=16]"] = {"matmul[m=?, k=8, n=16]", 2, 96, 32, {{1, 4.5, 3.5}, {128, 9, 8}}};
  tuning.gemms["matmul[m=?, k=16, n=8, bias]"] = {"matmul[m=?, k=16, n=8, bias]", 1, 0, 0, {{1, 4, 3}}};
  tuning.panel_gemms["matmul[m=?, k=8, n=16]"] = {"matmul[m=?, k=8, n=16]", 1, 128, 16, {{32, 9, 8.5}}};
  tuning.panel_gemms["matmul[m=?, k=8, n=8]"] = {"matmul[m=?, k=8, n=8]", 1, 32, 16, {{32, 9, 9.5}}, 48};
  tuning.models = {"builtin:bert", "/m/a \"b\".onnx, 10 bytes, modified 7"};
  const std::string path = TempPath("roundtrip.json");
  ASSERT_TRUE(WriteTuningFile(tuning, path).ok());
  absl::StatusOr<GemmTuning> back = ReadTuningFile(path);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(TuningFileJson(*back), TuningFileJson(tuning));
  EXPECT_TRUE(CheckMachineKey(back->machine, tuning.machine).ok());
  ASSERT_EQ(back->gemms.size(), 2u);
  EXPECT_EQ(back->gemms.at("matmul[m=?, k=8, n=16]").skinny_max_rows, 96);
  EXPECT_EQ(back->gemms.at("matmul[m=?, k=8, n=16]").skinny_min_rows, 2);
  EXPECT_EQ(back->gemms.at("matmul[m=?, k=8, n=16]").measured.size(), 2u);
  EXPECT_EQ(back->models, tuning.models);
  ASSERT_EQ(back->panel_gemms.size(), 2u);
  EXPECT_EQ(back->Find(cpu::MatmulConfig{.k = 8, .n = 16}, LongRows::kPanels)->skinny_max_rows, 128);
  // A sweep the budget cut is kept to go on from, and never applied.
  EXPECT_EQ(back->panel_gemms.at("matmul[m=?, k=8, n=8]").resume_at_rows, 48);
  EXPECT_EQ(back->Find(cpu::MatmulConfig{.k = 8, .n = 8}, LongRows::kPanels), nullptr);
  std::remove(path.c_str());
}

TEST(GemmTuningTest, HostileFilesAreErrorsNamingTheFileAndEntry) {
  const std::string machine =
      R"("machine": {"cpu": "c", "features": "f", "isa": "avx512", "threads": 2, "onednn": "3", "compiler": "x"})";
  auto file = [&](const std::string& gemms) {
    return absl::StrCat(R"({"format": "shapeshift-gemm-tuning/1", )", machine, R"(, "gemms": [)", gemms, "]}");
  };
  const std::string good = R"({"config": "matmul[m=?, k=8, n=8]", "skinny_min_rows": 1, "skinny_max_rows": 16, "prefetch_rows": 0})";
  ASSERT_TRUE(ParseTuningFile(file(good), "t.json").ok());
  const std::pair<std::string, std::string> cases[] = {
      {"", "not JSON"},
      {"{", "not JSON"},
      {"[]", "format is not"},
      {R"({"format": "shapeshift-gemm-tuning/2"})", "format is not"},
      {R"({"format": "shapeshift-gemm-tuning/1", "gemms": []})", "machine"},
      {absl::StrCat(R"({"format": "shapeshift-gemm-tuning/1", )", machine, "}"), "gemms"},
      {file(R"({"config": "matmul[m=?, k=8, n=8]", "skinny_min_rows": 1, "skinny_max_rows": -1, "prefetch_rows": 0})"),
       "skinny_max_rows -1 is outside"},
      {file(R"({"config": "matmul[m=?, k=8, n=8]", "skinny_min_rows": 1, "skinny_max_rows": 99999, "prefetch_rows": 0})"),
       "skinny_max_rows 99999 is outside"},
      {file(R"({"config": "matmul[m=?, k=8, n=8]", "skinny_min_rows": 1, "skinny_max_rows": 8, "prefetch_rows": 5000})"),
       "prefetch_rows 5000 is outside"},
      {file(R"({"config": "matmul[m=?, k=8, n=8]", "skinny_min_rows": 1, "skinny_max_rows": "lots", "prefetch_rows": 0})"),
       "skinny_max_rows is not an integer"},
      {file(R"({"config": "conv[k=3]", "skinny_min_rows": 1, "skinny_max_rows": 8, "prefetch_rows": 0})"), "not a GEMM configuration"},
      {file(R"({"config": "matmul[m=?, k=8, n=8]", "skinny_min_rows": 9, "skinny_max_rows": 8, "prefetch_rows": 0})"),
       "skinny_min_rows 9 is outside"},
      {file(R"({"config": "matmul[m=?, k=8, n=8]", "skinny_min_rows": 0, "skinny_max_rows": 8, "prefetch_rows": 0})"),
       "skinny_min_rows 0 is outside"},
      {file(R"({"config": "matmul[m=?, k=8, n=8]", "skinny_max_rows": 8, "prefetch_rows": 0})"),
       "skinny_min_rows is missing"},
      {file(absl::StrCat(good, ",", good)), "appears twice"},
      {file(R"({"config": "matmul[m=?, k=8, n=8]", "skinny_min_rows": 1, "skinny_max_rows": 8, "prefetch_rows": 0,)"
            R"( "measured": [{"m": 8, "skinny_us": 1, "onednn_us": 2}], "resume_at_rows": 8})"),
       "resume_at_rows 8 is outside 9..4096"},
      {file(R"({"config": "matmul[m=?, k=8, n=8]", "skinny_min_rows": 1, "skinny_max_rows": 8, "prefetch_rows": 0,)"
            R"( "resume_at_rows": "later"})"),
       "resume_at_rows is not an integer"},
      {file(R"({"config": "matmul[m=?, k=8, n=8]", "skinny_min_rows": 1, "skinny_max_rows": 8, "prefetch_rows": 0,)"
            R"( "measured": [{"m": 8, "skinny_us": 1, "onednn_us": 2}, {"m": 4, "skinny_us": 1, "onednn_us": 2}]})"),
       "measured m 4 is outside 1..4096 or not ascending"},
      {file(good).substr(0, file(good).size() - 1) + R"(, "models": "builtin:bert"})", "models is not a list"},
      {file(good).substr(0, file(good).size() - 1) + R"(, "models": ["builtin:bert", 7]})", "models[1] is not a string"},
      {file(good).substr(0, file(good).size() - 1) + R"(, "panel_gemms": {}})", "panel_gemms is not a list"},
      {file(good).substr(0, file(good).size() - 1) + ", \"panel_gemms\": [" + good + "," + good + "]}",
       "panel_gemms: gemm 'matmul[m=?, k=8, n=8]' appears twice"},
      {absl::StrCat(R"({"format": "shapeshift-gemm-tuning/1", "machine": {"cpu": "c", "features": "f", )",
                    R"("isa": "sse", "threads": 2, "onednn": "3", "compiler": "x"}, "gemms": []})"),
       "isa 'sse'"},
      {absl::StrCat(R"({"format": "shapeshift-gemm-tuning/1", "machine": {"cpu": "c", "features": "f", )",
                    R"("isa": "avx2", "threads": 0, "onednn": "3", "compiler": "x"}, "gemms": []})"),
       "threads 0"},
  };
  for (const auto& [text, expected] : cases) {
    absl::StatusOr<GemmTuning> parsed = ParseTuningFile(text, "t.json");
    ASSERT_FALSE(parsed.ok()) << text;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_NE(parsed.status().message().find("tuning file t.json"), std::string::npos) << parsed.status();
    EXPECT_NE(parsed.status().message().find(expected), std::string::npos) << parsed.status() << "\nwanted: " << expected;
  }
}

TEST(GemmTuningTest, ReadingRefusesMissingFilesDirectoriesFifosAndHugeFiles) {
  EXPECT_TRUE(absl::IsNotFound(ReadTuningFile(TempPath("missing.json")).status()));
  EXPECT_NE(ReadTuningFile(::testing::TempDir()).status().message().find("not a regular file"), std::string::npos);
  const std::string fifo = TempPath("fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_NE(ReadTuningFile(fifo).status().message().find("not a regular file"), std::string::npos);  // no hang
  std::remove(fifo.c_str());
  const std::string huge = TempPath("huge.json");
  {
    const int fd = open(huge.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(ftruncate(fd, off_t{17} << 20), 0);  // sparse: no disk used
    close(fd);
  }
  EXPECT_NE(ReadTuningFile(huge).status().message().find("more than any tuning file"), std::string::npos);
  std::remove(huge.c_str());
}

// The decision from the choice's own timings against the runtime-M GEMM:
// the range starts at the first of the grid's first two points won and ends
// where the points from there on save the most, summed as relative gains;
// the sweep stops after two losses in a row (or at both of the first two
// points), or runs the whole grid.
void ExpectDecidedByTheRule(const GemmChoice& choice, const TunerOptions& options) {
  SCOPED_TRACE(choice.config);
  ASSERT_FALSE(choice.measured.empty());
  EXPECT_TRUE(choice.complete());
  for (size_t i = 0; i < choice.measured.size(); ++i) EXPECT_EQ(choice.measured[i].m, options.rows[i]);
  size_t start = choice.measured.size();
  for (size_t i = 0; i < std::min<size_t>(2, choice.measured.size()); ++i) {
    const GemmTiming& t = choice.measured[i];
    EXPECT_GT(t.skinny_us, 0);
    EXPECT_GT(t.onednn_us, 0);
    if (t.skinny_us < t.onednn_us) {
      start = i;
      break;
    }
  }
  int64_t hi = 0;
  double gain = 0, best = 0;
  for (size_t i = start; i < choice.measured.size(); ++i) {
    gain += choice.measured[i].onednn_us / choice.measured[i].skinny_us - 1;
    if (gain > best) best = gain, hi = choice.measured[i].m;
  }
  const size_t n = choice.measured.size();
  const std::vector<GemmTiming>& measured = choice.measured;  // (clang 14 lambdas cannot capture a binding)
  auto lost = [&measured](size_t i) { return measured[i].skinny_us >= measured[i].onednn_us; };
  // A range to the grid's end, its last two points won, goes on to the
  // file's limit.
  if (n == options.rows.size() && n >= 2 && !lost(n - 1) && !lost(n - 2) && hi == measured.back().m) {
    hi = kMaxSkinnyRows;
  }
  EXPECT_EQ(choice.skinny_max_rows, hi);
  EXPECT_EQ(choice.skinny_min_rows, hi == 0 || start == 0 ? 1 : choice.measured[start].m);
  EXPECT_TRUE(choice.measured.back().m == options.rows.back() || (n >= 2 && lost(n - 1) && lost(n - 2)));
}

TEST(GemmTunerTest, MeasuresEveryClassAndDecidesFromItsOwnTimings) {
  if (!HostIsa()) GTEST_SKIP() << "this CPU has no skinny GEMM core (neither AVX-512F nor AVX2+FMA)";
  cpu::MatmulConfig a;
  a.k = 64, a.n = 96, a.bias = true;
  cpu::MatmulConfig b = a;
  b.residual = true;
  TunerOptions options;
  options.isa = *HostIsa();
  options.rows = {1, 4, 16};
  options.prefetch = {0, 16};
  options.repeats = 1;
  options.cold_bytes = 1 << 20;
  std::vector<std::string> seen;
  options.on_choice = [&](const GemmChoice& c) { seen.push_back(c.config); };
  absl::StatusOr<TuneReport> report = TuneGemms({a, b, a}, options);  // a repeated: measured once
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(seen.size(), 2u);
  ASSERT_EQ(report->tuning.gemms.size(), 2u);
  EXPECT_TRUE(CheckMachineKey(report->tuning.machine, HostMachineKey(*HostIsa(), omp_get_max_threads())).ok());
  for (const auto& [config, choice] : report->tuning.gemms) {
    EXPECT_TRUE(choice.prefetch_rows == 0 || choice.prefetch_rows == 16) << config;
    ExpectDecidedByTheRule(choice, options);
  }
}

// The range's end, on timings made up to show the rule: a point lost by a
// hair between wins does not cut it; a loss larger than the wins before it
// does; no win, no range.
TEST(GemmTunerTest, TheRangeEndsWhereItsPointsSaveTheMost) {
  auto at = [](int64_t m, double skinny, double other) { return GemmTiming{m, skinny, other}; };
  // 128 lost by 1% between wins of 10%: the range goes on to 256.
  EXPECT_EQ(SkinnyRangeEnd({at(32, 90, 100), at(64, 90, 100), at(128, 101, 100), at(192, 90, 100),
                            at(256, 90, 100), at(384, 110, 100), at(512, 120, 100)}),
            256);
  // A loss that outweighs the wins before it ends the range before it.
  EXPECT_EQ(SkinnyRangeEnd({at(32, 95, 100), at(64, 200, 100), at(128, 90, 100)}), 32);
  // Gains far enough past it do bring the range beyond it.
  EXPECT_EQ(SkinnyRangeEnd({at(32, 95, 100), at(64, 105, 100), at(128, 50, 100)}), 128);
  EXPECT_EQ(SkinnyRangeEnd({at(32, 100, 100), at(64, 120, 100)}), 0);
  EXPECT_EQ(SkinnyRangeEnd({}), 0);
}

// Against the panels: below the smallest chunk both engines run the skinny
// GEMM, so only the grid's points from it up are measured, and the skinny
// GEMM keeps every row count below it.
TEST(GemmTunerTest, AgainstThePanelsOnlyRowsFromTheSmallestChunkUpAreMeasured) {
  if (HostIsa() != cpu::SkinnyMatmul::Isa::kAvx512) GTEST_SKIP() << "the panels' blocked GEMM needs AVX-512";
  cpu::MatmulConfig a;
  a.k = 64, a.n = 96, a.bias = true;
  TunerOptions options;
  options.isa = *HostIsa();
  options.rows = {1, 16, 32, 48, 128};
  options.prefetch = {0, 16};
  options.repeats = 1;
  options.cold_bytes = 1 << 20;
  options.long_rows = LongRows::kPanels;
  absl::StatusOr<TuneReport> report = TuneGemms({a}, options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->tuning.gemms.empty());
  ASSERT_EQ(report->tuning.panel_gemms.size(), 1u);
  const GemmChoice& choice = report->tuning.panel_gemms.begin()->second;
  const int64_t chunk = cpu::PanelRowsMatmul::kChunkRows.back();
  ASSERT_FALSE(choice.measured.empty());
  for (const GemmTiming& t : choice.measured) EXPECT_GE(t.m, chunk);
  EXPECT_EQ(choice.skinny_min_rows, 1);
  int64_t hi = std::max(chunk - 1, SkinnyRangeEnd(choice.measured));
  const size_t n = choice.measured.size();
  auto won = [&choice](size_t i) { return choice.measured[i].skinny_us < choice.measured[i].onednn_us; };
  if (choice.measured.back().m == options.rows.back() && n >= 2 && won(n - 1) && won(n - 2) &&
      hi == choice.measured.back().m) {
    hi = kMaxSkinnyRows;  // a range to the grid's end, its last two points won
  }
  EXPECT_EQ(choice.skinny_max_rows, hi);
}

// Past the grid: a range that runs to its last point, won with the one
// before it, goes on to kMaxSkinnyRows; one whose last point was lost, that
// ends before it, or whose sweep stopped short of the grid's end, does not.
TEST(GemmTunerTest, ARangeWonToTheGridsEndGoesOnToTheLimit) {
  auto at = [](int64_t m, double skinny, double other) { return GemmTiming{m, skinny, other}; };
  const std::vector<GemmTiming> won = {at(256, 95, 100), at(512, 90, 100), at(1024, 92, 100)};
  EXPECT_EQ(SkinnyRowsPastTheGrid(won, 1024, true), kMaxSkinnyRows);
  EXPECT_EQ(SkinnyRowsPastTheGrid(won, 1024, false), 1024);  // a sweep cut or stopped: measured rows only
  EXPECT_EQ(SkinnyRowsPastTheGrid(won, 512, true), 512);     // a range that ends before the last point
  // The last point lost, or the one before it: the range stays.
  EXPECT_EQ(SkinnyRowsPastTheGrid({at(512, 90, 100), at(1024, 101, 100)}, 512, true), 512);
  EXPECT_EQ(SkinnyRowsPastTheGrid({at(512, 101, 100), at(1024, 80, 100)}, 1024, true), 1024);
  EXPECT_EQ(SkinnyRowsPastTheGrid({at(1024, 80, 100)}, 1024, true), 1024);  // one point is no trend
  EXPECT_EQ(SkinnyRowsPastTheGrid({}, 0, true), 0);
}

// What the measurement adds to the peak RSS is reported from the copies it
// held: enough copies to fill cold_bytes, at least two however large the
// class, plain and packed against the runtime-M GEMM, packed (and the one
// scratch matrix they were packed from) against the panels.
TEST(GemmTunerTest, ReportsTheWeightCopiesItHeld) {
  if (!HostIsa()) GTEST_SKIP() << "this CPU has no skinny GEMM core (neither AVX-512F nor AVX2+FMA)";
  cpu::MatmulConfig small;
  small.k = 64, small.n = 96;
  cpu::MatmulConfig large;  // 2 MiB, twice cold_bytes
  large.k = 256, large.n = 2048;
  TunerOptions options;
  options.isa = *HostIsa();
  options.rows = {1, 2};
  options.prefetch = {0};
  options.repeats = 1;
  options.cold_bytes = 1 << 20;
  auto plain_bytes = [](const cpu::MatmulConfig& c) { return c.k * c.n * int64_t{4}; };
  const int64_t small_copies = (options.cold_bytes + plain_bytes(small) - 1) / plain_bytes(small);
  std::vector<LongRows> against = {LongRows::kPlain};
  if (HostIsa() == cpu::SkinnyMatmul::Isa::kAvx512) against.push_back(LongRows::kPanels);
  for (LongRows long_rows : against) {
    SCOPED_TRACE(LongRowsName(long_rows));
    options.long_rows = long_rows;
    const int64_t sets = long_rows == LongRows::kPlain ? 2 : 1;  // plain + packed, or packed
    const int64_t scratch = long_rows == LongRows::kPlain ? 0 : 1;
    absl::StatusOr<TuneReport> report = TuneGemms({small}, options);
    ASSERT_TRUE(report.ok()) << report.status();
    EXPECT_GE(report->peak_copy_bytes, (sets * small_copies + scratch) * plain_bytes(small));
    EXPECT_LE(report->peak_copy_bytes, (sets * small_copies + scratch) * plain_bytes(small) * 5 / 4);
    report = TuneGemms({small, large}, options);
    ASSERT_TRUE(report.ok()) << report.status();
    EXPECT_GE(report->peak_copy_bytes, (sets * 2 + scratch) * plain_bytes(large));
    EXPECT_LE(report->peak_copy_bytes, (sets * 2 + scratch) * plain_bytes(large) * 5 / 4);
  }
}

TEST(GemmTunerTest, TheDefaultColdBytesAreFourCachesWithinBounds) {
  const int64_t cold = DefaultColdBytes();
  EXPECT_GE(cold, int64_t{64} << 20);
  EXPECT_LE(cold, int64_t{256} << 20);
  EXPECT_EQ(TunerOptions().cold_bytes, cold);
}

// The prefetch distance is measured at a row count whose k is not sliced on
// either core: sliced rows prefetch a slice ahead whatever the distance, so
// there every candidate but 0 would time the same.
TEST(GemmTunerTest, ThePrefetchDistanceIsMeasuredWhereKIsNotSliced) {
  const int64_t m = TunerOptions().prefetch_at_rows;
  for (cpu::SkinnyMatmul::Isa isa : {cpu::SkinnyMatmul::Isa::kAvx2, cpu::SkinnyMatmul::Isa::kAvx512}) {
    for (int64_t k : {64, 768, 3072}) {
      EXPECT_EQ(cpu::SkinnyMatmul::KSlice(isa, m, k, cpu::SkinnyOptions().slice_bytes), 0)
          << "m=" << m << " k=" << k << " on " << cpu::IsaName(isa);
    }
  }
}

TEST(GemmTunerTest, BadOptionsAndAnExhaustedBudgetAreReported) {
  if (!HostIsa()) GTEST_SKIP() << "this CPU has no skinny GEMM core (neither AVX-512F nor AVX2+FMA)";
  cpu::MatmulConfig a;
  a.k = 32, a.n = 32;
  TunerOptions bad;
  bad.isa = *HostIsa();
  bad.rows = {4, 2};
  EXPECT_NE(TuneGemms({a}, bad).status().message().find("not ascending"), std::string::npos);
  bad.rows = {1};
  bad.repeats = 0;
  EXPECT_NE(TuneGemms({a}, bad).status().message().find("repeats 0"), std::string::npos);

  TunerOptions tight;
  tight.isa = *HostIsa();
  tight.rows = {1};
  tight.prefetch = {0};
  tight.repeats = 1;
  tight.cold_bytes = 0;
  tight.budget_s = 1e-9;  // spent before the second class
  cpu::MatmulConfig b = a;
  b.n = 48;
  cpu::MatmulConfig batched = a;
  batched.batch = 2;  // no skinny path
  absl::StatusOr<TuneReport> report = TuneGemms({a, batched, b}, tight);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->tuning.gemms.size(), 1u);
  EXPECT_EQ(report->skipped, std::vector<std::string>{cpu::DescribeConfig(b)});
  EXPECT_EQ(report->inapplicable, std::vector<std::string>{cpu::DescribeConfig(batched)});
}

// A budget spent after the run's first point cuts the sweep there: the
// class comes back incomplete (not applied: Find skips it), and each later
// run, given it to resume, measures at least one more point with the
// prefetch distance chosen first, until the sweep is whole and decided by
// the same rule as one uncut run.
TEST(GemmTunerTest, ABudgetCutsASweepAndLaterRunsGoOnFromItsPoints) {
  if (!HostIsa()) GTEST_SKIP() << "this CPU has no skinny GEMM core (neither AVX-512F nor AVX2+FMA)";
  cpu::MatmulConfig a;
  a.k = 64, a.n = 96, a.bias = true;
  const std::string name = cpu::DescribeConfig(a);
  TunerOptions options;
  options.isa = *HostIsa();
  options.rows = {1, 2, 4, 8, 16, 32};
  options.prefetch = {0, 16};
  options.repeats = 1;
  options.cold_bytes = 1 << 20;
  options.budget_s = 1e-9;  // spent by the first point
  absl::StatusOr<TuneReport> first = TuneGemms({a}, options);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->cut, std::vector<std::string>{name});
  EXPECT_TRUE(first->skipped.empty());
  GemmChoice choice = first->tuning.gemms.at(name);
  ASSERT_EQ(choice.measured.size(), 1u);
  EXPECT_EQ(choice.measured[0].m, 1);
  EXPECT_EQ(choice.resume_at_rows, 2);
  EXPECT_FALSE(choice.complete());
  EXPECT_EQ(first->tuning.Find(a, LongRows::kPlain), nullptr);  // the defaults serve meanwhile
  EXPECT_EQ(SkinnyOptionsFor(&first->tuning, a, LongRows::kPlain, 1).max_rows, cpu::SkinnyOptions().max_rows);

  // A distance outside options.prefetch: only a resumed sweep can have it.
  choice.prefetch_rows = 32;
  const GemmTiming kept = choice.measured[0];
  for (int run = 0; run < 10 && !choice.complete(); ++run) {
    const size_t before = choice.measured.size();
    options.resume = {{name, choice}};
    absl::StatusOr<TuneReport> next = TuneGemms({a}, options);
    ASSERT_TRUE(next.ok()) << next.status();
    choice = next->tuning.gemms.at(name);
    EXPECT_EQ(choice.prefetch_rows, 32);
    ASSERT_EQ(choice.measured.size(), before + 1);  // one point a run, at this budget
    EXPECT_EQ(choice.measured[0].skinny_us, kept.skinny_us);  // earlier points kept, not measured again
    EXPECT_EQ(next->cut.empty(), choice.complete());
  }
  ExpectDecidedByTheRule(choice, options);

  // Without a budget the resumed sweep runs to its end in one run.
  choice = first->tuning.gemms.at(name);
  options.budget_s = 0;
  options.resume = {{name, choice}};
  absl::StatusOr<TuneReport> whole = TuneGemms({a}, options);
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_TRUE(whole->cut.empty());
  ExpectDecidedByTheRule(whole->tuning.gemms.at(name), options);
  EXPECT_NE(whole->tuning.Find(a, LongRows::kPlain), nullptr);
}

// A point's rounds: all `repeats` while a round is short, as few as reach
// point_s when rounds are long, never below min_repeats or above repeats.
TEST(GemmTunerTest, LongPointsRunFewerRoundsDownToTheMinimum) {
  TunerOptions o;
  o.repeats = 7, o.min_repeats = 3, o.point_s = 0.25;
  EXPECT_EQ(RepeatsPerPoint(0.001, o), 7);
  EXPECT_EQ(RepeatsPerPoint(0.05, o), 5);
  EXPECT_EQ(RepeatsPerPoint(0.2, o), 3);
  EXPECT_EQ(RepeatsPerPoint(2.0, o), 3);
  o.repeats = 2;  // --repeats below the minimum wins
  EXPECT_EQ(RepeatsPerPoint(2.0, o), 2);
  o.repeats = 7, o.point_s = 0;  // every round counts: the minimum
  EXPECT_EQ(RepeatsPerPoint(0.001, o), 3);
}

}  // namespace
}  // namespace shapeshift::runtime
