// `shapeshift conformance`: runs the ONNX backend node tests shipped by
// Debian's libonnx-testdata and classifies each as passed, failed,
// unsupported or excluded (known-bad expected data).

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "graph/tensor_proto.h"
#include "gtest/gtest.h"
#include "tests/tools/cli_test_util.h"
#include "nlohmann/json.hpp"
#include "onnx/onnx_pb.h"

namespace shapeshift {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr char kNodeTests[] = "/usr/share/libonnx-testdata/data/node";
// The pass count must not fall; raise it (rounded down to a multiple of 10)
// when more tests pass.
constexpr int kPassedFloor = 540;
// The same for --compiled (the tests `check` accepts, run through the
// compiler); raise it as lowerings land.
constexpr int kCompiledPassedFloor = 370;

using shapeshift::testing::CliResult;

CliResult RunConformance(const std::string& args) {
  return shapeshift::testing::RunShapeshift("conformance " + args);
}

TEST(ConformanceCliTest, WholeNodeSuiteHasNoFailuresAndKeepsThePassCount) {
  CliResult r = RunConformance(std::string("--onnx-node-tests ") + kNodeTests + " --json");
  nlohmann::json report = nlohmann::json::parse(r.output, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(report.is_discarded()) << r.output;
  EXPECT_EQ(report["failed"], 0) << report["failures"].dump(2);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_GE(report["passed"].get<int>(), kPassedFloor);
  EXPECT_EQ(report["total"].get<int>(), report["passed"].get<int>() + report["failed"].get<int>() +
                                            report["unsupported"].get<int>() +
                                            report["excluded"].get<int>());
  int histogram_total = 0;
  for (const auto& [reason, count] : report["unsupported_reasons"].items()) {
    histogram_total += count.get<int>();
  }
  EXPECT_EQ(histogram_total, report["unsupported"].get<int>());
  EXPECT_LE(report["excluded"].get<int>(), 6) << report["excluded_tests"].dump(2);
}

// What `check` accepts, the compiler compiles and computes right: every node
// test check accepts either passes or is a failure here, never unsupported.
TEST(ConformanceCliTest, CompiledNodeSuiteHasNoFailuresAndKeepsThePassCount) {
  CliResult r = RunConformance(std::string("--onnx-node-tests ") + kNodeTests + " --compiled --json");
  nlohmann::json report = nlohmann::json::parse(r.output, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(report.is_discarded()) << r.output;
  EXPECT_EQ(report["mode"], "compiled");
  EXPECT_EQ(report["failed"], 0) << report["failures"].dump(2);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_GE(report["passed"].get<int>(), kCompiledPassedFloor);
  std::printf("conformance --compiled: passed %d, failed %d, unsupported %d\n", report["passed"].get<int>(),
              report["failed"].get<int>(), report["unsupported"].get<int>());
}

TEST(ConformanceCliTest, FilterPrintsOneRowPerTestAndTotals) {
  CliResult r = RunConformance(std::string("--onnx-node-tests ") + kNodeTests + " --filter test_add_bcast");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, ::testing::ContainsRegex("test_add_bcast +passed"));
  EXPECT_THAT(r.output, HasSubstr("total 1  passed 1  failed 0  unsupported 0"));
}

TEST(ConformanceCliTest, OpOutsideTheOpSetIsUnsupportedNamingTheOp) {
  CliResult r = RunConformance(std::string("--onnx-node-tests ") + kNodeTests +
                               " --filter test_basic_conv_with_padding --json");
  nlohmann::json report = nlohmann::json::parse(r.output, nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << r.output;
  EXPECT_EQ(report["unsupported"], 1);
  EXPECT_EQ(report["unsupported_reasons"]["op Conv"], 1);
  EXPECT_EQ(r.exit_code, 0);
}

// A copy of test_add whose expected output is wrong must be a failure.
TEST(ConformanceCliTest, WrongExpectedOutputIsAFailureAndExitsOne) {
  const fs::path root = fs::path(::testing::TempDir()) / "shapeshift_conformance_wrong";
  fs::remove_all(root);
  const fs::path set = root / "test_add_wrong" / "test_data_set_0";
  fs::create_directories(set);
  const fs::path source = fs::path(kNodeTests) / "test_add";
  fs::copy_file(source / "model.onnx", root / "test_add_wrong" / "model.onnx");
  for (const char* input : {"input_0.pb", "input_1.pb"}) {
    fs::copy_file(source / "test_data_set_0" / input, set / input);
  }
  absl::StatusOr<Tensor> expected = ReadTensorProtoFile((source / "test_data_set_0" / "output_0.pb").string());
  ASSERT_TRUE(expected.ok()) << expected.status();
  Tensor wrong = expected->Clone();
  wrong.mutable_data<float>()[3] += 1.0f;
  onnx::TensorProto proto;
  TensorToProto(wrong, "sum", &proto);
  std::ofstream(set / "output_0.pb", std::ios::binary) << proto.SerializeAsString();

  CliResult r = RunConformance("--onnx-node-tests " + root.string() + " --json");
  EXPECT_EQ(r.exit_code, 1);
  nlohmann::json report = nlohmann::json::parse(r.output, nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << r.output;
  EXPECT_EQ(report["failed"], 1);
  ASSERT_EQ(report["failures"].size(), 1u);
  EXPECT_EQ(report["failures"][0]["test"], "test_add_wrong");
  EXPECT_THAT(report["failures"][0]["error"].get<std::string>(), HasSubstr("element 3"));
  fs::remove_all(root);
}

TEST(ConformanceCliTest, BadUsageExitsTwo) {
  EXPECT_EQ(RunConformance("").exit_code, 2);
  EXPECT_EQ(RunConformance("--onnx-node-tests /nonexistent/shapeshift").exit_code, 2);
  EXPECT_EQ(RunConformance(std::string("--onnx-node-tests ") + kNodeTests + " --bogus").exit_code, 2);
}

}  // namespace
}  // namespace shapeshift
