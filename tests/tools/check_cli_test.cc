// `shapeshift check`: the verdict per tier, every node without a lowering
// named, the domain with its notes, --json, and exit codes; `inspect` says
// the same for the default policy.
#include <unistd.h>

#include <filesystem>
#include <fstream>
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
using shapeshift::testing::CliResult;
using shapeshift::testing::OnnxTestModel;

std::string WriteModel(const std::string& name, const std::string& bytes) {
  std::filesystem::path path = std::filesystem::path(::testing::TempDir()) / name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path.string();
}

std::string Data(const std::string& rel) { return std::string(SHAPESHIFT_SOURCE_DIR) + "/tests/data/" + rel; }

// Dropout whose training_mode is a request input: never the inference
// identity `simplify` removes, so no lowering applies (the op table marks
// Dropout kPattern). Relu after it compiles.
std::string TrainingDropoutModel() {
  OnnxTestModel m;
  m.Input("x", onnx::TensorProto::FLOAT, {"batch", "seq"});
  m.Input("train", onnx::TensorProto::BOOL, {});
  m.Output("y", onnx::TensorProto::FLOAT, {"batch", "seq"});
  m.Node("Dropout", {"x", "", "train"}, {"d"}, "the_dropout");
  m.Node("Relu", {"d"}, {"y"}, "the_relu");
  return WriteModel("training_dropout.onnx", m.Bytes());
}

// A model whose 64 MiB weight is in an external data file: `check`,
// `inspect` and `prove` copy it file to file into the weights dir, so their peak RSS
// stays at least 48 MiB under the same command's with --weights-in-memory
// (which reads it into the heap), and the verdicts are the same.
TEST(CheckCliTest, ExternalWeightsGoFileToFileNotThroughMemory) {
  const std::filesystem::path dir = std::filesystem::current_path() / (std::to_string(getpid()) + "_check_external");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  constexpr int64_t kRows = int64_t{1} << 22;  // w: f32[kRows, 4], 64 MiB
  OnnxTestModel m(17);
  m.Input("x", onnx::TensorProto::FLOAT, {"n", std::to_string(kRows)});
  m.ExternalFloatInitializer("w", {kRows, 4}, "w.bin");
  {
    std::ofstream data(dir / "w.bin", std::ios::binary);
    const std::vector<float> row(1 << 16, 0.5f);
    for (int64_t i = 0; i < kRows * 4; i += static_cast<int64_t>(row.size())) {
      data.write(reinterpret_cast<const char*>(row.data()), static_cast<std::streamsize>(row.size() * sizeof(float)));
    }
  }
  m.Node("MatMul", {"x", "w"}, {"y"}, "the_matmul");
  m.Output("y", onnx::TensorProto::FLOAT, {"n", "4"});
  const std::string model = (dir / "model.onnx").string();
  std::ofstream(model, std::ios::binary) << m.Bytes();
  const std::string weights = (dir / "weights").string();
  for (const char* command : {"check", "inspect", "prove"}) {
    SCOPED_TRACE(command);
    // prove compiles too (no cache: the same work both times).
    const std::string no_cache = std::string(command) == "prove" ? " --no-cache" : "";
    std::vector<std::string> memory_args = {command, model, "--weights-in-memory"};
    std::vector<std::string> file_args = {command, model, "--weights-dir", weights};
    if (!no_cache.empty()) memory_args.push_back("--no-cache"), file_args.push_back("--no-cache");
    const long in_memory = shapeshift::testing::PeakRssKibOf(memory_args);
    const long in_file = shapeshift::testing::PeakRssKibOf(file_args);
    ASSERT_GT(in_memory, 0);
    ASSERT_GT(in_file, 0);
    EXPECT_GT(in_memory - in_file, 48 * 1024) << in_memory << " KiB in memory, " << in_file << " KiB in the file";
    CliResult a =
        shapeshift::testing::RunShapeshift(std::string(command) + " " + model + " --weights-in-memory" + no_cache);
    CliResult b = shapeshift::testing::RunShapeshift(std::string(command) + " " + model + " --weights-dir " + weights +
                                                     no_cache);
    EXPECT_EQ(a.exit_code, 0) << a.output;
    EXPECT_EQ(a.output, b.output);
  }
  CliResult both = shapeshift::testing::RunShapeshift("check " + model + " --weights-in-memory --weights-dir " + weights,
                                                      "2>&1");
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_THAT(both.output, HasSubstr("are exclusive"));
  std::filesystem::remove_all(dir);
}

TEST(CheckCliTest, ACompilableModelPassesEveryTier) {
  CliResult r = shapeshift::testing::RunShapeshift("check " + Data("models/tiny_bert_opset14.onnx"), "2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("polymorphic tier (--policy polymorphic, auto): compilable"));
  EXPECT_THAT(r.output, HasSubstr("bucketed tier at batch=7 sequence=7"));
  EXPECT_THAT(r.output, HasSubstr("static tier at batch=7 sequence=7"));
  EXPECT_THAT(r.output, HasSubstr("verdict: compilable under every policy"));
  EXPECT_THAT(r.output, HasSubstr("domain:"));
}

TEST(CheckCliTest, AModelWithoutALoweringIsRefusedNamingTheNodeBeforeAnyCompile) {
  const std::string path = TrainingDropoutModel();
  CliResult r = shapeshift::testing::RunShapeshift("check " + path, "2>&1");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("NOT compilable"));
  EXPECT_THAT(r.output, HasSubstr("node 'the_dropout' (Dropout): op Dropout is compiled only at inference"));
  EXPECT_THAT(r.output, Not(HasSubstr("the_relu")));
  EXPECT_THAT(r.output, HasSubstr("verdict: NOT compilable under the default policy (auto)"));
  // inspect no longer says "none" for a model run cannot compile.
  CliResult inspect = shapeshift::testing::RunShapeshift("inspect " + path, "2>&1");
  EXPECT_EQ(inspect.exit_code, 1) << inspect.output;
  EXPECT_THAT(inspect.output, HasSubstr("compiled lowering: polymorphic tier"));
  EXPECT_THAT(inspect.output, HasSubstr("node 'the_dropout' (Dropout)"));
  // and run refuses it the same way (the check is not a second opinion).
  CliResult run = shapeshift::testing::RunShapeshift("run " + path + " --no-cache", "2>&1");
  EXPECT_NE(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("the_dropout"));
}

TEST(CheckCliTest, JsonNamesEveryProblem) {
  CliResult r = shapeshift::testing::RunShapeshift("check --json " + TrainingDropoutModel(), "2>/dev/null");
  EXPECT_EQ(r.exit_code, 1);
  nlohmann::json j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["importable"], true);
  EXPECT_EQ(j["compilable_default_policy"], false);
  ASSERT_EQ(j["tiers"].size(), 3u);
  EXPECT_EQ(j["tiers"][0]["tier"], "polymorphic");
  EXPECT_EQ(j["tiers"][0]["problems"][0]["node"], "the_dropout");
  EXPECT_EQ(j["tiers"][0]["problems"][0]["op_type"], "Dropout");
  EXPECT_EQ(j["domain"]["seq"]["max"], 65536);
}

TEST(CheckCliTest, ModelImpliedRangesAreTheDomain) {
  CliResult r =
      shapeshift::testing::RunShapeshift("check " + Data("models/bert-base-torchscript/model.onnx"), "2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("sequence in [1, 512]"));
  EXPECT_THAT(r.output, HasSubstr("dim 'sequence' limited to 1..512"));
}

TEST(CheckCliTest, UnimportableUnreadableAndBadUsage) {
  OnnxTestModel conv;
  conv.Input("x", onnx::TensorProto::FLOAT, {"n", "1", "4", "4"});
  conv.Output("y", onnx::TensorProto::FLOAT, {"", "", "", ""});
  conv.FloatInitializer("w", {1, 1, 1, 1}, {1.0f});
  conv.Node("Conv", {"x", "w"}, {"y"}, "the_conv");
  CliResult r = shapeshift::testing::RunShapeshift("check " + WriteModel("conv.onnx", conv.Bytes()), "2>&1");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("NOT importable"));
  EXPECT_THAT(r.output, HasSubstr("Conv"));
  EXPECT_EQ(shapeshift::testing::RunShapeshift("check /nonexistent/model.onnx").exit_code, 2);
  EXPECT_EQ(shapeshift::testing::RunShapeshift("check").exit_code, 2);
  EXPECT_EQ(shapeshift::testing::RunShapeshift("check a.onnx b.onnx").exit_code, 2);
  EXPECT_EQ(shapeshift::testing::RunShapeshift("check " + Data("models/tiny_bert_opset14.onnx") + " --bogus").exit_code, 2);
}

}  // namespace
}  // namespace shapeshift
