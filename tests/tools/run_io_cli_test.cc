// `shapeshift run --inputs-from DIR --save-outputs DIR`: the request's
// tensors come from files and the outputs go to files (tools/run_io.h), which
// is how the peer benchmark measures agreement on identical tensors.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "graph/tensor_compare.h"
#include "graph/tensor_proto.h"
#include "gtest/gtest.h"
#include "onnx/onnx_pb.h"
#include "tests/tools/cli_test_util.h"

namespace shapeshift {
namespace {

namespace fs = std::filesystem;
using ::shapeshift::testing::ProcessTempPath;
using ::shapeshift::testing::RunShapeshift;
using ::testing::HasSubstr;

const std::string kModelDir = std::string(SHAPESHIFT_SOURCE_DIR) + "/tests/data/models/bert-base-torchscript";
const std::string kModel = kModelDir + "/model.onnx";
// (batch 2, sequence 37, last 9 tokens of row 2 padded), expected outputs from torch eager.
const std::string kDataSet = kModelDir + "/test_data_set_1";

std::string FreshDir(const std::string& name) {
  const std::string dir = ProcessTempPath(name);
  fs::remove_all(dir);
  return dir;
}

TEST(RunIoCliTest, SavesTheOutputsOfTheGivenInputs) {
  const std::string out = FreshDir("run_io_outputs");
  testing::CliResult r = RunShapeshift(
      "run " + kModel + " --dim sequence=1..512 --inputs-from " + kDataSet + " --save-outputs " + out +
          " --repeats 1 --no-cache --json",
      "2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("\"dims\":{\"batch\":2,\"sequence\":37}"));
  std::string name;
  absl::StatusOr<Tensor> got = ReadTensorProtoFile(out + "/output_0.pb", &name);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(name, "last_hidden_state");
  absl::StatusOr<Tensor> expected = ReadTensorProtoFile(kDataSet + "/output_0.pb");
  ASSERT_TRUE(expected.ok()) << expected.status();
  ASSERT_EQ(got->shape(), expected->shape());
  const float* a = got->data<float>();
  const float* b = expected->data<float>();
  float worst = 0;
  for (int64_t i = 0; i < got->num_elements(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  EXPECT_LE(worst, 1e-3f);
  EXPECT_FALSE(fs::exists(out + "/.output_0.pb.tmp"));
}

TEST(RunIoCliTest, AMissingInputFileIsNamed) {
  const std::string dir = FreshDir("run_io_missing");
  fs::create_directories(dir);
  fs::copy_file(kDataSet + "/input_0.pb", dir + "/input_0.pb");
  testing::CliResult r =
      RunShapeshift("run " + kModel + " --dim sequence=1..512 --inputs-from " + dir + " --no-cache", "2>&1");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("no input_K.pb file for input 'attention_mask'"));
}

TEST(RunIoCliTest, AWrongDtypeIsNamedWithTheFile) {
  const std::string dir = FreshDir("run_io_dtype");
  fs::create_directories(dir);
  for (const char* file : {"input_1.pb", "input_2.pb"}) fs::copy_file(kDataSet + "/" + file, dir + "/" + file);
  absl::StatusOr<Tensor> floats = Tensor::Zeros(DType::kF32, {2, 37});
  ASSERT_TRUE(floats.ok());
  onnx::TensorProto proto;
  TensorToProto(*floats, "input_ids", &proto);
  {
    std::ofstream file(dir + "/input_0.pb", std::ios::binary);
    ASSERT_TRUE(proto.SerializeToOstream(&file));
  }
  testing::CliResult r =
      RunShapeshift("run " + kModel + " --dim sequence=1..512 --inputs-from " + dir + " --no-cache", "2>&1");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr(dir + "/input_0.pb: input 'input_ids' is i64, the file holds f32"));
}

TEST(RunIoCliTest, ShapesOutsideTheDeclaredRangeAreRefused) {
  testing::CliResult r = RunShapeshift(
      "run " + kModel + " --dim sequence=1..16 --inputs-from " + kDataSet + " --no-cache", "2>&1");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("sequence = 37 is outside the declared range 1..16"));
  // The message names the flag the user typed, not an --input never given.
  EXPECT_THAT(r.output, HasSubstr("--inputs-from " + kDataSet));
  EXPECT_THAT(r.output, ::testing::Not(HasSubstr("--input ")));
}

TEST(RunIoCliTest, InputsFromExcludesInputAndTrace) {
  testing::CliResult with_input = RunShapeshift(
      "run " + kModel + " --inputs-from " + kDataSet + " --input input_ids=1x4", "2>&1");
  EXPECT_EQ(with_input.exit_code, 2);
  EXPECT_THAT(with_input.output, HasSubstr("--inputs-from sets the request's shapes"));
  testing::CliResult with_trace = RunShapeshift(
      "run " + kModel + " --trace lognormal:3 --save-outputs /tmp/x", "2>&1");
  EXPECT_EQ(with_trace.exit_code, 2);
  EXPECT_THAT(with_trace.output, HasSubstr("--save-outputs is for one request shape"));
}

// Issue 12: `--check` called every NaN or Inf a mismatch, even where the
// interpreter (and ONNX Runtime) gives the same. Tanh of NaN and Exp of +-Inf
// (tests/data/special_values, ORT's outputs) now pass, and the saved outputs
// agree with ORT's under the same rule.
TEST(RunIoCliTest, CheckAcceptsTheNanAndInfBothSidesAgreeOn) {
  for (const std::string name : {"tanh", "exp", "relu"}) {
    const std::string dir = std::string(SHAPESHIFT_SOURCE_DIR) + "/tests/data/special_values/" + name;
    const std::string out = FreshDir("run_io_special_" + name);
    testing::CliResult r = RunShapeshift("run " + dir + "/model.onnx --inputs-from " + dir +
                                             "/test_data_set_0 --save-outputs " + out +
                                             " --check --repeats 1 --no-cache --json",
                                         "2>&1");
    EXPECT_EQ(r.exit_code, 0) << name << ": " << r.output;
    EXPECT_THAT(r.output, HasSubstr("\"check_passed\":true")) << name;
    absl::StatusOr<Tensor> got = ReadTensorProtoFile(out + "/output_0.pb");
    absl::StatusOr<Tensor> ort = ReadTensorProtoFile(dir + "/test_data_set_0/output_0.pb");
    ASSERT_TRUE(got.ok() && ort.ok()) << name;
    TensorComparison c = CompareTensors(*got, *ort);
    EXPECT_TRUE(c.agree) << name << ": " << c.first_mismatch;
    int64_t nan_or_inf = 0;
    for (int64_t i = 0; i < ort->num_elements(); ++i) nan_or_inf += !std::isfinite(ort->GetAsDouble(i));
    EXPECT_GT(nan_or_inf, 0) << name << ": the case holds no NaN or Inf output";
  }
}

}  // namespace
}  // namespace shapeshift
