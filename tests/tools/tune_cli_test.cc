// `shapeshift tune` and `run --tuning`: tune writes a tuning file for the
// model's GEMM classes that run then applies (each class `tuned` in the
// report, the check against the interpreter still passing); a second model
// extends the file; bad usage, a file that is not a tuning and a file for
// another thread count are errors naming the flag or the field. Without -o,
// tune writes into the cache dir, where run finds it (and ignores, with a
// note, one it cannot use); a model's first run with a cache dir measures the
// classes that file lacks (against the engine its other rows run on) within
// --tune-budget-s, once (tools/lazy_tuning.h).
#include <cstdio>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "codegen/cpu/skinny_matmul.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/host_long_rows.h"
#include "nlohmann/json.hpp"
#include "runtime/tuning/gemm_tuning.h"
#include "tools/tune_into_file.h"
#include "tests/tools/cli_test_util.h"

namespace shapeshift {
namespace {

using ::testing::HasSubstr;
using shapeshift::testing::CliResult;
using shapeshift::testing::ProcessTempPath;
using shapeshift::testing::RunShapeshift;

// A quick tune: a short rows grid, one repeat, 2 threads (the file's key).
constexpr char kQuick[] = "--rows 1,8,48 --repeats 1 --threads 2";

std::string Data(const std::string& rel) { return std::string(SHAPESHIFT_SOURCE_DIR) + "/tests/data/" + rel; }

bool HasSkinnyCore() { return codegen::cpu::SkinnyMatmul::HostIsa().has_value(); }

// `run builtin:bert FLAGS` on one short request with --check, on the 2 threads
// kQuick's files are keyed on; stdout only (the JSON report).
CliResult RunBertOnTwoThreads(const std::string& flags) {
  return shapeshift::testing::RunCommand("OMP_NUM_THREADS=2 " + std::string(SHAPESHIFT_CLI) + " run builtin:bert " +
                                         flags + " --input input_ids=1x8 --repeats 1 --check --json 2>/dev/null");
}

// A fresh temporary directory of this process.
std::string FreshDir(const std::string& name) {
  const std::string dir = ProcessTempPath(name);
  std::filesystem::remove_all(dir);
  return dir;
}

TEST(TuneCliTest, TuneWritesAFileRunApplies) {
  if (!HasSkinnyCore()) GTEST_SKIP() << "no skinny GEMM core on this CPU: nothing to tune";
  const std::string file = ProcessTempPath("tuning.json");
  std::remove(file.c_str());
  CliResult tuned = RunShapeshift("tune builtin:bert -o " + file + " " + kQuick + " --json");
  ASSERT_EQ(tuned.exit_code, 0) << tuned.output;
  nlohmann::json t = nlohmann::json::parse(tuned.output);
  ASSERT_EQ(t["tuned"].size(), 4u) << tuned.output;  // q/k/v+o, the FFN up and down, the residual projection
  // The same against the panels, where this host has them (host_long_rows.h).
  ASSERT_EQ(t["tuned_against_panels"].size(), shapeshift::testing::HostTunesAgainstPanels() ? 4u : 0u)
      << tuned.output;
  EXPECT_EQ(t["threads"], 2);
  EXPECT_EQ(t["default_skinny_max_rows"], 32);

  // The file is keyed on 2 threads: run with 2.
  CliResult run = RunBertOnTwoThreads("--no-cache --tuning " + file);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  nlohmann::json r = nlohmann::json::parse(run.output);
  EXPECT_TRUE(r["check_passed"].get<bool>());
  ASSERT_EQ(r["short_request_gemms"].size(), 4u) << run.output;
  for (const auto& g : r["short_request_gemms"]) {
    EXPECT_TRUE(g["tuned"].get<bool>()) << g;
    // The choice measured against the engine this run's other rows take.
    const char* list = g["long_engine"] == "onednn-panels" ? "tuned_against_panels" : "tuned";
    bool found = false;
    for (const auto& c : t[list]) {
      if (c["config"] == g["config"]) {
        found = true;
        EXPECT_EQ(g["max_rows"], c["skinny_max_rows"]) << g;
        EXPECT_EQ(g["min_rows"], c["skinny_min_rows"]) << g;
      }
    }
    EXPECT_TRUE(found) << g;
  }
  EXPECT_GT(r["tuned_gemms"].get<int>(), 0);

  // Another thread count is refused at compile, naming the field.
  CliResult other = shapeshift::testing::RunCommand("OMP_NUM_THREADS=1 " + std::string(SHAPESHIFT_CLI) +
                                                    " run builtin:bert --no-cache --tuning " + file +
                                                    " --input input_ids=1x8 --repeats 1 2>&1");
  EXPECT_EQ(other.exit_code, 2) << other.output;
  EXPECT_THAT(other.output, HasSubstr("another thread count (the file's: '2', this machine's: '1')"));

  // A second model extends the file; the first model's classes stay.
  CliResult more = RunShapeshift("tune " + Data("models/tiny_bert_opset17.onnx") + " -o " + file + " " + kQuick +
                                 " --json");
  ASSERT_EQ(more.exit_code, 0) << more.output;
  EXPECT_GE(nlohmann::json::parse(more.output)["gemms_in_file"].get<size_t>(), 4u);
  std::remove(file.c_str());
}

// The AVX2-only feature set on an AVX-512 machine (SHAPESHIFT_MAX_CPU_ISA,
// codegen/cpu/isa_limit.h): tune measures the AVX2 core under masked
// features, run applies that file and agrees with the interpreter; the
// unmasked process refuses the masked file (its feature set differs).
TEST(TuneCliTest, WithAvx512MaskedOffTuningRunsAndAgrees) {
  if (!codegen::cpu::SkinnyMatmul::Supported(codegen::cpu::SkinnyMatmul::Isa::kAvx2)) {
    GTEST_SKIP() << "no AVX2+FMA on this CPU";
  }
  const std::string file = ProcessTempPath("tuning-avx2.json");
  std::remove(file.c_str());
  const std::string masked = "SHAPESHIFT_MAX_CPU_ISA=avx2 OMP_NUM_THREADS=2 " + std::string(SHAPESHIFT_CLI);
  CliResult tuned = shapeshift::testing::RunCommand(masked + " tune builtin:bert -o " + file + " " + kQuick +
                                                    " --json 2>&1");
  ASSERT_EQ(tuned.exit_code, 0) << tuned.output;
  EXPECT_EQ(nlohmann::json::parse(tuned.output)["isa"], "avx2");
  std::ifstream in(file);
  nlohmann::json written = nlohmann::json::parse(in);
  const std::string features = written["machine"]["features"];
  EXPECT_EQ(features.find("+avx512"), std::string::npos) << features;
  EXPECT_EQ(written["machine"]["isa"], "avx2");

  CliResult run = shapeshift::testing::RunCommand(masked + " run builtin:bert --no-cache --tuning " + file +
                                                  " --input input_ids=2x24 --repeats 1 --check --json 2>/dev/null");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  nlohmann::json r = nlohmann::json::parse(run.output);
  EXPECT_TRUE(r["check_passed"].get<bool>());
  for (const auto& g : r["short_request_gemms"]) {
    EXPECT_TRUE(g["tuned"].get<bool>()) << g;
    if (g["max_rows"].get<int>() > 0) EXPECT_EQ(g["engine"], "skinny-avx2") << g;
  }
  if (codegen::cpu::SkinnyMatmul::Supported(codegen::cpu::SkinnyMatmul::Isa::kAvx512)) {
    CliResult unmasked = shapeshift::testing::RunCommand("OMP_NUM_THREADS=2 " + std::string(SHAPESHIFT_CLI) +
                                                         " run builtin:bert --no-cache --tuning " + file +
                                                         " --input input_ids=1x8 --repeats 1 2>&1");
    EXPECT_EQ(unmasked.exit_code, 2) << unmasked.output;
    EXPECT_THAT(unmasked.output, HasSubstr("another CPU feature set"));
  }
  CliResult bad = shapeshift::testing::RunCommand("SHAPESHIFT_MAX_CPU_ISA=sse " + std::string(SHAPESHIFT_CLI) +
                                                  " run builtin:bert --no-cache --repeats 1 2>&1");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_THAT(bad.output, HasSubstr("SHAPESHIFT_MAX_CPU_ISA='sse': expected avx2 or host"));
  std::remove(file.c_str());
}

TEST(TuneCliTest, BadUsageAndBadFilesAreErrors) {
  // Without -o the file goes into the cache dir: with none there is nowhere.
  CliResult no_output = RunShapeshift("tune builtin:bert --no-cache", "2>&1");
  EXPECT_EQ(no_output.exit_code, 2);
  EXPECT_THAT(no_output.output, HasSubstr("--no-cache: give -o FILE"));
  CliResult bad_isa = RunShapeshift("tune builtin:bert -o x.json --isa sse", "2>&1");
  EXPECT_EQ(bad_isa.exit_code, 2);
  EXPECT_THAT(bad_isa.output, HasSubstr("--isa: expected avx512 or avx2"));
  CliResult bad_rows = RunShapeshift("tune builtin:bert -o x.json --rows 8,2", "2>&1");
  EXPECT_EQ(bad_rows.exit_code, 2);
  EXPECT_THAT(bad_rows.output, HasSubstr("not ascending"));

  const std::string junk = ProcessTempPath("junk.json");
  std::ofstream(junk) << "{\"format\": \"something else\"}";
  CliResult run = RunShapeshift("run builtin:bert --tuning " + junk, "2>&1");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.output, HasSubstr("--tuning: tuning file " + junk + ": format is not"));
  // tune never overwrites a file that is not a tuning file.
  CliResult tune = RunShapeshift("tune builtin:bert -o " + junk + " " + kQuick, "2>&1");
  EXPECT_EQ(tune.exit_code, 2);
  EXPECT_THAT(tune.output, HasSubstr("format is not"));
  std::ifstream in(junk);
  std::string kept((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(kept, "{\"format\": \"something else\"}");
  std::remove(junk.c_str());
  CliResult packing = RunShapeshift("run builtin:bert --no-small-row-packing --tuning " + junk, "2>&1");
  EXPECT_EQ(packing.exit_code, 2);
  EXPECT_THAT(packing.output, HasSubstr("--no-small-row-packing removes"));
}

// tune loads an ONNX file's weights into the weights dir's unlinked file, as
// run does, and measures the same classes as with them in memory.
TEST(TuneCliTest, TheWeightsGoToTheWeightsDirAndTheClassesAreTheSame) {
  if (!HasSkinnyCore()) GTEST_SKIP() << "no skinny GEMM core on this CPU: nothing to tune";
  const std::string model = Data("models/tiny_bert_opset17.onnx");
  const std::string on_disk = ProcessTempPath("tune-weights-on-disk.json");
  const std::string in_memory = ProcessTempPath("tune-weights-in-memory.json");
  std::remove(on_disk.c_str());
  std::remove(in_memory.c_str());
  // Under the build tree: on a disk, where /tmp may be tmpfs.
  const std::string weights = (std::filesystem::current_path() / ("tune_weights_" + std::to_string(getpid()))).string();
  CliResult a = RunShapeshift("tune " + model + " -o " + on_disk + " --weights-dir " + weights + " --json " + kQuick,
                              "2>&1");
  ASSERT_EQ(a.exit_code, 0) << a.output;
  CliResult b = RunShapeshift("tune " + model + " -o " + in_memory + " --weights-in-memory --json " + kQuick, "2>&1");
  ASSERT_EQ(b.exit_code, 0) << b.output;
  auto classes = [](const std::string& text) {
    std::vector<std::string> out;
    const nlohmann::json report = nlohmann::json::parse(text);
    for (const auto& g : report["tuned"]) out.push_back(g["config"]);
    return out;
  };
  EXPECT_FALSE(classes(a.output).empty()) << a.output;
  EXPECT_EQ(classes(a.output), classes(b.output));
  EXPECT_TRUE(std::filesystem::is_directory(weights));
  EXPECT_TRUE(std::filesystem::is_empty(weights)) << "the file is unlinked";
  std::filesystem::remove_all(weights);

  CliResult both = RunShapeshift("tune " + model + " -o " + on_disk + " --weights-dir " + weights +
                                     " --weights-in-memory",
                                 "2>&1");
  EXPECT_EQ(both.exit_code, 2) << both.output;
  EXPECT_THAT(both.output, HasSubstr("--weights-in-memory"));
  std::remove(on_disk.c_str());
  std::remove(in_memory.c_str());
}

TEST(TuneCliTest, WithoutAFileTuneWritesIntoTheCacheDirAndRunFindsIt) {
  if (!HasSkinnyCore()) GTEST_SKIP() << "no skinny GEMM core on this CPU: nothing to tune";
  const std::string dir = FreshDir("tuning-cache");
  CliResult tuned = RunShapeshift("tune builtin:bert --cache-dir " + dir + " " + kQuick + " --json");
  ASSERT_EQ(tuned.exit_code, 0) << tuned.output;
  const std::string file = nlohmann::json::parse(tuned.output)["file"].get<std::string>();
  EXPECT_THAT(file, ::testing::StartsWith(dir + "/tuning/"));
  ASSERT_TRUE(std::filesystem::exists(file)) << file;

  // The file is keyed on 2 threads: run with 2, the same cache dir, no --tuning.
  const auto run = RunBertOnTwoThreads;
  CliResult found = run("--cache-dir " + dir);
  ASSERT_EQ(found.exit_code, 0) << found.output;
  nlohmann::json r = nlohmann::json::parse(found.output);
  EXPECT_TRUE(r["check_passed"].get<bool>());
  EXPECT_EQ(r["tuning_file"], file);
  EXPECT_THAT(r["notes"].dump(), HasSubstr("tuning in the cache dir"));
  ASSERT_EQ(r["short_request_gemms"].size(), 4u) << found.output;
  for (const auto& g : r["short_request_gemms"]) EXPECT_TRUE(g["tuned"].get<bool>()) << g;

  // No cache dir: the built-in defaults.
  CliResult none = run("--no-cache");
  ASSERT_EQ(none.exit_code, 0) << none.output;
  nlohmann::json n = nlohmann::json::parse(none.output);
  EXPECT_EQ(n["tuning_file"], "");
  EXPECT_EQ(n["tuned_gemms"], 0);

  // A damaged file in the cache is ignored, with a note naming it.
  { std::ofstream(file) << "not a tuning"; }
  CliResult damaged = run("--cache-dir " + dir);
  ASSERT_EQ(damaged.exit_code, 0) << damaged.output;
  nlohmann::json d = nlohmann::json::parse(damaged.output);
  EXPECT_EQ(d["tuning_file"], "");
  EXPECT_EQ(d["tuned_gemms"], 0);
  EXPECT_THAT(d["notes"].dump(), HasSubstr("ignored the cache dir's GEMM tuning " + file));

  // Where to write must be unambiguous.
  CliResult both = RunShapeshift("tune builtin:bert -o " + ProcessTempPath("t.json") + " --cache-dir " + dir, "2>&1");
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_THAT(both.output, HasSubstr("not both"));
}

// Lazy tuning (tools/lazy_tuning.h): with a cache dir and no --tuning, a
// model's first run on this machine measures its classes into the cache
// dir's file, and the file names the model so later runs do neither.
TEST(TuneCliTest, AModelsFirstRunTunesItsClassesOnceIntoTheCacheDir) {
  if (!HasSkinnyCore()) GTEST_SKIP() << "no skinny GEMM core on this CPU: nothing to tune";
  const std::string dir = FreshDir("lazy-tuning-cache");
  const auto run = RunBertOnTwoThreads;
  // A budget no host misses: what is measured must not depend on how busy
  // the machine is (the default, kDefaultTuneBudgetS = 10 s, was missed once
  // with a second test running beside this one; the cut is tested below).
  CliResult first = run("--cache-dir " + dir + " --tune-budget-s 600");
  ASSERT_EQ(first.exit_code, 0) << first.output;
  nlohmann::json r = nlohmann::json::parse(first.output);
  EXPECT_TRUE(r["check_passed"].get<bool>());
  EXPECT_THAT(r["notes"].dump(), HasSubstr("GEMM tuning: measured 4 of this model's 4 GEMM class(es)"));
  EXPECT_THAT(r["notes"].dump(), HasSubstr("(budget 600 s"));
  const std::string file = r["tuning_file"].get<std::string>();
  EXPECT_THAT(file, ::testing::StartsWith(dir + "/tuning/"));
  absl::StatusOr<runtime::GemmTuning> written = runtime::ReadTuningFile(file);
  ASSERT_TRUE(written.ok()) << written.status();
  // run keeps its weights in a file by default, so the other rows read the
  // panels: with oneDNN's blocked GEMM where this host has it, which is then
  // the engine the classes were measured against (host_long_rows.h).
  const bool panels = shapeshift::testing::HostTunesAgainstPanels();
  const std::string engine = shapeshift::testing::HostTunedAgainstOnPanelsRequest();
  EXPECT_THAT(r["notes"].dump(), HasSubstr("lacked) against " + engine + " in"));
  EXPECT_EQ(written->panel_gemms.size(), panels ? 4u : 0u);
  EXPECT_EQ(written->gemms.size(), panels ? 0u : 4u);
  EXPECT_THAT(written->models, ::testing::ElementsAre("builtin:bert, against " + engine));
  EXPECT_EQ(r["tuned_gemms"].get<int>(), 24) << first.output;  // every step of the 4 classes
  for (const auto& g : r["short_request_gemms"]) EXPECT_TRUE(g["tuned"].get<bool>()) << g;

  // The file names the model: nothing is listed or measured again, and the
  // file is not rewritten.
  const auto written_at = std::filesystem::last_write_time(file);
  CliResult second = run("--cache-dir " + dir);
  ASSERT_EQ(second.exit_code, 0) << second.output;
  nlohmann::json s = nlohmann::json::parse(second.output);
  EXPECT_THAT(s["notes"].dump(), ::testing::Not(HasSubstr("GEMM tuning:")));
  EXPECT_THAT(s["notes"].dump(), HasSubstr("GEMM choices from this machine's tuning in the cache dir"));
  EXPECT_EQ(s["tuning_file"], file);
  EXPECT_EQ(s["tuned_gemms"].get<int>(), 24);
  EXPECT_EQ(std::filesystem::last_write_time(file), written_at);

  // Weights in memory: the other rows run on oneDNN's runtime-M GEMM over
  // the plain weights, a model not yet measured against that where the
  // first run's rows read the panels (and already measured where not).
  CliResult in_memory = run("--cache-dir " + dir + " --weights-in-memory --tune-budget-s 600");
  ASSERT_EQ(in_memory.exit_code, 0) << in_memory.output;
  nlohmann::json m = nlohmann::json::parse(in_memory.output);
  EXPECT_TRUE(m["check_passed"].get<bool>());
  if (panels) {
    EXPECT_THAT(m["notes"].dump(), HasSubstr("measured 4 of this model's 4 GEMM class(es) (those this machine's tuning lacked) against onednn in"));
  } else {
    EXPECT_THAT(m["notes"].dump(), ::testing::Not(HasSubstr("GEMM tuning:")));
  }
  for (const auto& g : m["short_request_gemms"]) {
    EXPECT_TRUE(g["tuned"].get<bool>()) << g;
    EXPECT_EQ(g["long_engine"], "onednn") << g;
  }
  absl::StatusOr<runtime::GemmTuning> both = runtime::ReadTuningFile(file);
  ASSERT_TRUE(both.ok()) << both.status();
  EXPECT_EQ(both->gemms.size(), 4u);
  EXPECT_EQ(both->panel_gemms.size(), panels ? 4u : 0u);
  if (panels) {
    EXPECT_THAT(both->models, ::testing::UnorderedElementsAre("builtin:bert, against onednn-panels",
                                                              "builtin:bert, against onednn"));
  } else {
    EXPECT_THAT(both->models, ::testing::ElementsAre("builtin:bert, against onednn"));
  }
}

// A budget the first point already exceeds: the first class's sweep is cut
// after it, the rest are not started; all keep the defaults and the model is
// not named, so the next run goes on with the first class from its point and
// measures the rest.
TEST(TuneCliTest, ClassesTheBudgetLeftOutAreMeasuredByTheNextRun) {
  if (!HasSkinnyCore()) GTEST_SKIP() << "no skinny GEMM core on this CPU: nothing to tune";
  const std::string dir = FreshDir("lazy-tuning-budget");
  const auto run = RunBertOnTwoThreads;
  CliResult first = run("--cache-dir " + dir + " --tune-budget-s 0.000001");
  ASSERT_EQ(first.exit_code, 0) << first.output;
  nlohmann::json r = nlohmann::json::parse(first.output);
  EXPECT_TRUE(r["check_passed"].get<bool>());
  EXPECT_THAT(r["notes"].dump(), HasSubstr("measured 0 of this model's 4 GEMM class(es)"));
  EXPECT_THAT(r["notes"].dump(), HasSubstr("cut by the budget (built-in defaults kept, a later run goes on"));
  EXPECT_THAT(r["notes"].dump(), HasSubstr("not reached within the budget"));
  for (const auto& g : r["short_request_gemms"]) EXPECT_FALSE(g["tuned"].get<bool>()) << g;
  absl::StatusOr<runtime::GemmTuning> partial = runtime::ReadTuningFile(r["tuning_file"].get<std::string>());
  ASSERT_TRUE(partial.ok()) << partial.status();
  EXPECT_TRUE(partial->models.empty());
  const std::map<std::string, runtime::GemmChoice>& cut =
      partial->gemms.empty() ? partial->panel_gemms : partial->gemms;
  ASSERT_EQ(cut.size(), 1u);
  const runtime::GemmChoice first_class = cut.begin()->second;
  ASSERT_EQ(first_class.measured.size(), 1u);
  EXPECT_GT(first_class.resume_at_rows, first_class.measured[0].m);

  CliResult second = run("--cache-dir " + dir);
  ASSERT_EQ(second.exit_code, 0) << second.output;
  nlohmann::json s = nlohmann::json::parse(second.output);
  EXPECT_THAT(s["notes"].dump(), HasSubstr("measured 4 of this model's 4 GEMM class(es)"));
  for (const auto& g : s["short_request_gemms"]) EXPECT_TRUE(g["tuned"].get<bool>()) << g;
  absl::StatusOr<runtime::GemmTuning> full = runtime::ReadTuningFile(s["tuning_file"].get<std::string>());
  ASSERT_TRUE(full.ok()) << full.status();
  // The cut class went on from its point: measured once, kept, and whole.
  const runtime::GemmChoice& resumed =
      (full->gemms.empty() ? full->panel_gemms : full->gemms).at(first_class.config);
  EXPECT_TRUE(resumed.complete());
  EXPECT_EQ(resumed.prefetch_rows, first_class.prefetch_rows);
  ASSERT_GE(resumed.measured.size(), 2u);
  EXPECT_EQ(resumed.measured[0].skinny_us, first_class.measured[0].skinny_us);
  EXPECT_THAT(full->models,
              ::testing::ElementsAre("builtin:bert, against " + shapeshift::testing::HostTunedAgainstOnPanelsRequest()));
}

// A model file has one name in the file however it is spelled, and a
// changed file is another model.
TEST(TuneCliTest, AModelFileIsNamedByItsCanonicalPathSizeAndTime) {
  const std::string dir = FreshDir("memo");
  std::filesystem::create_directories(dir + "/sub");
  const std::string file = dir + "/m.onnx";
  { std::ofstream(file) << "bytes"; }
  std::filesystem::create_symlink(file, dir + "/link.onnx");
  const std::string memo = tools::ModelMemo(file);
  EXPECT_THAT(memo, ::testing::StartsWith(std::filesystem::canonical(file).string() + ", 5 bytes, modified "));
  EXPECT_EQ(tools::ModelMemo(dir + "/sub/../m.onnx"), memo);
  EXPECT_EQ(tools::ModelMemo(dir + "/link.onnx"), memo);
  { std::ofstream(file, std::ios::app) << " more"; }
  EXPECT_NE(tools::ModelMemo(file), memo);
  EXPECT_EQ(tools::ModelMemo(dir + "/missing.onnx"), "");
  EXPECT_EQ(tools::ModelMemo("builtin:bert"), "builtin:bert");
  std::filesystem::remove_all(dir);
}

TEST(TuneCliTest, ABudgetOfZeroNeverTunesAndBadBudgetsAreUsageErrors) {
  if (!HasSkinnyCore()) GTEST_SKIP() << "no skinny GEMM core on this CPU: nothing to tune";
  const std::string dir = FreshDir("lazy-tuning-off");
  CliResult off = RunBertOnTwoThreads("--cache-dir " + dir + " --tune-budget-s 0");
  ASSERT_EQ(off.exit_code, 0) << off.output;
  nlohmann::json r = nlohmann::json::parse(off.output);
  EXPECT_EQ(r["tuning_file"], "");
  EXPECT_EQ(r["tuned_gemms"], 0);
  EXPECT_FALSE(std::filesystem::exists(dir + "/tuning")) << dir;

  for (const char* budget : {"-1", "x", "3601", "nan"}) {
    CliResult bad = shapeshift::testing::RunCommand(std::string(SHAPESHIFT_CLI) + " run builtin:bert --cache-dir " +
                                                    dir + " --tune-budget-s " + budget + " 2>&1");
    EXPECT_EQ(bad.exit_code, 2) << budget;
    EXPECT_THAT(bad.output, HasSubstr("--tune-budget-s: expected seconds in [0, 3600]")) << budget;
  }
  // A cache dir whose tuning/ cannot be made: nothing is measured (a file
  // that cannot be kept would be measured again on every run), the run goes
  // on with the defaults and a note says why.
  const std::string squatted = FreshDir("lazy-tuning-squatted");
  std::filesystem::create_directories(squatted);
  { std::ofstream(squatted + "/tuning") << "a file where the directory goes"; }
  CliResult blocked = RunBertOnTwoThreads("--cache-dir " + squatted);
  ASSERT_EQ(blocked.exit_code, 0) << blocked.output;
  nlohmann::json b = nlohmann::json::parse(blocked.output);
  EXPECT_TRUE(b["check_passed"].get<bool>());
  EXPECT_EQ(b["tuned_gemms"], 0);
  EXPECT_THAT(b["notes"].dump(), HasSubstr("GEMM tuning: not tuned: "));
  EXPECT_THAT(b["notes"].dump(), HasSubstr("cannot create its directory"));

  CliResult no_cache = shapeshift::testing::RunCommand(std::string(SHAPESHIFT_CLI) +
                                                       " run builtin:bert --no-cache --tune-budget-s 5 2>&1");
  EXPECT_EQ(no_cache.exit_code, 2);
  EXPECT_THAT(no_cache.output, HasSubstr("--tune-budget-s tunes this CPU's GEMMs into the cache dir"));
}

}  // namespace
}  // namespace shapeshift
