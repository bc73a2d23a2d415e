// `shapeshift inspect`: symbolic input/output shapes, op histogram,
// unsupported ops, --print-ir, --dim ranges and exit codes.

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/tools/cli_test_util.h"
#include "tests/graph/onnx_test_model.h"

namespace shapeshift {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

using shapeshift::testing::CliResult;

CliResult RunInspect(const std::string& args) {
  return shapeshift::testing::RunShapeshift("inspect " + args, "2>&1");
}

std::string WriteModel(const std::string& name, const std::string& bytes) {
  std::filesystem::path path = std::filesystem::path(::testing::TempDir()) / name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path.string();
}

std::string TinyBert(int opset) {
  return std::string(SHAPESHIFT_SOURCE_DIR) + "/tests/data/models/tiny_bert_opset" + std::to_string(opset) +
         ".onnx";
}

TEST(InspectCliTest, ShapeChainReshapePrintsSymbolically) {
  std::string path = WriteModel("attention_reshape.onnx", testing::AttentionReshapeModel().Bytes());
  CliResult r = RunInspect(path + " --print-ir");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("%x: f32[batch, seq, 768]"));
  EXPECT_THAT(r.output, HasSubstr("%y: f32[batch, seq, 12, 64]"));
  EXPECT_THAT(r.output, HasSubstr("%y: f32[batch, seq, 12, 64] = Reshape(%x, %target)"));
  EXPECT_THAT(r.output, HasSubstr("values={batch, seq, 12, 64}"));
  EXPECT_THAT(r.output, HasSubstr("batch in [1, 65536]"));
  EXPECT_THAT(r.output, HasSubstr("unsupported ops: none"));
  EXPECT_THAT(r.output, ::testing::ContainsRegex("Gather +2"));
}

TEST(InspectCliTest, TinyBertWithDeclaredRanges) {
  CliResult r = RunInspect(TinyBert(14) + " --dim batch=1..8 --dim sequence=1..128 --print-ir");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("batch in [1, 8]"));
  EXPECT_THAT(r.output, HasSubstr("sequence in [1, 128]"));
  EXPECT_THAT(r.output, HasSubstr("%input_ids: i64[batch, sequence]"));
  EXPECT_THAT(r.output, HasSubstr("%last_hidden_state: f32[batch, sequence, 64]"));
  // The exporter's Shape→Gather→Unsqueeze→Concat→Reshape for the heads.
  EXPECT_THAT(r.output, ::testing::ContainsRegex(": f32\\[batch, sequence, 4, 16\\] = Reshape\\("));
  EXPECT_THAT(r.output, Not(HasSubstr("dyn")));
}

TEST(InspectCliTest, TinyBertOpset17WithoutIr) {
  CliResult r = RunInspect(TinyBert(17));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, ::testing::ContainsRegex("LayerNormalization +[0-9]+"));
  EXPECT_THAT(r.output, Not(HasSubstr("graph opset=")));
}

TEST(InspectCliTest, UnsupportedOpsAreListedWithExitCode1) {
  testing::OnnxTestModel m(17);
  m.Input("x", onnx::TensorProto::FLOAT, {"n"});
  m.Node("NonZero", {"x"}, {"nz"}, "find_nonzero");
  m.Node("Relu", {"x"}, {"y"});
  m.Output("y", onnx::TensorProto::FLOAT, {"n"});
  std::string path = WriteModel("unsupported.onnx", m.Bytes());
  CliResult r = RunInspect(path);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("unsupported ops: 1"));
  EXPECT_THAT(r.output, HasSubstr("NonZero (node 'find_nonzero', opset 17)"));
  EXPECT_THAT(r.output, ::testing::ContainsRegex("Relu +1"));
}

TEST(InspectCliTest, BadUsageAndUnreadableFilesExit2) {
  EXPECT_EQ(RunInspect("").exit_code, 2);
  CliResult missing = RunInspect("/nonexistent/model.onnx");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.output, HasSubstr("cannot open"));
  CliResult garbage = RunInspect(WriteModel("garbage.onnx", "this is not a model"));
  EXPECT_EQ(garbage.exit_code, 2);
  EXPECT_THAT(garbage.output, HasSubstr("not a valid ONNX model"));
  CliResult bad_dim = RunInspect(TinyBert(14) + " --dim batch=8..1");
  EXPECT_EQ(bad_dim.exit_code, 2);
  EXPECT_THAT(bad_dim.output, HasSubstr("--dim 'batch=8..1'"));
  EXPECT_EQ(RunInspect(TinyBert(14) + " --bogus").exit_code, 2);
}

TEST(InspectCliTest, UnknownDimNameIsReported) {
  CliResult r = RunInspect(TinyBert(14) + " --dim seq=1..128");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.output, HasSubstr("'seq' is not a dynamic dim"));
  EXPECT_THAT(r.output, HasSubstr("batch, sequence"));
}

}  // namespace
}  // namespace shapeshift
