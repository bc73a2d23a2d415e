// `shapeshift run --trace`: trace replays with exact compile counts per
// policy (static over 20 distinct lengths → 20 compiles, 19 misses, each
// explained by a failing atom on seq with provenance; polymorphic → 1;
// gpt2-kv decoding → 1 compile before the first result, 0 misses, 0 wrong
// results), the JSON contract, and errors that name the trace, file and line.
#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/tools/cli_test_util.h"

namespace shapeshift {
namespace {

using shapeshift::testing::CliResult;
using shapeshift::testing::RunShapeshift;
using ::testing::HasSubstr;

std::string TempPath(const std::string& name) {
  return shapeshift::testing::ProcessTempPath(name);
}

std::string WriteFile(const std::string& name, const std::string& text) {
  std::string path = TempPath(name);
  std::ofstream(path) << text;
  return path;
}

// `seq=1` .. `seq=20`, one per line, then the first five again (hits).
std::string TwentyLengthsTrace() {
  std::string text = "# twenty distinct lengths, then five repeats\n";
  for (int seq = 1; seq <= 20; ++seq) text += "seq=" + std::to_string(seq) + "\n";
  for (int seq = 1; seq <= 5; ++seq) text += "batch=1 seq=" + std::to_string(seq) + "  # again\n";
  return WriteFile("twenty_lengths.trace", text);
}

// `shapeshift run ARGS --json`, with --no-cache unless ARGS name a cache dir
// (compile counts must not depend on an earlier run's persistent cache).
nlohmann::json RunJson(const std::string& args, int expected_exit = 0) {
  const bool cached = args.find("--cache-dir") != std::string::npos;
  CliResult r = RunShapeshift("run " + args + " --json" + (cached ? "" : " --no-cache"), "2>&1");
  EXPECT_EQ(r.exit_code, expected_exit) << args << "\n" << r.output;
  nlohmann::json j = nlohmann::json::parse(r.output, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(j.is_discarded()) << r.output;
  return j;
}

TEST(TraceCliTest, StaticPolicyCompilesOncePerDistinctLengthAndExplainNamesSeq) {
  const std::string trace = TwentyLengthsTrace();
  const std::string log = TempPath("static_twenty.jsonl");
  std::filesystem::remove(log);
  nlohmann::json j = RunJson("builtin:bert --policy static --trace file:" + trace + " --recompile-log " + log);
  EXPECT_EQ(j["requests"], 25);
  EXPECT_EQ(j["distinct_shapes"], 20);
  EXPECT_EQ(j["compiles"], 20);
  EXPECT_EQ(j["misses"], 19);
  EXPECT_EQ(j["compiles_by_tier"]["static"], 20);
  EXPECT_EQ(j["compiles_by_trigger"]["initial"], 1);
  EXPECT_EQ(j["compiles_by_trigger"]["miss"], 19);
  EXPECT_EQ(j["errors"], 0);
  EXPECT_EQ(j["wrong_results"], 0);
  EXPECT_GE(j["checked"].get<int>(), 20);  // each entry's first request at least

  CliResult explained = RunShapeshift("explain " + log + " --json", "2>&1");
  ASSERT_EQ(explained.exit_code, 0) << explained.output;
  nlohmann::json events = nlohmann::json::parse(explained.output);
  ASSERT_EQ(events.size(), 20u);
  int misses = 0;
  for (const nlohmann::json& event : events) {
    if (event["trigger"] != "miss") continue;
    ++misses;
    ASSERT_FALSE(event["tried"].empty()) << event.dump();
    for (const nlohmann::json& tried : event["tried"]) {
      bool seq_atom_failed = false;
      for (const nlohmann::json& atom : tried["failing"]) {
        if (atom["atom"].get<std::string>().rfind("seq == ", 0) != 0) continue;
        seq_atom_failed = true;
        EXPECT_EQ(atom["pass"], "dispatcher") << atom.dump();
        EXPECT_THAT(atom["reason"].get<std::string>(), HasSubstr("seq")) << atom.dump();
      }
      EXPECT_TRUE(seq_atom_failed) << "entry " << tried["entry"] << " in " << event.dump();
    }
  }
  EXPECT_EQ(misses, 19);

  CliResult text = RunShapeshift("explain " + log, "2>&1");
  ASSERT_EQ(text.exit_code, 0) << text.output;
  EXPECT_THAT(text.output, HasSubstr("event 20: miss (policy static)"));
  EXPECT_THAT(text.output, HasSubstr("input: batch=1 seq=20"));
  EXPECT_THAT(text.output, HasSubstr("failed: seq == 19    [asked by dispatcher"));
}

TEST(TraceCliTest, PolymorphicPolicyCompilesOnceForTheSameTrace) {
  nlohmann::json j = RunJson("builtin:bert --policy polymorphic --trace file:" + TwentyLengthsTrace());
  EXPECT_EQ(j["requests"], 25);
  EXPECT_EQ(j["compiles"], 1);
  EXPECT_EQ(j["compiles_by_tier"]["polymorphic"], 1);
  EXPECT_EQ(j["misses"], 0);
  EXPECT_EQ(j["compiles_before_first_result"], 1);
  EXPECT_EQ(j["wrong_results"], 0);
  EXPECT_GE(j["checked"].get<int>(), 1);
}

TEST(TraceCliTest, KvCacheDecodingCompilesOnceBeforeTheFirstResult) {
  nlohmann::json j = RunJson("builtin:gpt2-kv --trace decode:64 --check-every 16");
  EXPECT_EQ(j["policy"], "auto");
  EXPECT_EQ(j["requests"], 64);
  EXPECT_EQ(j["distinct_shapes"], 64);  // past = 0, 1, ..., 63
  EXPECT_EQ(j["compiles_before_first_result"], 1);
  EXPECT_EQ(j["misses"], 0);
  EXPECT_EQ(j["wrong_results"], 0);
  EXPECT_GE(j["checked"].get<int>(), 4);  // requests 0, 16, 32, 48
  EXPECT_EQ(j["buckets_with_traffic"], 8);  // past 0, 1, 2, 3..4, 5..8, 9..16, 17..32, 33..64
  EXPECT_LE(j["tier_ups"].get<int>(), j["buckets_with_traffic"].get<int>());
  for (const char* key : {"p50_us", "p99_us", "first_result_us", "first_request_us"}) {
    ASSERT_TRUE(j.contains(key)) << key;
    EXPECT_GT(j[key].get<double>(), 0) << key;
  }
  EXPECT_GE(j["first_result_us"].get<double>(), j["first_request_us"].get<double>());
}

TEST(TraceCliTest, DecodeTraceOnATorchExportedKvCacheModel) {
  // torch's exporter names the dims sequence and past_sequence.
  const std::string model = std::string(SHAPESHIFT_SOURCE_DIR) + "/tests/data/models/gpt2-past-torchscript/model.onnx";
  nlohmann::json j = RunJson(model +
                             " --dim batch=1..2 --dim sequence=1..8 --dim past_sequence=1..16 --trace decode:16"
                             " --check-every 8");
  EXPECT_EQ(j["requests"], 16);
  EXPECT_EQ(j["distinct_shapes"], 16);  // past_sequence = 1, ..., 16
  EXPECT_EQ(j["compiles_before_first_result"], 1);
  EXPECT_EQ(j["misses"], 0);
  EXPECT_EQ(j["wrong_results"], 0);
  EXPECT_GE(j["checked"].get<int>(), 2);  // requests 0 and 8
}

TEST(TraceCliTest, FileTracesAcceptTheDimAliasesGeneratedTracesDo) {
  // A torch export names the dims batch and sequence; lognormal finds `seq`
  // as `sequence`, and so does a trace file now (it used to refuse `seq`).
  const std::string model = std::string(SHAPESHIFT_SOURCE_DIR) + "/tests/data/models/tiny_bert_opset14.onnx";
  const std::string trace = WriteFile("aliases.trace", "seq=5\nbatch_size=2 seq=3\nsequence=7\n");
  nlohmann::json j = RunJson(model + " --dim batch=1..2 --dim sequence=1..8 --trace file:" + trace +
                             " --policy polymorphic --check-every 1");
  EXPECT_EQ(j["requests"], 3);
  EXPECT_EQ(j["served"], 3);
  EXPECT_EQ(j["distinct_shapes"], 3);
  EXPECT_EQ(j["wrong_results"], 0);
  // An alias and its name together are one dim given twice.
  const std::string twice = WriteFile("alias_twice.trace", "seq=5 sequence=5\n");
  CliResult r = RunShapeshift("run " + model + " --dim sequence=1..8 --no-cache --trace file:" + twice, "2>&1");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr(twice + ":1: sequence is given twice"));
  const std::string outside = WriteFile("alias_outside.trace", "seq=9\n");
  r = RunShapeshift("run " + model + " --dim sequence=1..8 --no-cache --trace file:" + outside, "2>&1");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("seq (the model's sequence) = 9 is outside the declared range 1..8"));
}

TEST(TraceCliTest, LogNormalTraceIsDeterministicAndServedWithoutMisses) {
  nlohmann::json a = RunJson("builtin:bert --trace lognormal:60:7 --check-every 30");
  EXPECT_EQ(a["requests"], 60);
  EXPECT_EQ(a["misses"], 0);
  EXPECT_EQ(a["compiles_before_first_result"], 1);
  EXPECT_EQ(a["wrong_results"], 0);
  EXPECT_GT(a["distinct_shapes"].get<int>(), 10);  // lengths vary
  EXPECT_LT(a["distinct_shapes"].get<int>(), 60);   // and repeat (median ~24 tokens)
  for (const char* key : {"requests", "compiles", "compiles_by_tier", "misses", "tier_ups", "wrong_results", "checked",
                          "p50_us", "p99_us", "first_result_us", "compiles_before_first_result",
                          // the peer benchmarks' schema (bench/peers/shapeshift_bench.py)
                          "engine_s", "requests_s", "time_to_first_result_s", "recompiles", "per_request"}) {
    EXPECT_TRUE(a.contains(key)) << key;
  }
  // The engine time is loading the model, session creation and the runs;
  // requests_s the runs; the first result counts from the command's start.
  EXPECT_GT(a["requests_s"].get<double>(), 0);
  EXPECT_GT(a["load_ms"].get<double>(), 0);
  EXPECT_GT(a["create_ms"].get<double>(), 0);
  EXPECT_NEAR(a["engine_s"].get<double>(),
              (a["load_ms"].get<double>() + a["create_ms"].get<double>()) / 1e3 + a["requests_s"].get<double>(), 1e-6);
  EXPECT_GE(a["first_result_us"].get<double>(),
            (a["load_ms"].get<double>() + a["create_ms"].get<double>()) * 1e3 + a["first_request_us"].get<double>() - 1);
  EXPECT_NEAR(a["requests_s"].get<double>(), a["mean_us"].get<double>() * 60 / 1e6, 1e-9);
  EXPECT_EQ(a["recompiles"], 0);
  EXPECT_GE(a["per_request"]["max_ms"].get<double>(), a["per_request"]["p99_ms"].get<double>());
  // --check-every 0 checks nothing; the same seed gives the same shapes.
  nlohmann::json b = RunJson("builtin:bert --trace lognormal:60:7 --check-every 0");
  EXPECT_EQ(b["distinct_shapes"], a["distinct_shapes"]);
  EXPECT_EQ(b["checked"], 0);
}

TEST(TraceCliTest, BucketedPolicyServesOneBucketWithOneCompile) {
  std::string trace = WriteFile("one_bucket.trace", "seq=5\nseq=6\nseq=7\nseq=8\nseq=6\n");
  nlohmann::json j = RunJson("builtin:bert --policy bucketed --trace file:" + trace);
  EXPECT_EQ(j["distinct_shapes"], 4);
  EXPECT_EQ(j["buckets_with_traffic"], 1);
  EXPECT_EQ(j["compiles"], 1);  // 5..8 is one power-of-two bucket
  EXPECT_EQ(j["compiles_by_tier"]["bucketed"], 1);
  EXPECT_EQ(j["misses"], 0);
  EXPECT_EQ(j["wrong_results"], 0);
}

TEST(TraceCliTest, TextOutputSummarizesTheReplay) {
  std::string trace = WriteFile("text.trace", "seq=4\nseq=9\n");
  CliResult r = RunShapeshift("run builtin:bert --no-cache --trace file:" + trace, "2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("model: builtin:bert (policy auto)"));
  EXPECT_THAT(r.output, HasSubstr("2 request(s), 2 distinct shape(s) in 2 power-of-two bucket(s), 2 served, 0 refused"));
  EXPECT_THAT(r.output, HasSubstr("misses: 0"));
  EXPECT_THAT(r.output, HasSubstr("0 wrong"));
}

TEST(TraceCliTest, RefusedRequestsAtTheRecompileLimitExitOne) {
  std::string trace = WriteFile("limit.trace", "seq=2\nseq=3\nseq=4\n");
  nlohmann::json j = RunJson("builtin:bert --policy static --recompile-limit 1 --trace file:" + trace, 1);
  EXPECT_EQ(j["compiles"], 2);  // the initial compile and one miss
  EXPECT_EQ(j["served"], 2);
  EXPECT_EQ(j["errors"], 1);
  EXPECT_THAT(j["first_error"].get<std::string>(), HasSubstr("request 2 (batch=1 seq=4)"));
  EXPECT_THAT(j["first_error"].get<std::string>(), HasSubstr("recompile limit"));
}

TEST(TraceCliTest, ASecondProcessWithTheSameCacheDirCompilesNothing) {
  const std::string cache = TempPath("trace_cache");
  std::filesystem::remove_all(cache);
  const std::string trace = WriteFile("cached.trace", "seq=3\nseq=9\nseq=3\n");
  for (const char* policy : {"auto", "static"}) {
    const std::string args = std::string("builtin:bert --policy ") + policy + " --cache-dir " + cache +
                             "/" + policy + " --trace file:" + trace;
    const int expected = std::string(policy) == "static" ? 2 : 1;  // static: one per distinct shape
    nlohmann::json first = RunJson(args);
    EXPECT_EQ(first["compiles"], expected) << policy;
    EXPECT_EQ(first["cache_loads"], 0) << policy;
    nlohmann::json second = RunJson(args);
    EXPECT_EQ(second["compiles"], 0) << policy;
    EXPECT_EQ(second["cache_loads"], expected) << policy;
    EXPECT_EQ(second["misses"], 0) << policy;
    EXPECT_EQ(second["compiles_before_first_result"], 0) << policy;
    EXPECT_EQ(second["wrong_results"], 0) << policy;
    EXPECT_GE(second["checked"].get<int>(), 1) << policy;
  }
}

TEST(TraceCliTest, BadTracesExitTwoNamingTheCulprit) {
  const std::string unknown = WriteFile("unknown.trace", "seq=3\n\n# fine\nwidth=4\n");
  const std::string outside = WriteFile("outside.trace", "seq=3\nbatch=1 seq=600\n");
  const std::string twice = WriteFile("twice.trace", "seq=3 seq=4\n");
  const std::string garbled = WriteFile("garbled.trace", "seq=3\nseq:4\n");
  const std::string empty = WriteFile("empty.trace", "# nothing\n");
  struct Case {
    std::string args;
    std::string message;
  };
  for (const Case& c : {Case{"builtin:bert --trace decode:4", "no KV-cache dim 'past'"},
                        Case{"builtin:gpt2-kv --dim past=0..15 --trace decode:17", "beyond its declared range 0..15"},
                        Case{"builtin:bert --trace lognormal:0", "N must be an integer"},
                        Case{"builtin:bert --trace lognormal:5:x", "SEED"},
                        Case{"builtin:bert --trace zipf:5", "unknown kind 'zipf'"},
                        Case{"builtin:bert --trace 5", "missing KIND:"},
                        Case{"builtin:bert --trace file:/nonexistent.trace", "/nonexistent.trace"},
                        Case{"builtin:bert --trace file:" + ::testing::TempDir(), "is a directory"},
                        Case{"builtin:bert --trace file:" + unknown, unknown + ":4: the model has no dim 'width'"},
                        Case{"builtin:bert --trace file:" + outside, outside + ":2: seq = 600 is outside"},
                        Case{"builtin:bert --trace file:" + twice, twice + ":1: seq is given twice"},
                        Case{"builtin:bert --trace file:" + garbled, garbled + ":2: 'seq:4' is not NAME=VALUE"},
                        Case{"builtin:bert --trace file:" + empty, "has no requests"},
                        Case{"builtin:bert --trace lognormal:5 --input input_ids=1x4", "--input is for one request"},
                        Case{"builtin:bert --trace lognormal:5 --check", "--check-every"},
                        Case{"builtin:bert --check-every 5", "--check-every needs --trace"},
                        Case{"builtin:bert --policy eager", "--policy"},
                        Case{"builtin:bert --recompile-limit -1", "--recompile-limit"},
                        Case{"builtin:bert --recompile-log /nonexistent/dir/log.jsonl", "/nonexistent/dir/log.jsonl"}}) {
    CliResult r = RunShapeshift("run " + c.args + " --no-cache", "2>&1");
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.output;
    EXPECT_THAT(r.output, HasSubstr(c.message)) << c.args;
  }
}

}  // namespace
}  // namespace shapeshift
