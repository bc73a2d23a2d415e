// The persistent cache directory through the CLI: a FIFO, a directory or a
// symbolic link where a manifest (`manifests/<key>`) or a compiled object
// (`objects/<key>`) belongs. `run` and `prove` used to block forever on a
// FIFO and to warn about a directory on every run while recompiling the
// entry; now the squatter is moved aside once (a warning naming the file),
// the entry is rebuilt, and the next process loads it silently.
// (runtime/persist's own suite covers sockets and namespace squatters.)
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/graph/onnx_test_model.h"
#include "tests/tools/cli_test_util.h"

namespace shapeshift {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;

std::string Temp(const std::string& name) { return testing::ProcessTempPath("squat_" + name); }

// y = relu(x), x : f32[batch, seq]: a model that compiles in a moment.
std::string WriteTinyModel() {
  testing::OnnxTestModel m(17);
  m.Input("x", onnx::TensorProto::FLOAT, {"batch", "seq"});
  m.Node("Relu", {"x"}, {"y"}, "relu");
  m.Output("y", onnx::TensorProto::FLOAT, {"batch", "seq"});
  const std::string path = Temp("model.onnx");
  std::ofstream(path, std::ios::binary) << m.Bytes();
  const std::string trace = Temp("one.trace");
  std::ofstream(trace) << "batch=1 seq=3\n";
  return path;
}

struct Outcome {
  int exit_code = -1;
  nlohmann::json json;
  std::string warnings;
};

// `shapeshift COMMAND` with a deadline (a process blocked on a FIFO would
// otherwise hang the suite): exit 124 means it was stopped.
Outcome RunWithCache(const std::string& command, const std::string& model, const std::string& cache) {
  const std::string trace = Temp("one.trace");
  const std::string err = Temp("stderr.txt");
  std::string args;
  if (command == "run") {
    args = "run " + model + " --policy static --dim batch=1..1 --dim seq=1..8 --trace file:" + trace;
  } else {
    args = "prove " + model + " --policy static --dim batch=1..1 --dim seq=3..3 --warm file:" + trace;
  }
  testing::CliResult r = testing::RunCommand("timeout 120 " + std::string(SHAPESHIFT_CLI) + " " + args +
                                             " --cache-dir " + cache + " --json 2>" + err);
  Outcome out;
  out.exit_code = r.exit_code;
  out.json = nlohmann::json::parse(r.output, nullptr, /*allow_exceptions=*/false);
  std::ifstream in(err);
  out.warnings.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return out;
}

// The one file in `dir` (a fresh cache holds one manifest; the tiny model
// one object).
std::string OnlyFileIn(const std::string& dir) {
  std::vector<std::string> files;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string()[0] != '.') files.push_back(e.path().string());
  }
  EXPECT_EQ(files.size(), 1u) << dir;
  return files.empty() ? dir + "/missing" : files[0];
}

struct Squatter {
  const char* kind;
  std::function<void(const std::string&)> make;
};

std::vector<Squatter> Squatters() {
  return {{"a FIFO", [](const std::string& p) { ASSERT_EQ(mkfifo(p.c_str(), 0644), 0) << std::strerror(errno); }},
          {"a directory",
           [](const std::string& p) {
             fs::create_directory(p);
             std::ofstream(p + "/inside") << "x";
           }},
          {"a symbolic link", [](const std::string& p) { fs::create_symlink("/dev/zero", p); }}};
}

class CacheSquattersHostileTest : public ::testing::TestWithParam<std::string> {};

TEST_P(CacheSquattersHostileTest, ASquatterIsMovedAsideOnceAndTheEntryRebuilt) {
  const std::string command = GetParam();
  const std::string model = WriteTinyModel();
  const std::string populated = Temp(command + "_populated");
  fs::remove_all(populated);
  Outcome first = RunWithCache(command, model, populated);
  ASSERT_EQ(first.exit_code, 0) << first.warnings;
  ASSERT_EQ(first.json["compiles"], 1) << first.json.dump();
  for (const char* place : {"manifests", "objects"}) {
    for (const Squatter& squatter : Squatters()) {
      SCOPED_TRACE(std::string(place) + ", " + squatter.kind);
      const std::string cache = Temp(command + "_squatted");
      fs::remove_all(cache);
      fs::copy(populated, cache, fs::copy_options::recursive);
      const std::string victim = OnlyFileIn(cache + "/" + place);
      fs::remove(victim);
      squatter.make(victim);

      Outcome squatted = RunWithCache(command, model, cache);
      ASSERT_NE(squatted.exit_code, 124) << "blocked on " << victim;
      EXPECT_EQ(squatted.exit_code, 0) << squatted.warnings;
      EXPECT_THAT(squatted.warnings, HasSubstr(victim));
      EXPECT_THAT(squatted.warnings, HasSubstr(squatter.kind));
      EXPECT_THAT(squatted.warnings, HasSubstr("moved aside"));
      // A lost manifest means the entry is compiled again; a lost object
      // means only its kernel is (the entry itself is re-created).
      EXPECT_EQ(squatted.json["cache_loads"], std::string(place) == "objects" ? 1 : 0) << squatted.json.dump();

      Outcome again = RunWithCache(command, model, cache);
      EXPECT_EQ(again.exit_code, 0) << again.warnings;
      EXPECT_THAT(again.warnings, Not(HasSubstr("cache:"))) << "warned again after the rebuild";
      EXPECT_THAT(again.warnings, Not(HasSubstr("persistent cache"))) << "warned again after the rebuild";
      EXPECT_EQ(again.json["cache_loads"], 1) << again.json.dump();
      EXPECT_EQ(again.json["compiles"], 0) << again.json.dump();
      fs::remove_all(cache);
    }
  }
  fs::remove_all(populated);
  for (const char* file : {"model.onnx", "one.trace", "stderr.txt"}) fs::remove(Temp(file));
}

INSTANTIATE_TEST_SUITE_P(RunAndProve, CacheSquattersHostileTest, ::testing::Values("run", "prove"));

}  // namespace
}  // namespace shapeshift
