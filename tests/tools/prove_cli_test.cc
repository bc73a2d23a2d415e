// `shapeshift prove` end to end: runs the built CLI and checks exit codes,
// that the printed witness is really uncovered, the covered case, JSON, and
// errors.
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <map>
#include <string>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace {

struct CliResult {
  int exit_code = -1;
  std::string out;
};

// Runs `shapeshift prove ARGS` with stdout captured (stderr to /dev/null or
// captured with 2>&1 when `with_stderr`).
CliResult Prove(const std::string& args, bool with_stderr = false) {
  std::string cmd = std::string(SHAPESHIFT_CLI) + " prove " + args + (with_stderr ? " 2>&1" : " 2>/dev/null");
  CliResult r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.out.append(buf.data(), n);
  int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
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
  EXPECT_EQ(r.exit_code, 1) << r.out;
  std::map<std::string, long> w = Witness(r.out);
  ASSERT_EQ(w.count("seq"), 1u) << r.out;
  long seq = w["seq"];
  EXPECT_GE(seq, 1);
  EXPECT_LE(seq, 512);
  EXPECT_FALSE(seq <= 128);                     // fails the first guard set
  EXPECT_FALSE(seq > 128 && seq % 16 == 0);     // and the second
}

TEST(ProveCliTest, CoveredOnceTheGapIsClosed) {
  CliResult r = Prove(std::string(kGuards) + " --guards 'seq>128'");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "covered\n");
}

TEST(ProveCliTest, JsonOutput) {
  CliResult r = Prove(std::string(kGuards) + " --json");
  EXPECT_EQ(r.exit_code, 1);
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["covered"], false);
  long seq = j["witness"]["seq"].get<long>();
  EXPECT_TRUE(seq > 128 && seq <= 512 && seq % 16 != 0) << r.out;
  r = Prove(std::string(kGuards) + " --guards 'seq>128' --json");
  EXPECT_EQ(r.exit_code, 0);
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["covered"], true);
  EXPECT_TRUE(j["witness"].is_null());
}

TEST(ProveCliTest, MultiSymbolWitnessNamesEverySymbol) {
  CliResult r = Prove(
      "--dim batch=1..8 --dim seq=1..512 --guards 'batch <= 2' --guards 'batch > 2 && seq <= 128'");
  EXPECT_EQ(r.exit_code, 1);
  ASSERT_EQ(r.out.rfind("uncovered: batch=", 0), 0u) << r.out;
  std::map<std::string, long> w = Witness(r.out);
  ASSERT_EQ(w.size(), 2u) << r.out;
  EXPECT_GT(w["batch"], 2);
  EXPECT_LE(w["batch"], 8);
  EXPECT_GT(w["seq"], 128);
  EXPECT_LE(w["seq"], 512);
}

TEST(ProveCliTest, ErrorsExitTwoWithAClearMessage) {
  CliResult r = Prove("--dim seq=1..512 --guards 'seq <= '", /*with_stderr=*/true);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("--guards"), std::string::npos) << r.out;
  r = Prove("--dim seq=1..512 --guards 'len <= 4'", true);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("unknown symbol 'len'"), std::string::npos) << r.out;
  r = Prove("--dim seq=1-512 --guards 'seq <= 4'", true);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("--dim 'seq=1-512'"), std::string::npos) << r.out;
  r = Prove("--dim seq=9..1 --guards 'seq <= 4'", true);
  EXPECT_EQ(r.exit_code, 2);
  r = Prove("--guards 'seq <= 4'", true);
  EXPECT_EQ(r.exit_code, 2);
  r = Prove("--dim seq=1..4 --guards 'seq <= 4' --bogus", true);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("unknown flag --bogus"), std::string::npos) << r.out;
  r = Prove("", true);
  EXPECT_EQ(r.exit_code, 2);
}

}  // namespace
