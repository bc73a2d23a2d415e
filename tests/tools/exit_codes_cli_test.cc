// The CLI's exit-code rule (tools/command.h: 0 ok, 1 a negative answer, 2
// bad usage or input) where it used to slip: a directory given as a model,
// log or trace file is "is a directory" (exit 2) for every subcommand; a
// model the ONNX checker rejects, or a --dim naming what the model lacks, is
// bad input for `inspect` (2), while a valid model shapeshift cannot import
// is a negative answer (1); a report that cannot be written to stdout is
// exit 2 with a message.
#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/graph/onnx_test_model.h"
#include "tests/tools/cli_test_util.h"

namespace shapeshift {
namespace {

using shapeshift::testing::CliResult;
using shapeshift::testing::RunShapeshift;
using ::testing::HasSubstr;
using ::testing::Not;

std::string TinyBert() { return std::string(SHAPESHIFT_SOURCE_DIR) + "/tests/data/models/tiny_bert_opset14.onnx"; }

std::string WriteModel(const std::string& name, const std::string& bytes) {
  const std::string path = shapeshift::testing::ProcessTempPath(name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

// An empty directory of this test's own.
std::string EmptyDir(const std::string& name) {
  const std::string dir = shapeshift::testing::ProcessTempPath(name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(ExitCodesCliTest, ADirectoryAsTheModelIsADirectoryEverywhere) {
  const std::string dir = EmptyDir("model_dir.onnx");
  for (const std::string& args : {"inspect " + dir, "run " + dir + " --no-cache", "prove " + dir + " --no-cache",
                                  "fuzz " + dir + " --cases 1"}) {
    CliResult r = RunShapeshift(args, "2>&1");
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_THAT(r.output, HasSubstr(dir + ": is a directory")) << args;
    EXPECT_THAT(r.output, Not(HasSubstr("not a valid ONNX model"))) << args;
  }
}

TEST(ExitCodesCliTest, ADirectoryAsALogOrTraceIsADirectory) {
  const std::string dir = EmptyDir("log_dir");
  // explain used to read a directory as an empty log: exit 0, "no recompile events".
  CliResult explain = RunShapeshift("explain " + dir, "2>&1");
  EXPECT_EQ(explain.exit_code, 2) << explain.output;
  EXPECT_THAT(explain.output, HasSubstr("is a directory"));
  EXPECT_THAT(explain.output, Not(HasSubstr("no recompile events")));
  CliResult log = RunShapeshift("run builtin:bert --no-cache --recompile-log " + dir, "2>&1");
  EXPECT_EQ(log.exit_code, 2) << log.output;
  EXPECT_THAT(log.output, HasSubstr(dir));
  EXPECT_THAT(log.output, HasSubstr("Is a directory"));
  CliResult trace = RunShapeshift("run builtin:bert --no-cache --trace file:" + dir, "2>&1");
  EXPECT_EQ(trace.exit_code, 2) << trace.output;
  EXPECT_THAT(trace.output, HasSubstr("--trace file:" + dir + ": is a directory"));
  CliResult warm = RunShapeshift("prove builtin:bert --policy static --no-cache --warm file:" + dir, "2>&1");
  EXPECT_EQ(warm.exit_code, 2) << warm.output;
  EXPECT_THAT(warm.output, HasSubstr("--warm file:" + dir + ": is a directory"));
}

TEST(ExitCodesCliTest, InspectSeparatesBadModelsFromUnsupportedOnes) {
  // The checker rejects a node reading an undefined value: bad input, 2.
  testing::OnnxTestModel invalid(17);
  invalid.Input("x", onnx::TensorProto::FLOAT, {"n"}).Output("y", onnx::TensorProto::FLOAT, {"n"});
  invalid.Node("Relu", {"undefined"}, {"y"}, "relu");
  CliResult rejected = RunShapeshift("inspect " + WriteModel("checker_rejects.onnx", invalid.Bytes()), "2>&1");
  EXPECT_EQ(rejected.exit_code, 2) << rejected.output;
  EXPECT_THAT(rejected.output, HasSubstr("ONNX checker rejected the model"));
  // A valid model with an op shapeshift lacks: the negative answer, 1.
  testing::OnnxTestModel unsupported(17);
  unsupported.Input("x", onnx::TensorProto::FLOAT, {"n"}).Output("y", onnx::TensorProto::FLOAT, {"n"});
  unsupported.Node("NonZero", {"x"}, {"nz"}, "find");
  unsupported.Node("Relu", {"x"}, {"y"});
  CliResult negative = RunShapeshift("inspect " + WriteModel("unsupported_op.onnx", unsupported.Bytes()), "2>&1");
  EXPECT_EQ(negative.exit_code, 1) << negative.output;
  // A --dim the model rejects is bad usage, not a fact about the model.
  CliResult bad_dim = RunShapeshift("inspect " + TinyBert() + " --dim seq=1..128", "2>&1");
  EXPECT_EQ(bad_dim.exit_code, 2) << bad_dim.output;
  EXPECT_THAT(bad_dim.output, HasSubstr("'seq' is not a dynamic dim"));
  // So is a range for a dim the metadata derives (total_sequence = past_sequence + sequence).
  const std::string gpt2_past =
      std::string(SHAPESHIFT_SOURCE_DIR) + "/tests/data/models/gpt2-past-torchscript/model.onnx";
  CliResult derived = RunShapeshift("inspect " + gpt2_past + " --dim total_sequence=1..64", "2>&1");
  EXPECT_EQ(derived.exit_code, 2) << derived.output;
  EXPECT_THAT(derived.output, HasSubstr("the model derives total_sequence = past_sequence + sequence"));
  // (A declared range wider than the model allows stays an answer, exit 1:
  // import_narrowing_cli_test.cc.)
}

TEST(ExitCodesCliTest, ACompileErrorNamesTheModelFileNotABuiltModel) {
  // run and prove build their Session from the model they loaded; its
  // errors say which file failed to compile. A Reshape to a shape read from
  // an input: valid ONNX, every op supported, but its output dims depend on
  // data, so the compile refuses it.
  testing::OnnxTestModel reshape(17);
  reshape.Input("x", onnx::TensorProto::FLOAT, {"n"}).Input("s", onnx::TensorProto::INT64, {"2"});
  reshape.Output("y", onnx::TensorProto::FLOAT, {"a", "b"});
  reshape.Node("Reshape", {"x", "s"}, {"y"}, "reshape");
  const std::string path = WriteModel("compile_error.onnx", reshape.Bytes());
  for (const std::string& command : {"run", "prove"}) {
    CliResult r = RunShapeshift(command + " " + path + " --no-cache", "2>&1");
    EXPECT_NE(r.exit_code, 0) << command << "\n" << r.output;
    EXPECT_THAT(r.output, HasSubstr("compiling " + path + ": compiling a polymorphic entry: ")) << command;
    EXPECT_THAT(r.output, Not(HasSubstr("<built model>"))) << command;
  }
}

TEST(ExitCodesCliTest, AReportThatCannotBeWrittenIsExitTwo) {
  // Exit 0 with `> /dev/full` claimed a report nobody got.
  for (const std::string& args :
       {"inspect " + TinyBert(), std::string("prove --dim seq=1..4 --guards 'seq <= 4'"), std::string("help")}) {
    CliResult r = RunShapeshift(args, "2>&1 >/dev/full");  // stderr to the test, stdout to a full device
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_THAT(r.output, HasSubstr("cannot write to standard output: No space left on device")) << args;
  }
  // A negative answer that cannot be written is still a write failure.
  CliResult uncovered = RunShapeshift("prove --dim seq=1..8 --guards 'seq <= 4'", "2>&1 >/dev/full");
  EXPECT_EQ(uncovered.exit_code, 2) << uncovered.output;
}

}  // namespace
}  // namespace shapeshift
