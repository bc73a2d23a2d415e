// The CLI door for names: node, input, output and dim names come from the
// model file (and from recompile logs) byte for byte. A corrupted or hostile
// file can carry terminal escape sequences, bidirectional overrides or bytes
// that are not UTF-8; whatever the CLI prints — reports, IR, errors, JSON —
// shows them escaped (`\x1b`), never raw, and JSON stays valid.
#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/graph/onnx_test_model.h"
#include "tests/tools/cli_test_util.h"

namespace shapeshift {
namespace {

using ::testing::HasSubstr;

// An OSC sequence that retitles the terminal, a colour change, a
// right-to-left override and two bytes that are no UTF-8.
const std::string kInput = "x\x1b]0;owned\x07";
const std::string kNode = "relu\x1b[31m";
const std::string kOutput = "y\xff\xfe";
const std::string kOverride = "\xe2\x80\xae";  // U+202E

std::string WriteModel(const std::string& name, const std::string& bytes) {
  const std::string path = testing::ProcessTempPath(name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

std::string HostileModel() {
  testing::OnnxTestModel m(17);
  m.Input(kInput, onnx::TensorProto::FLOAT, {"n", "4"}).Output(kOutput, onnx::TensorProto::FLOAT, {"n", "4"});
  m.Node("Relu", {kInput}, {kOutput}, kNode + kOverride);
  return WriteModel("hostile_names.onnx", m.Bytes());
}

// No control byte but '\n', no DEL, no byte that is not UTF-8 from these
// names, no bidirectional override: what a terminal would act on.
void ExpectNothingRaw(const std::string& text, const std::string& what) {
  for (unsigned char c : text) {
    EXPECT_FALSE((c < 0x20 && c != '\n') || c == 0x7f) << what << ": raw byte " << int{c} << " in\n" << text;
  }
  EXPECT_FALSE(absl::StrContains(text, "\xff")) << what;
  EXPECT_FALSE(absl::StrContains(text, kOverride)) << what;
}

TEST(CliUntrustedNamesHostileTest, InspectPrintsNamesEscaped) {
  testing::CliResult r = testing::RunShapeshift("inspect " + HostileModel() + " --print-ir", "2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ExpectNothingRaw(r.output, "inspect");
  EXPECT_THAT(r.output, HasSubstr("x\\x1b]0;owned\\x07"));
  EXPECT_THAT(r.output, HasSubstr("y\\xff\\xfe"));
  EXPECT_THAT(r.output, HasSubstr("relu\\x1b[31m\\u202e"));
}

TEST(CliUntrustedNamesHostileTest, ErrorMessagesQuoteNamesEscaped) {
  testing::OnnxTestModel m(17);
  m.Input("x", onnx::TensorProto::FLOAT, {"n"}).Output("y", onnx::TensorProto::FLOAT, {"n"});
  m.Node("NonZero", {"x"}, {"nz"}, "find\x1b[2J\r");  // clears the screen
  m.Node("Relu", {"x"}, {"y"});
  const std::string path = WriteModel("hostile_unsupported.onnx", m.Bytes());
  testing::CliResult inspect = testing::RunShapeshift("inspect " + path, "2>&1");
  EXPECT_EQ(inspect.exit_code, 1) << inspect.output;
  ExpectNothingRaw(inspect.output, "inspect");
  EXPECT_THAT(inspect.output, HasSubstr("find\\x1b[2J\\r"));
  testing::CliResult run = testing::RunShapeshift("run " + path + " --no-cache", "2>&1");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  ExpectNothingRaw(run.output, "run");
  EXPECT_THAT(run.output, HasSubstr("find\\x1b[2J\\r"));
}

TEST(CliUntrustedNamesHostileTest, RunAndFuzzReportsEscapeAndJsonStaysValid) {
  setenv("OMP_NUM_THREADS", "1", /*overwrite=*/0);
  const std::string model = HostileModel();
  testing::CliResult text = testing::RunShapeshift("run " + model + " --dim n=1..4 --no-cache --check", "2>&1");
  ASSERT_EQ(text.exit_code, 0) << text.output;
  ExpectNothingRaw(text.output, "run");
  EXPECT_THAT(text.output, HasSubstr("output y\\xff\\xfe: f32[1,4]"));
  // The JSON dump used to throw on a name that is not UTF-8.
  testing::CliResult json = testing::RunShapeshift("run " + model + " --dim n=1..4 --no-cache --json");
  ASSERT_EQ(json.exit_code, 0) << json.output;
  nlohmann::json j = nlohmann::json::parse(json.output, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(j.is_discarded()) << json.output;
  EXPECT_EQ(j["outputs"][0]["name"], "y\xef\xbf\xbd\xef\xbf\xbd");  // U+FFFD for each bad byte
  testing::CliResult fuzz = testing::RunShapeshift("fuzz " + model + " --dim n=1..4 --cases 20", "2>&1");
  EXPECT_EQ(fuzz.exit_code, 0) << fuzz.output;
  ExpectNothingRaw(fuzz.output, "fuzz");
}

TEST(CliUntrustedNamesHostileTest, ExplainEscapesTheLogsTexts) {
  const std::string log = testing::ProcessTempPath("hostile_names.jsonl");
  std::ofstream(log) << R"({"sequence": 1, "time": "t\u001b[1m", "trigger": "miss", "policy": "static", )"
                     << R"("symbols": [{"name": "seq\u202e", "value": 3}], "tried": [], "unsat_core": [], )"
                     << R"("new_entry": {"id": 1, "tier": "static", "guards": [{"atom": "seq == 3", )"
                     << R"("pass": "dispatcher", "node": "n\u0007\n", "reason": "pin"}]}, "compile_ms": 1.0})"
                     << "\n";
  for (const char* flags : {"", " --summary"}) {
    testing::CliResult r = testing::RunShapeshift("explain " + log + flags, "2>&1");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    ExpectNothingRaw(r.output, flags);
  }
  testing::CliResult r = testing::RunShapeshift("explain " + log, "2>&1");
  EXPECT_THAT(r.output, HasSubstr("t\\x1b[1m"));
  EXPECT_THAT(r.output, HasSubstr("seq\\u202e=3"));
  EXPECT_THAT(r.output, HasSubstr("at node 'n\\x07\\n'"));
}

}  // namespace
}  // namespace shapeshift
