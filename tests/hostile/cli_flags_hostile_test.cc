// The CLI door: every subcommand `shapeshift help` lists — including ones
// added after this test — refuses an unknown flag and a valued flag given
// no value with exit code 2 and a message naming the flag, before doing
// any work; prints its own usage for `--help`, `-h` and `help NAME` (one
// text, on stdout, exit 0); and never claims success for a report that could
// not be written.
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/tools/cli_test_util.h"

namespace shapeshift {
namespace {

using ::testing::HasSubstr;

std::vector<std::string> Subcommands() {
  testing::CliResult help = testing::RunShapeshift("help");
  EXPECT_EQ(help.exit_code, 0) << help.output;
  std::vector<std::string> names;
  std::istringstream lines(help.output);
  bool listing = false;
  for (std::string line; std::getline(lines, line);) {
    if (absl::StartsWith(line, "subcommands:")) {
      listing = true;
    } else if (listing && absl::StartsWith(line, "  ")) {
      std::string name(absl::StripLeadingAsciiWhitespace(line));
      names.push_back(name.substr(0, name.find(' ')));
    }
  }
  return names;
}

TEST(CliFlagsHostileTest, EverySubcommandRefusesAnUnknownFlag) {
  const std::vector<std::string> names = Subcommands();
  ASSERT_GE(names.size(), 6u);
  for (const std::string& name : names) {
    testing::CliResult r = testing::RunShapeshift(name + " --no-such-flag-xyz builtin:bert", "2>&1");
    EXPECT_EQ(r.exit_code, 2) << name << ": " << r.output;
    EXPECT_THAT(r.output, HasSubstr("--no-such-flag-xyz")) << name;
  }
}

TEST(CliFlagsHostileTest, EverySubcommandRefusesAValuedFlagWithoutItsValue) {
  // `--dim` takes a value wherever it is accepted; elsewhere it is unknown.
  for (const std::string& name : Subcommands()) {
    testing::CliResult r = testing::RunShapeshift(name + " builtin:bert --dim", "2>&1");
    EXPECT_EQ(r.exit_code, 2) << name << ": " << r.output;
    EXPECT_THAT(r.output, HasSubstr("--dim")) << name;
  }
}

TEST(CliFlagsHostileTest, EverySubcommandPrintsItsOwnUsageForHelp) {
  const std::vector<std::string> names = Subcommands();
  ASSERT_GE(names.size(), 6u);
  for (const std::string& name : names) {
    // `--help` anywhere, even after a model and flags, and without doing the work.
    testing::CliResult help = testing::RunShapeshift(name + " --help");
    EXPECT_EQ(help.exit_code, 0) << name << ": " << help.output;
    EXPECT_TRUE(absl::StartsWith(help.output, "usage: shapeshift " + name)) << name << ": " << help.output;
    EXPECT_THAT(help.output, HasSubstr("Exit:")) << name << ": the usage states its exit codes";
    EXPECT_EQ(testing::RunShapeshift(name + " -h").output, help.output) << name;
    EXPECT_EQ(testing::RunShapeshift(name + " builtin:bert --dim seq=1..4 --help").output, help.output) << name;
    // `help NAME` prints the very same text.
    testing::CliResult via_help = testing::RunShapeshift("help " + name);
    EXPECT_EQ(via_help.exit_code, 0) << name;
    EXPECT_EQ(via_help.output, help.output) << name;
  }
  testing::CliResult unknown = testing::RunShapeshift("help frobnicate", "2>&1");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_THAT(unknown.output, HasSubstr("unknown subcommand 'frobnicate'"));
}

TEST(CliFlagsHostileTest, AFailedWriteToStdoutIsExitTwoForEverySubcommand) {
  for (const std::string& name : Subcommands()) {
    testing::CliResult r = testing::RunShapeshift(name + " --help", "2>&1 >/dev/full");
    EXPECT_EQ(r.exit_code, 2) << name << ": " << r.output;
    EXPECT_THAT(r.output, HasSubstr("shapeshift " + name + ": cannot write to standard output")) << name;
  }
}

TEST(CliFlagsHostileTest, UnknownSubcommandIsAnError) {
  testing::CliResult r = testing::RunShapeshift("frobnicate", "2>&1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("frobnicate"));
}

}  // namespace
}  // namespace shapeshift
