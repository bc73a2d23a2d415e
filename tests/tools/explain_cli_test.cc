// `shapeshift explain` end to end: golden text for the committed sample logs
// in tests/data/explain/ (per-event blocks and --summary), --json re-emits
// the events, malformed or missing logs exit 2 naming the file and line, and
// a log the Dispatcher really wrote renders every miss with its failing pin.
//
// To update a golden file after an intended change of the rendering:
//   shapeshift explain tests/data/explain/X.jsonl [--summary] > tests/data/explain/X[.summary].txt

#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/tools/cli_test_util.h"
#include "nlohmann/json.hpp"
#include "runtime/specialization/dispatcher.h"
#include "tests/runtime/runtime_test_util.h"

namespace {

using shapeshift::testing::CliResult;

const std::string kDataDir = std::string(SHAPESHIFT_SOURCE_DIR) + "/tests/data/explain/";

CliResult Explain(const std::string& args, bool with_stderr = false) {
  return shapeshift::testing::RunShapeshift("explain " + args, with_stderr ? "2>&1" : "2>/dev/null");
}

std::string ReadGolden(const std::string& name) {
  std::ifstream in(kDataDir + name);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

class ExplainGoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ExplainGoldenTest, EventBlocksMatchGolden) {
  const std::string golden = ReadGolden(GetParam() + ".txt");
  ASSERT_FALSE(golden.empty());
  CliResult r = Explain(kDataDir + GetParam() + ".jsonl");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.output, golden);
}

TEST_P(ExplainGoldenTest, SummaryMatchesGolden) {
  const std::string golden = ReadGolden(GetParam() + ".summary.txt");
  ASSERT_FALSE(golden.empty());
  CliResult r = Explain(kDataDir + GetParam() + ".jsonl --summary");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.output, golden);
}

INSTANTIATE_TEST_SUITE_P(SampleLogs, ExplainGoldenTest, ::testing::Values("static_misses", "tiers"));

TEST(ExplainCliTest, MissBlockNamesFailingAtomAndProvenance) {
  CliResult r = Explain(kDataDir + "tiers.jsonl");
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find("failed: seq <= 256    [asked by memory-plan at node 'attn/softmax_out': "
                       "reuse a dead buffer's slot]"),
            std::string::npos)
      << r.output;
}

TEST(ExplainCliTest, JsonIsAnArrayOfTheEvents) {
  CliResult r = Explain(kDataDir + "static_misses.jsonl --json");
  ASSERT_EQ(r.exit_code, 0);
  nlohmann::json j = nlohmann::json::parse(r.output, nullptr, false);
  ASSERT_TRUE(j.is_array()) << r.output;
  ASSERT_EQ(j.size(), 3u);
  EXPECT_EQ(j[0]["trigger"], "initial");
  EXPECT_EQ(j[1]["trigger"], "miss");
  EXPECT_EQ(j[1]["unsat_core"][0]["atom"], "seq == 5");
  EXPECT_EQ(j[1]["unsat_core"][0]["pass"], "dispatcher");
  EXPECT_EQ(j[2]["new_entry"]["id"], 3);
}

TEST(ExplainCliTest, MalformedLineExitsTwoNamingFileAndLine) {
  CliResult r = Explain(kDataDir + "malformed.jsonl", /*with_stderr=*/true);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("malformed.jsonl:2:"), std::string::npos) << r.output;
}

TEST(ExplainCliTest, MissingLogAndBadUsageExitTwo) {
  CliResult missing = Explain(kDataDir + "no_such_log.jsonl", /*with_stderr=*/true);
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.output.find("no_such_log.jsonl"), std::string::npos) << missing.output;
  EXPECT_EQ(Explain("").exit_code, 2);
  EXPECT_EQ(Explain(kDataDir + "tiers.jsonl --summary --json").exit_code, 2);
  EXPECT_EQ(Explain(kDataDir + "tiers.jsonl --verbose").exit_code, 2);
}

TEST(ExplainCliTest, RendersALogTheDispatcherWrote) {
  using namespace shapeshift::runtime;
  namespace helpers = shapeshift::runtime::testing;
  const std::string path = ::testing::TempDir() + "/explain_dispatcher_log.jsonl";
  std::remove(path.c_str());
  {
    absl::StatusOr<std::unique_ptr<RecompileLogWriter>> log = RecompileLogWriter::Open(path);
    ASSERT_TRUE(log.ok()) << log.status();
    helpers::BuiltModel model = helpers::AddRelu();
    DispatcherOptions options;
    options.policy = SpecializationPolicy::kStatic;
    options.log = log->get();
    absl::StatusOr<std::unique_ptr<Dispatcher>> d =
        Dispatcher::Create(std::move(model.graph), std::move(model.env), options);
    ASSERT_TRUE(d.ok()) << d.status();
    for (int64_t seq : {3, 4, 5}) {
      std::vector<shapeshift::Tensor> in = {helpers::RandomF32({1, seq, 8}, 1), helpers::RandomF32({1, seq, 8}, 2)};
      std::vector<TensorView> views = {TensorView::Of(in[0]), TensorView::Of(in[1])};
      ASSERT_TRUE((*d)->Acquire(views).ok());
    }
  }
  CliResult r = Explain(path);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string pin = "    [asked by dispatcher: static tier pins seq]";
  EXPECT_NE(r.output.find("event 1: initial (policy static)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("event 3: miss (policy static)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("  input: batch=1 seq=5\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(absl::StrCat("    failed: seq == 4", pin)), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(absl::StrCat("    failed: seq == 3", pin)), std::string::npos) << r.output;
  CliResult summary = Explain(path + " --summary");
  ASSERT_EQ(summary.exit_code, 0);
  EXPECT_EQ(summary.output.rfind("3 events: 1 initial, 2 miss, 0 tier-up;", 0), 0u) << summary.output;
  EXPECT_NE(summary.output.find("  2  dispatcher: static tier pins seq\n"), std::string::npos) << summary.output;
  std::remove(path.c_str());
}

}  // namespace
