// `--device cpu|cuda` on run, prove, fuzz and demo: the CPU default is
// unchanged and reported; `--device cuda` on a machine without a GPU exits
// 2 with the device's message (nothing runs on the CPU instead); bad values
// and CUDA-only flags without `--device cuda` are usage errors. (The device
// program itself is tested on the emulated device in tests/runtime/device/.)
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/tools/cli_test_util.h"

namespace shapeshift::testing {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;

// A GPU machine runs the cuda cases for real; they are only checked here
// where the driver is missing (what CI has).
bool HaveCudaDriver() { return RunCommand("ldconfig -p 2>/dev/null | grep -q 'libcuda.so.1'").exit_code == 0; }

TEST(DeviceCliTest, RunReportsTheCpuDeviceByDefault) {
  CliResult r = RunShapeshift("run builtin:bert --input input_ids=1x8 --repeats 1 --no-cache --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(nlohmann::json::parse(r.output)["device"], "cpu");
  CliResult explicit_cpu = RunShapeshift("run builtin:bert --input input_ids=1x8 --repeats 1 --no-cache --device cpu");
  EXPECT_EQ(explicit_cpu.exit_code, 0) << explicit_cpu.output;
}

TEST(DeviceCliTest, CudaWithoutAGpuIsAClearErrorOnEveryCommand) {
  if (HaveCudaDriver()) {
    CliResult r = RunShapeshift("run builtin:bert --input input_ids=1x8 --repeats 1 --no-cache --device cuda --json");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(nlohmann::json::parse(r.output)["device"], "cuda");
    return;
  }
  for (const std::string& command :
       {std::string("run builtin:bert --input input_ids=1x8 --repeats 1 --no-cache --device cuda"),
        std::string("prove builtin:bert --policy polymorphic --no-cache --device cuda"),
        std::string("fuzz builtin:bert --cases 3 --device cuda"), std::string("demo --requests 3 --device cuda")}) {
    SCOPED_TRACE(command);
    CliResult r = RunShapeshift(command, "2>&1");
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_THAT(r.output, HasSubstr("--device cuda"));
    EXPECT_THAT(r.output, AnyOf(HasSubstr("libcuda.so.1"), HasSubstr("cuInit"), HasSubstr("no CUDA backend")));
    EXPECT_THAT(r.output, HasSubstr("nothing runs on the CPU instead"));
  }
}

TEST(DeviceCliTest, BadDeviceFlagsAreUsageErrors) {
  CliResult bad = RunShapeshift("run builtin:bert --device tpu", "2>&1");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.output, HasSubstr("unknown device 'tpu' (expected cpu or cuda)"));
  CliResult graphs = RunShapeshift("demo --requests 2 --no-cuda-graphs", "2>&1");
  EXPECT_EQ(graphs.exit_code, 2);
  EXPECT_THAT(graphs.output, HasSubstr("--no-cuda-graphs needs --device cuda"));
}

TEST(DeviceCliTest, EveryDeviceCommandDocumentsTheDeviceFlagsInItsHelp) {
  for (const char* command : {"run", "prove", "fuzz", "demo"}) {
    SCOPED_TRACE(command);
    CliResult r = RunShapeshift(std::string(command) + " --help");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_THAT(r.output, HasSubstr("[--device cpu|cuda] [--no-cuda-graphs] [--cuda-graph-symbol SYM] [--cuda-tf32]"));
    EXPECT_THAT(r.output, HasSubstr("never falling back to the CPU"));
  }
  CliResult check = RunShapeshift("check --help");
  EXPECT_EQ(check.exit_code, 0);
  EXPECT_THAT(check.output, HasSubstr("[--device cpu|cuda]"));
}

// The prove forms that run nothing (a bundle holds CPU code; --guards only
// asks the solver) refuse the device flags instead of ignoring them.
TEST(DeviceCliTest, ProveFormsThatRunNoModelRefuseTheDeviceFlags) {
  CliResult guards = RunShapeshift("prove --dim seq=1..8 --guards 'seq <= 8' --device cuda", "2>&1");
  EXPECT_EQ(guards.exit_code, 2) << guards.output;
  EXPECT_THAT(guards.output, HasSubstr("--device needs a MODEL, not --guards"));
  CliResult bundle = RunShapeshift("prove --bundle /nonexistent.ssb --device cuda", "2>&1");
  EXPECT_EQ(bundle.exit_code, 2) << bundle.output;
  EXPECT_THAT(bundle.output, HasSubstr("--device does not apply to --bundle"));
}

// check --device cuda compiles nothing, so it answers without a GPU: the
// op table's CUDA column and the CUDA emitter accept BERT.
TEST(DeviceCliTest, CheckAnswersForTheCudaDeviceWithoutAGpu) {
  CliResult r = RunShapeshift("check builtin:bert --device cuda --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  nlohmann::json j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["device"], "cuda");
  EXPECT_EQ(j["compilable_default_policy"], true);
  CliResult text = RunShapeshift("check builtin:bert");
  EXPECT_THAT(text.output, HasSubstr("device: cpu"));
  CliResult bad = RunShapeshift("check builtin:bert --device tpu", "2>&1");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.output, HasSubstr("unknown device 'tpu'"));
}

}  // namespace
}  // namespace shapeshift::testing
