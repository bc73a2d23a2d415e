// `shapeshift demo`: the main job at a reduced request count — one compile,
// no recompiles, the sampled requests matching the interpreter, and every
// JSON field the issue names; text mode and bad flags. Latency and speed-up
// figures are checked for presence and sanity, never against a time budget.

#include <array>
#include <cstdio>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/tools/cli_test_util.h"
#include "nlohmann/json.hpp"

namespace shapeshift {
namespace {

using ::testing::HasSubstr;

using shapeshift::testing::CliResult;

// `redirect` decides where stderr goes ("2>&1" or "2>/dev/null").
CliResult RunDemo(const std::string& args, const std::string& redirect) {
  return shapeshift::testing::RunShapeshift("demo " + args, redirect);
}

TEST(DemoCliTest, JsonReportsOneCompileAndAnAccurateSample) {
  CliResult r = RunDemo("--json --requests 40 --sample 4 --seed 3", "2>/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  nlohmann::json j = nlohmann::json::parse(r.output);
  for (const char* key : {"requests", "compiles", "recompiles", "kernels", "max_abs_error", "compile_ms", "p50_us",
                          "p99_us", "speedup_vs_interpreter"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["requests"], 40);
  EXPECT_EQ(j["compiles"], 1);
  EXPECT_EQ(j["recompiles"], 0);
  EXPECT_GT(j["kernels"].get<int>(), 0);
  EXPECT_EQ(j["sampled"], 4);
  EXPECT_LE(j["max_abs_error"].get<double>(), 1e-3);
  EXPECT_GT(j["compile_ms"].get<double>(), 0);
  EXPECT_GT(j["p50_us"].get<double>(), 0);
  EXPECT_GE(j["p99_us"].get<double>(), j["p50_us"].get<double>());
  EXPECT_GT(j["speedup_vs_interpreter"].get<double>(), 0);
  EXPECT_GE(j["seq_max"].get<int>(), j["seq_p50"].get<int>());
}

TEST(DemoCliTest, TextModeSummarizesTheRun) {
  CliResult r = RunDemo("--requests 6 --sample 2", "2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("compiled once for batch 1..8 x seq 1..512"));
  EXPECT_THAT(r.output, HasSubstr("1 compile(s), 0 recompile(s)"));
  EXPECT_THAT(r.output, HasSubstr("p50"));
  EXPECT_THAT(r.output, HasSubstr("over the interpreter"));
}

TEST(DemoCliTest, BadFlagsExitTwo) {
  for (const char* args : {"--requests 0", "--sample x", "--bogus", "extra"}) {
    CliResult r = RunDemo(args, "2>&1");
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
  }
}

}  // namespace
}  // namespace shapeshift
