// `shapeshift prove` end to end: runs the built CLI and checks exit codes,
// that the printed witness is really uncovered, the covered case, JSON, and
// errors — for guard sets given as text and for models (the artifacts a
// policy compiles, optionally after serving a --warm trace).

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "gtest/gtest.h"
#include "tests/tools/cli_test_util.h"
#include "nlohmann/json.hpp"

namespace {

using shapeshift::testing::CliResult;

// Runs `shapeshift prove ARGS` with stdout captured (stderr to /dev/null or
// captured with 2>&1 when `with_stderr`).
CliResult Prove(const std::string& args, bool with_stderr = false) {
  return shapeshift::testing::RunShapeshift("prove " + args, with_stderr ? "2>&1" : "2>/dev/null");
}

// Parses `uncovered: a=1 b=2`.
std::map<std::string, long> Witness(const std::string& out) {
  std::map<std::string, long> w;
  const std::string prefix = "uncovered: ";
  if (out.rfind(prefix, 0) != 0) return w;
  std::string rest = out.substr(prefix.size());
  size_t pos = 0;
  while (pos < rest.size()) {
    size_t end = rest.find_first_of(" \n", pos);
    if (end == std::string::npos) end = rest.size();
    std::string item = rest.substr(pos, end - pos);
    size_t eq = item.find('=');
    if (eq != std::string::npos) w[item.substr(0, eq)] = std::stol(item.substr(eq + 1));
    pos = end + 1;
  }
  return w;
}

const char* kGuards = "--dim seq=1..512 --guards 'seq<=128' --guards 'seq>128 && seq%16==0'";

TEST(ProveCliTest, FindsARealUncoveredSequenceLength) {
  CliResult r = Prove(kGuards);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  std::map<std::string, long> w = Witness(r.output);
  ASSERT_EQ(w.count("seq"), 1u) << r.output;
  long seq = w["seq"];
  EXPECT_GE(seq, 1);
  EXPECT_LE(seq, 512);
  EXPECT_FALSE(seq <= 128);                     // fails the first guard set
  EXPECT_FALSE(seq > 128 && seq % 16 == 0);     // and the second
}

TEST(ProveCliTest, CoveredOnceTheGapIsClosed) {
  CliResult r = Prove(std::string(kGuards) + " --guards 'seq>128'");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.output, "covered\n");
}

TEST(ProveCliTest, JsonOutput) {
  CliResult r = Prove(std::string(kGuards) + " --json");
  EXPECT_EQ(r.exit_code, 1);
  nlohmann::json j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["covered"], false);
  long seq = j["witness"]["seq"].get<long>();
  EXPECT_TRUE(seq > 128 && seq <= 512 && seq % 16 != 0) << r.output;
  r = Prove(std::string(kGuards) + " --guards 'seq>128' --json");
  EXPECT_EQ(r.exit_code, 0);
  j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["covered"], true);
  EXPECT_TRUE(j["witness"].is_null());
}

TEST(ProveCliTest, MultiSymbolWitnessNamesEverySymbol) {
  CliResult r = Prove(
      "--dim batch=1..8 --dim seq=1..512 --guards 'batch <= 2' --guards 'batch > 2 && seq <= 128'");
  EXPECT_EQ(r.exit_code, 1);
  ASSERT_EQ(r.output.rfind("uncovered: batch=", 0), 0u) << r.output;
  std::map<std::string, long> w = Witness(r.output);
  ASSERT_EQ(w.size(), 2u) << r.output;
  EXPECT_GT(w["batch"], 2);
  EXPECT_LE(w["batch"], 8);
  EXPECT_GT(w["seq"], 128);
  EXPECT_LE(w["seq"], 512);
}

TEST(ProveCliTest, ErrorsExitTwoWithAClearMessage) {
  CliResult r = Prove("--dim seq=1..512 --guards 'seq <= '", /*with_stderr=*/true);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--guards"), std::string::npos) << r.output;
  r = Prove("--dim seq=1..512 --guards 'len <= 4'", true);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("unknown symbol 'len'"), std::string::npos) << r.output;
  r = Prove("--dim seq=1-512 --guards 'seq <= 4'", true);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--dim 'seq=1-512'"), std::string::npos) << r.output;
  r = Prove("--dim seq=9..1 --guards 'seq <= 4'", true);
  EXPECT_EQ(r.exit_code, 2);
  r = Prove("--guards 'seq <= 4'", true);
  EXPECT_EQ(r.exit_code, 2);
  r = Prove("--dim seq=1..4 --guards 'seq <= 4' --bogus", true);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("unknown flag --bogus"), std::string::npos) << r.output;
  r = Prove("", true);
  EXPECT_EQ(r.exit_code, 2);
}

TEST(ProveCliTest, AZeroDivisorIsAnErrorNotAnAnswer) {
  // `seq % 0` has no value; it used to be accepted and answered.
  CliResult r = Prove("--dim seq=1..100 --guards 'seq%0 == 0'", /*with_stderr=*/true);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("division by zero: the divisor of '%' at column 4"), std::string::npos) << r.output;
  r = Prove("--dim seq=1..100 --guards 'seq // 0 <= 3'", true);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("'//' at column 5"), std::string::npos) << r.output;
}

TEST(ProveCliTest, Int64MinIsWritable) {
  CliResult r = Prove("--dim seq=-9223372036854775808..0 --guards 'seq >= -9223372036854775808'");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "covered\n");
  r = Prove("--dim seq=1..4 --guards 'seq >= -9223372036854775809'", true);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("the range is -9223372036854775808..9223372036854775807"), std::string::npos) << r.output;
}

// A trace file for --warm (one request per line).
std::string WarmTrace(const std::string& name, const std::string& lines) {
  std::string path = shapeshift::testing::ProcessTempPath(name);
  std::ofstream(path) << lines;
  return "file:" + path;
}

TEST(ProveModelCliTest, BuiltinModelsAreCoveredOnTheirDeclaredDomains) {
  CliResult r = Prove("builtin:bert --no-cache");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.rfind("covered\n", 0), 0u) << r.output;
  EXPECT_NE(r.output.find("domain batch=1..8 seq=1..512"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("(polymorphic): no guards"), std::string::npos) << r.output;

  r = Prove("builtin:gpt2-kv --json --no-cache");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  nlohmann::json j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["covered"], true);
  EXPECT_TRUE(j["witness"].is_null());
  EXPECT_EQ(j["policy"], "auto");
  EXPECT_EQ(j["domain"]["past"], "0..511");
  EXPECT_EQ(j["compiles"], 1);
  ASSERT_EQ(j["entries"].size(), 1u);
  EXPECT_EQ(j["entries"][0]["tier"], "polymorphic");
}

TEST(ProveModelCliTest, StaticPolicyPrecompilesNothingSoAShapeIsUncovered) {
  CliResult r = Prove("builtin:bert --no-cache --policy static --dim batch=1..2 --dim seq=1..8");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  std::map<std::string, long> w = Witness(r.output);
  ASSERT_EQ(w.size(), 2u) << r.output;
  EXPECT_TRUE(w["batch"] >= 1 && w["batch"] <= 2) << r.output;
  EXPECT_TRUE(w["seq"] >= 1 && w["seq"] <= 8) << r.output;
  EXPECT_NE(r.output.find("no entries: policy static compiles nothing ahead of time"), std::string::npos)
      << r.output;
}

TEST(ProveModelCliTest, AWarmedStaticCacheIsMissingExactlyTheUnservedShape) {
  const std::string domain = "builtin:bert --no-cache --policy static --dim batch=1..1 --dim seq=1..4";
  CliResult r = Prove(domain + " --warm " + WarmTrace("gap.trace", "seq=1\nseq=2\nseq=4\n"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.output.rfind("uncovered: batch=1 seq=3\n", 0), 0u) << r.output;
  EXPECT_NE(r.output.find("(static): seq == 4"), std::string::npos) << r.output;

  r = Prove(domain + " --json --warm " + WarmTrace("full.trace", "seq=1\nseq=2\nseq=3\nseq=4\n"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  nlohmann::json j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["covered"], true);
  EXPECT_EQ(j["entries"].size(), 4u);
}

TEST(ProveModelCliTest, EntriesAnEarlierProcessCachedCount) {
  const std::string cache = shapeshift::testing::ProcessTempPath("prove_cache");
  std::filesystem::remove_all(cache);
  const std::string domain = "builtin:bert --policy static --dim batch=1..1 --dim seq=1..2 --cache-dir " + cache;
  CliResult r = Prove(domain + " --warm " + WarmTrace("one.trace", "seq=1\n"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.output.rfind("uncovered: batch=1 seq=2\n", 0), 0u) << r.output;
  // A second process loads seq == 1 from the cache and warms seq == 2 itself.
  r = Prove(domain + " --json --warm " + WarmTrace("two.trace", "seq=2\n"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  nlohmann::json j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["covered"], true);
  EXPECT_EQ(j["cache_loads"], 1);
  EXPECT_EQ(j["compiles"], 1);
}

TEST(ProveModelCliTest, ErrorsExitTwoWithAClearMessage) {
  struct Case {
    const char* args;
    const char* message;
  };
  for (const Case& c : {Case{"builtin:nope", "unknown built-in model"},
                        Case{"builtin:bert --policy eager", "--policy"},
                        Case{"builtin:bert --dim width=1..4", "no dim 'width'"},
                        Case{"builtin:bert --no-cache --warm decode:3", "no KV-cache dim 'past'"},
                        // Trace errors name the flag given, --warm (not --trace).
                        Case{"builtin:bert --policy static --no-cache --warm bogus", "--warm bogus: missing KIND:"},
                        Case{"builtin:bert --policy static --no-cache --warm file:/nonexistent.trace",
                             "--warm file:/nonexistent.trace: cannot open"},
                        Case{"builtin:bert extra", "exactly one MODEL"},
                        Case{"--dim seq=1..4 --guards 'seq <= 4' --policy static", "need a MODEL"},
                        Case{"--dim seq=1..4 --guards 'seq <= 4' --weights-in-memory", "need a MODEL"},
                        Case{"builtin:bert --weights-in-memory --weights-dir /tmp/w", "are exclusive"},
                        Case{"builtin:bert --no-cache --cache-dir /tmp/x", "exclusive"},
                        Case{"--dim seq=1..4", "usage: shapeshift prove MODEL"}}) {
    CliResult r = Prove(c.args, /*with_stderr=*/true);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.message), std::string::npos) << c.args << "\n" << r.output;
  }
}

}  // namespace
