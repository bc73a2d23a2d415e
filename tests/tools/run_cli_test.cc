// `shapeshift run`: built-in and ONNX models compiled once and run on one
// request shape, checked against the interpreter (--check), the JSON
// contract bench/peers relies on, --policy / --recompile-log / --metrics,
// and exit code 2 with a message naming the culprit for every kind of bad
// argument. Trace replays: trace_cli_test.cc.

#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/host_long_rows.h"
#include "examples/models/bert.h"
#include "graph/onnx/exporter.h"
#include "tests/tools/cli_test_util.h"
#include "nlohmann/json.hpp"

namespace shapeshift {
namespace {

using ::testing::HasSubstr;

struct RunResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

// Runs `shapeshift run ARGS --no-cache` (compile counts must not depend on
// what an earlier run left in a persistent cache).
RunResult RunCli(const std::string& args) {
  const std::string err_path = shapeshift::testing::ProcessTempPath("run_cli_stderr.txt");
  shapeshift::testing::CliResult r =
      shapeshift::testing::RunShapeshift("run " + args + " --no-cache", "2>" + err_path);
  RunResult result{r.exit_code, std::move(r.output), ""};
  std::ifstream err(err_path);
  result.err.assign(std::istreambuf_iterator<char>(err), std::istreambuf_iterator<char>());
  return result;
}

TEST(RunCliTest, BuiltinBertJsonMatchesTheInterpreter) {
  RunResult r = RunCli("builtin:bert --input input_ids=2x9 --check --json --repeats 2");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["model"], "builtin:bert");
  EXPECT_EQ(j["dims"]["batch"], 2);
  EXPECT_EQ(j["dims"]["seq"], 9);
  EXPECT_EQ(j["compiles"], 1);
  EXPECT_EQ(j["recompiles"], 0);
  EXPECT_GT(j["kernels"].get<int>(), 0);
  EXPECT_EQ(j["repeats"], 2);
  for (const char* key : {"median_ms", "p99_ms", "first_run_ms", "compile_ms", "compile_s", "peak_rss_mb"}) {
    ASSERT_TRUE(j.contains(key)) << key;
    EXPECT_GT(j[key].get<double>(), 0) << key;
  }
  ASSERT_EQ(j["outputs"].size(), 1u);
  EXPECT_EQ(j["outputs"][0]["name"], "last_hidden_state");
  EXPECT_EQ(j["outputs"][0]["shape"], nlohmann::json({2, 9, 256}));
  EXPECT_TRUE(j["check_passed"].get<bool>());
  EXPECT_LE(j["max_abs_error"].get<double>(), 1e-3);
}

TEST(RunCliTest, KvCacheModelTakesPastFromBindAndPrintsText) {
  RunResult r = RunCli("builtin:gpt2-kv --bind past=5 --input input_ids=1x1 --check --repeats 1");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("request dims: batch=1 seq=1 past=5"));
  EXPECT_THAT(r.out, HasSubstr("output logits: f32[1,1,8192]"));
  EXPECT_THAT(r.out, HasSubstr("output present_key_0: f32[1,4,6,64]"));
  EXPECT_THAT(r.out, HasSubstr("(ok)"));
}

TEST(RunCliTest, ExporterMadeOnnxFileWithDimFlags) {
  std::string model = std::string(SHAPESHIFT_SOURCE_DIR) + "/tests/data/models/tiny_bert_opset17.onnx";
  RunResult r = RunCli(model + " --dim batch=1..4 --dim sequence=1..64 --input input_ids=3x17 --check --json");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["dims"]["sequence"], 17);
  EXPECT_EQ(j["outputs"][0]["shape"], nlohmann::json({3, 17, 64}));
  EXPECT_TRUE(j["check_passed"].get<bool>());
}

TEST(RunCliTest, StaticPolicyCompilesTheRequestShapeAndLogsIt) {
  const std::string log = shapeshift::testing::ProcessTempPath("run_static.jsonl");
  std::filesystem::remove(log);
  RunResult r = RunCli("builtin:bert --policy static --input input_ids=1x7 --check --json --repeats 2 --recompile-log " +
                       log);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["policy"], "static");
  EXPECT_EQ(j["entry_tier"], "static");
  EXPECT_EQ(j["compiles"], 1);  // the repeats hit the entry the first run compiled
  EXPECT_EQ(j["recompiles"], 0);
  EXPECT_TRUE(j["check_passed"].get<bool>());
  std::ifstream file(log);
  std::string line;
  int events = 0;
  while (std::getline(file, line)) {
    if (line.empty()) continue;
    ++events;
    EXPECT_EQ(nlohmann::json::parse(line)["trigger"], "initial") << line;
  }
  EXPECT_EQ(events, 1);
}

TEST(RunCliTest, MetricsAsJsonTextAndPrometheus) {
  RunResult r = RunCli("builtin:bert --repeats 2 --metrics --json");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.contains("metrics")) << r.out;
  EXPECT_EQ(j["metrics"]["requests"], 3);  // the first run and 2 repeats
  EXPECT_EQ(j["metrics"]["compiles"], 1);
  EXPECT_EQ(j["metrics"]["compiles_polymorphic"], 1);
  EXPECT_EQ(j["metrics"]["misses"], 0);
  EXPECT_DOUBLE_EQ(j["metrics"]["hit_rate"].get<double>(), 1.0);

  r = RunCli("builtin:bert --repeats 1 --metrics");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("\nmetrics:\nrequests 2\n"));

  r = RunCli("builtin:bert --repeats 1 --metrics-format prometheus");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("# TYPE shapeshift_requests_total counter\nshapeshift_requests_total 2\n"));
  EXPECT_THAT(r.out, HasSubstr("shapeshift_compiles_total{tier=\"polymorphic\"} 1\n"));
}

// `--profile`: the repeats' time per step label; the rows' calls per
// request are the program's steps, their time within the request's.
TEST(RunCliTest, ProfileSaysWhereTheRepeatsTimeGoes) {
  RunResult r = RunCli("builtin:bert --input input_ids=1x9 --repeats 3 --profile --json");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  const nlohmann::json& p = j["step_profile"];
  EXPECT_EQ(p["requests"], 3);  // the repeats, not the first run
  double kernel_calls = 0, attention_calls = 0, matmul_calls = 0, rows_ms = 0;
  for (const nlohmann::json& row : p["rows"]) {
    rows_ms += row["ms"].get<double>();
    EXPECT_GE(row["share"].get<double>(), 0.0);
    EXPECT_LE(row["share"].get<double>(), 1.0);
    if (row["kind"] == "kernel") kernel_calls += row["calls"].get<double>();
    if (row["kind"] == "attention") attention_calls += row["calls"].get<double>();
    if (row["kind"] == "matmul") {
      matmul_calls += row["calls"].get<double>();
      EXPECT_THAT(row["label"].get<std::string>(), ::testing::StartsWith("matmul["));
      EXPECT_THAT(row["label"].get<std::string>(), HasSubstr(" on "));
    }
  }
  EXPECT_EQ(attention_calls, j["fused_attentions"].get<double>());
  EXPECT_GT(kernel_calls, 0);
  EXPECT_GT(matmul_calls, 0);
  EXPECT_NEAR(rows_ms, p["steps_ms"].get<double>(), 1e-6);
  EXPECT_LE(p["steps_ms"].get<double>(), p["request_ms"].get<double>());

  RunResult text = RunCli("builtin:bert --input input_ids=1x9 --repeats 2 --profile");
  ASSERT_EQ(text.exit_code, 0) << text.out << text.err;
  EXPECT_THAT(text.out, HasSubstr("step profile: 2 request(s)"));
  EXPECT_THAT(text.out, HasSubstr(" attention "));
}

TEST(RunCliTest, BadArgumentsExitTwoNamingTheCulprit) {
  struct Case {
    const char* args;
    const char* message;
  };
  for (const Case& c : {Case{"", "exactly one MODEL"},
                        Case{"builtin:nope", "builtin:bert, builtin:gpt2, builtin:gpt2-kv"},
                        Case{"builtin:bert --dim width=1..4", "no dim 'width'"},
                        Case{"builtin:bert --dim seq=9..3", "lo <= hi"},
                        Case{"builtin:bert --input input_ids=1x600", "seq = 600 is outside the declared range 1..512"},
                        Case{"builtin:bert --input input_ids=1xq", "not a shape"},
                        Case{"builtin:bert --input tokens=1x4", "no input 'tokens'"},
                        Case{"builtin:bert --input input_ids=1x4x2", "rank 2"},
                        Case{"builtin:bert --input input_ids=1x4 --input attention_mask=1x5", "sets seq = 5"},
                        Case{"builtin:gpt2 --bind past=3", "no dim 'past'"},
                        Case{"builtin:bert --print-after=no-such-pass", "no such pass"},
                        Case{"builtin:bert --repeats 0", "--repeats"},
                        Case{"builtin:bert --metrics-format xml", "--metrics-format xml: expected text or prometheus"},
                        Case{"builtin:bert --policy sometimes", "--policy"},
                        Case{"builtin:bert --cache-dir /tmp/x", "--cache-dir and --no-cache are exclusive"},
                        Case{"builtin:bert --bogus", "bogus"},
                        Case{"builtin:bert --weights-dir /tmp/w --weights-in-memory", "are exclusive"},
                        Case{"builtin:bert --weights-dir=", "--weights-dir: empty path"},
                        Case{"builtin:bert --trace decode:4 --profile", "--profile is for one request shape"},
                        Case{"builtin:bert --profile --device cuda", "--profile times the steps of CPU programs"},
                        Case{"/nonexistent/model.onnx", "/nonexistent/model.onnx"}}) {
    RunResult r = RunCli(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.out << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.message)) << c.args;
  }
}

// Under the build tree (a disk; /tmp may be tmpfs).
std::string WeightsDir(const std::string& name) {
  std::filesystem::path dir = std::filesystem::current_path() / (std::to_string(getpid()) + "_" + name);
  std::filesystem::remove_all(dir);
  return dir.string();
}

TEST(RunCliTest, WeightsOnDiskAreReportedGivenBackAndAgreeWithTheInterpreter) {
  // An ONNX file (the importer's path: weights straight to the file) and a
  // built model (the session's path); builtin:bert's 8 MiB embedding and
  // 1 MiB FFN matrices are over the spill threshold.
  const std::string onnx = shapeshift::testing::ProcessTempPath("weights_bert.onnx");
  {
    absl::StatusOr<ImportedModel> bert = examples::BuildBert(examples::BertConfig{});
    ASSERT_TRUE(bert.ok()) << bert.status();
    ASSERT_TRUE(ExportOnnxFile(*bert->graph, *bert->env, onnx).ok());
  }
  for (const std::string& model : {std::string("builtin:bert"), onnx}) {
    const std::string dir = WeightsDir("weights_dir");
    RunResult r = RunCli(model + " --input input_ids=2x40 --input attention_mask=2x40 --weights-dir " + dir +
                         " --check --json --repeats 1");
    ASSERT_EQ(r.exit_code, 0) << model << "\n" << r.out << r.err;
    nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_TRUE(j["check_passed"].get<bool>()) << model;
    EXPECT_EQ(j["weights"]["dir"], dir) << model;
    EXPECT_GE(j["weights"]["spilled_constants"].get<int64_t>(), 5) << model;  // 4 layers x 2 FFN + the embedding
    EXPECT_GE(j["weights"]["spilled_bytes"].get<int64_t>(), int64_t{16} << 20) << model;
    // Given back: long rows read the packed copy too (host_long_rows.h).
    if (shapeshift::testing::HostGivesPlainWeightsBack()) {
      EXPECT_GE(j["weights"]["released_bytes"].get<int64_t>(), int64_t{8} << 20) << model;
    } else {
      EXPECT_EQ(j["weights"]["released_bytes"].get<int64_t>(), 0) << model;
    }
    for (const auto& g : j["short_request_gemms"]) {
      EXPECT_EQ(g["long_engine"], shapeshift::testing::HostLongEngineOnPanelsRequest()) << model;
    }
    EXPECT_TRUE(std::filesystem::is_empty(dir)) << "the spill file is unlinked";
    std::filesystem::remove_all(dir);

    RunResult plain = RunCli(model + " --input input_ids=2x40 --input attention_mask=2x40 --weights-in-memory --json --repeats 1");
    ASSERT_EQ(plain.exit_code, 0) << plain.err;
    nlohmann::json p = nlohmann::json::parse(plain.out);
    EXPECT_EQ(p["weights"]["dir"], "");
    EXPECT_EQ(p["weights"]["spilled_constants"], 0);
    EXPECT_EQ(p["weights"]["released_bytes"], 0);
  }
  // A directory that cannot take the file: the weights stay in memory, the
  // run succeeds and a note says why.
  const std::string file = WeightsDir("weights_not_a_dir");
  std::ofstream(file) << "x";
  RunResult r = RunCli("builtin:bert --input input_ids=1x8 --weights-dir " + file + " --json --repeats 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["weights"]["dir"], "");
  ASSERT_FALSE(j["notes"].empty());
  EXPECT_THAT(j["notes"].back().get<std::string>(), HasSubstr("kept in memory"));
  std::filesystem::remove(file);
  std::filesystem::remove(onnx);
}

TEST(RunCliTest, ADimTheModelDerivesIsRefusedNamingTheRelation) {
  // GPT-2 with past: the metadata records total_sequence = past_sequence +
  // sequence. A range for it used to make it a free dim, and requests then
  // failed deep in lowering with an unrelated error.
  const std::string model = std::string(SHAPESHIFT_SOURCE_DIR) + "/tests/data/models/gpt2-past-torchscript/model.onnx";
  RunResult r = RunCli(model + " --dim total_sequence=1..64 --bind past_sequence=4");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("--dim total_sequence=1..64: the model derives total_sequence = past_sequence + "
                               "sequence (its metadata shapeshift.dim.total_sequence)"));
  EXPECT_THAT(r.err, HasSubstr("declare past_sequence and sequence instead"));
  EXPECT_THAT(r.out, ::testing::IsEmpty());
}

}  // namespace
}  // namespace shapeshift
