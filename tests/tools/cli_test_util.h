// Running the built `shapeshift` binary (path: SHAPESHIFT_CLI) and other
// programs from CLI tests.
#ifndef SHAPESHIFT_TESTS_TOOLS_CLI_TEST_UTIL_H_
#define SHAPESHIFT_TESTS_TOOLS_CLI_TEST_UTIL_H_

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/support/temp_path.h"

namespace shapeshift::testing {

struct CliResult {
  int exit_code = -1;  // -1: not started, or killed by a signal
  std::string output;  // stdout, plus stderr when the redirect sends it there
};

// Runs a shell command line and captures its stdout (and whatever its own
// redirections send there).
inline CliResult RunCommand(const std::string& command) {
  CliResult result;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) result.output.append(buffer.data(), n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// Runs `shapeshift ARGS REDIRECT` through the shell. `redirect` says where
// stderr goes: "2>/dev/null" (default), "2>&1", or "2>FILE".
inline CliResult RunShapeshift(const std::string& args, const std::string& redirect = "2>/dev/null") {
  return RunCommand(std::string(SHAPESHIFT_CLI) + " " + args + " " + redirect);
}

// Runs `shapeshift ARGS...` (no shell; stdout and stderr to /dev/null) and
// returns its peak resident set in KiB (wait4's ru_maxrss), or -1 when it
// could not be started or did not exit 0.
inline long PeakRssKibOf(const std::vector<std::string>& args) {
  std::vector<std::string> argv_storage = {SHAPESHIFT_CLI};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    const int null = open("/dev/null", O_WRONLY);
    if (null >= 0) {
      dup2(null, 1);
      dup2(null, 2);
    }
    execv(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  struct rusage usage {};
  if (wait4(pid, &status, 0, &usage) != pid) return -1;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
  return usage.ru_maxrss;
}

}  // namespace shapeshift::testing

#endif  // SHAPESHIFT_TESTS_TOOLS_CLI_TEST_UTIL_H_
