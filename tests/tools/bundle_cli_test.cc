// `shapeshift compile ... -o X.ssb`, `run X.ssb`, `prove --bundle X.ssb`:
// the bundle serves with 0 compiles and matches the interpreter; prove
// re-checks the certificate and fails on a tampered file; a signed bundle
// needs its key; flags that would change a bundle are refused.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "runtime/bundle/bundle.h"
#include "runtime/bundle/bundle_file.h"
#include "tests/runtime/runtime_test_util.h"
#include "tests/tools/cli_test_util.h"

namespace {

using ::testing::HasSubstr;
using shapeshift::testing::ProcessTempPath;
using shapeshift::testing::RunShapeshift;

std::string Compile(const std::string& name, const std::string& extra) {
  const std::string path = ProcessTempPath(name);
  shapeshift::testing::CliResult r = RunShapeshift(
      "compile builtin:bert --dim batch=1..2 --dim seq=1..32 --no-cache -o " + path + " " + extra, "2>&1");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return path;
}

TEST(BundleCliTest, CompileRunAndProveABundle) {
  const std::string bundle = Compile("bert.ssb", "--policy polymorphic --json");
  shapeshift::testing::CliResult run =
      RunShapeshift("run " + bundle + " --input input_ids=2x11 --check --json --repeats 1 --no-cache");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  nlohmann::json j = nlohmann::json::parse(run.output);
  EXPECT_EQ(j["compiles"], 0);
  EXPECT_EQ(j["llvm_compiles"], 0);
  EXPECT_EQ(j["cache_loads"], 1);
  EXPECT_TRUE(j["check_passed"].get<bool>());
  EXPECT_EQ(j["policy"], "polymorphic");

  shapeshift::testing::CliResult prove = RunShapeshift("prove --bundle " + bundle, "2>&1");
  EXPECT_EQ(prove.exit_code, 0) << prove.output;
  EXPECT_THAT(prove.output, HasSubstr("covered\n"));
  EXPECT_THAT(prove.output, HasSubstr("check exactly the certified guards"));
}

// A bundle's weights are read from its file like a model's external data:
// into the weights dir `run` and `prove --bundle` are given (the session's
// too, which gives packed weights' pages back), or into memory.
TEST(BundleCliTest, RunAndProveTakeTheBundlesWeightsIntoTheWeightsDir) {
  const std::string bundle = Compile("weights.ssb", "--policy polymorphic");
  const std::string dir = ProcessTempPath("bundle_weights");
  shapeshift::testing::CliResult in_dir = RunShapeshift(
      "run " + bundle + " --input input_ids=1x7 --check --json --repeats 1 --no-cache --weights-dir " + dir);
  ASSERT_EQ(in_dir.exit_code, 0) << in_dir.output;
  nlohmann::json j = nlohmann::json::parse(in_dir.output);
  EXPECT_EQ(j["weights"]["dir"], dir);
  EXPECT_EQ(j["compiles"], 0);
  EXPECT_TRUE(j["check_passed"].get<bool>());
  shapeshift::testing::CliResult in_memory =
      RunShapeshift("run " + bundle + " --input input_ids=1x7 --check --json --repeats 1 --no-cache --weights-in-memory");
  ASSERT_EQ(in_memory.exit_code, 0) << in_memory.output;
  EXPECT_EQ(nlohmann::json::parse(in_memory.output)["weights"]["dir"], "");
  for (const std::string& weights : {"--weights-dir " + dir, std::string("--weights-in-memory")}) {
    shapeshift::testing::CliResult prove = RunShapeshift("prove --bundle " + bundle + " " + weights, "2>&1");
    EXPECT_EQ(prove.exit_code, 0) << weights << ": " << prove.output;
    EXPECT_THAT(prove.output, HasSubstr("check exactly the certified guards")) << weights;
  }
}

// Two processes compiling the same model write the same bytes: the lowering
// walks ordered maps, never a hash map whose order follows abseil's
// per-process seed (the layer norm kernels' object code differed between
// runs until 2026-12-06, so no two bundles of BERT were equal).
TEST(BundleCliTest, TwoProcessesCompileTheSameBundleByteForByte) {
  auto bytes = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  const std::string first = bytes(Compile("repro-1.ssb", "--policy polymorphic"));
  const std::string second = bytes(Compile("repro-2.ssb", "--policy polymorphic"));
  ASSERT_FALSE(first.empty());
  EXPECT_TRUE(first == second) << "bundles of " << first.size() << " and " << second.size() << " bytes differ";
}

// A decoder with past key/values: its mask is [batch, past_sequence +
// sequence] (a derived dim the bundle's ONNX records as a named sum) and its
// domain holds the relation past_sequence + sequence <= 1024, which the
// bundle's certificate covers and its requests are checked against.
TEST(BundleCliTest, ADecoderWithPastCompilesServesAndProvesFromABundle) {
  const std::string model =
      std::string(SHAPESHIFT_SOURCE_DIR) + "/tests/data/models/gpt2-past-torchscript/";
  const std::string bundle = ProcessTempPath("gpt2-past.ssb");
  shapeshift::testing::CliResult compiled =
      RunShapeshift("compile " + model + "model.onnx --dim batch=1..2 --no-cache -o " + bundle, "2>&1");
  ASSERT_EQ(compiled.exit_code, 0) << compiled.output;
  shapeshift::testing::CliResult run = RunShapeshift(
      "run " + bundle + " --inputs-from " + model + "test_data_set_1 --check --json --repeats 1 --no-cache");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  nlohmann::json j = nlohmann::json::parse(run.output);
  EXPECT_EQ(j["compiles"], 0);
  EXPECT_TRUE(j["check_passed"].get<bool>());
  shapeshift::testing::CliResult prove = RunShapeshift("prove --bundle " + bundle, "2>&1");
  EXPECT_EQ(prove.exit_code, 0) << prove.output;
  EXPECT_THAT(prove.output, HasSubstr("covered\n"));
}

// A model ONNX Runtime's optimizer rewrote (com.microsoft fused ops, expanded
// at import: graph/onnx/contrib_ops.h) is written into the bundle as a valid
// model of its own opset, and served from it.
TEST(BundleCliTest, AnOnnxRuntimeOptimizedModelCompilesIntoABundle) {
  for (const char* name : {"gpt2-torchscript-ort-optimized", "bert-base-torchscript-ort-optimized"}) {
    const std::string model = std::string(SHAPESHIFT_SOURCE_DIR) + "/tests/data/models/" + name + "/";
    const std::string bundle = ProcessTempPath(std::string(name) + ".ssb");
    shapeshift::testing::CliResult compiled =
        RunShapeshift("compile " + model + "model.onnx --dim batch=1..2 --no-cache -o " + bundle, "2>&1");
    ASSERT_EQ(compiled.exit_code, 0) << name << "\n" << compiled.output;
    shapeshift::testing::CliResult run = RunShapeshift(
        "run " + bundle + " --inputs-from " + model + "test_data_set_1 --check --json --repeats 1 --no-cache");
    ASSERT_EQ(run.exit_code, 0) << name << "\n" << run.output;
    nlohmann::json j = nlohmann::json::parse(run.output);
    EXPECT_EQ(j["compiles"], 0) << name;
    EXPECT_TRUE(j["check_passed"].get<bool>()) << name;
  }
}

// The compiler identity is a digest of the code generator's sources, not of
// one binary: a bundle the CLI compiled loads, with 0 compiles, in this test
// binary (as it does in the Python module) — built from the same tree.
TEST(BundleCliTest, ABundleFromTheCliLoadsInAnotherBinaryOfTheSameTree) {
  const std::string path = Compile("cross_binary.ssb", "--policy polymorphic");
  namespace rb = shapeshift::runtime::bundle;
  absl::StatusOr<rb::Bundle> bundle = rb::ReadBundle(path, "");
  ASSERT_TRUE(bundle.ok()) << bundle.status();
  absl::StatusOr<shapeshift::ImportedModel> model = rb::ImportBundleModel(*bundle);
  ASSERT_TRUE(model.ok()) << model.status();
  const size_t num_inputs = model->graph->inputs().size();
  auto session = rb::OpenBundleSession(*bundle, *std::move(model), {});
  ASSERT_TRUE(session.ok()) << session.status();
  std::vector<shapeshift::Tensor> inputs = shapeshift::runtime::testing::TokenInputs(2, 11, 30, 7);
  inputs.resize(num_inputs);
  ASSERT_TRUE((*session)->Run(inputs).ok());
  EXPECT_EQ((*session)->stats().dispatcher.compiles, 0);
  EXPECT_EQ((*session)->stats().dispatcher.llvm_compiles, 0);
}

TEST(BundleCliTest, ProveFailsOnATamperedBundle) {
  const std::string bundle = Compile("tamper.ssb", "--policy polymorphic");
  const std::string tampered = ProcessTempPath("tampered.ssb");
  std::filesystem::copy_file(bundle, tampered, std::filesystem::copy_options::overwrite_existing);
  {
    std::fstream f(tampered, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(std::filesystem::file_size(tampered) / 2));
    f.put('\x5a');
  }
  shapeshift::testing::CliResult prove = RunShapeshift("prove --bundle " + tampered + " --json", "2>&1");
  EXPECT_EQ(prove.exit_code, 1) << prove.output;
  nlohmann::json j = nlohmann::json::parse(prove.output);
  EXPECT_FALSE(j["verified"].get<bool>());
  EXPECT_THAT(j["problem"].get<std::string>(), HasSubstr("checksum mismatch"));
  shapeshift::testing::CliResult run = RunShapeshift("run " + tampered + " --no-cache", "2>&1");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_THAT(run.output, HasSubstr("checksum mismatch"));
}

TEST(BundleCliTest, AWarmedStaticBundleReportsItsGap) {
  const std::string trace = ProcessTempPath("warm_trace.txt");
  std::ofstream(trace) << "batch=1 seq=4\nbatch=1 seq=8\n";
  const std::string bundle = Compile("static.ssb", "--policy static --warm file:" + trace);
  shapeshift::testing::CliResult prove = RunShapeshift("prove --bundle " + bundle + " --json", "2>&1");
  EXPECT_EQ(prove.exit_code, 1) << "uncovered is a negative answer: " << prove.output;
  nlohmann::json j = nlohmann::json::parse(prove.output);
  EXPECT_TRUE(j["verified"].get<bool>()) << prove.output;
  EXPECT_EQ(j["certificate"], "uncovered");
  EXPECT_EQ(j["entries"], 2);
  shapeshift::testing::CliResult run =
      RunShapeshift("run " + bundle + " --input input_ids=1x8 --json --repeats 1 --no-cache");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(nlohmann::json::parse(run.output)["compiles"], 0);
}

TEST(BundleCliTest, ASignedBundleNeedsItsKey) {
  const std::string key = ProcessTempPath("bundle_key");
  std::ofstream(key) << "bundle-cli-test-signing-key-01234\n";
  const std::string other = ProcessTempPath("other_key");
  std::ofstream(other) << "a-different-signing-key-987654321\n";
  const std::string bundle = Compile("signed.ssb", "--policy polymorphic --sign-key-file " + key);
  shapeshift::testing::CliResult no_key = RunShapeshift("run " + bundle + " --no-cache", "2>&1");
  EXPECT_EQ(no_key.exit_code, 2);
  EXPECT_THAT(no_key.output, HasSubstr("is signed"));
  shapeshift::testing::CliResult wrong = RunShapeshift("run " + bundle + " --no-cache --sign-key-file " + other, "2>&1");
  EXPECT_EQ(wrong.exit_code, 2);
  EXPECT_THAT(wrong.output, HasSubstr("bad signature"));
  shapeshift::testing::CliResult ok =
      RunShapeshift("run " + bundle + " --no-cache --json --repeats 1 --sign-key-file " + key);
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  shapeshift::testing::CliResult prove = RunShapeshift("prove --bundle " + bundle + " --sign-key-file " + key, "2>&1");
  EXPECT_EQ(prove.exit_code, 0) << prove.output;
}

// The recorded feature set rewritten (and the checksum recomputed), as a
// bundle built on a CPU with other features presents itself: see
// runtime/bundle/README.md for why this is the honest way to test it here.
TEST(BundleCliTest, ABundleForOtherCpuFeaturesIsRefusedByRunAndProve) {
  const std::string bundle = Compile("other_cpu.ssb", "--policy polymorphic");
  namespace rb = shapeshift::runtime::bundle;
  rb::BundleContents contents = rb::DecodeBundle(rb::ReadFileBytes(bundle).value(), "", bundle).value();
  std::string features = contents.header["target"]["features"].get<std::string>();
  features[0] = features[0] == '+' ? '-' : '+';
  contents.header["target"]["features"] = features;
  ASSERT_TRUE(rb::WriteFileAtomically(bundle, rb::EncodeBundle(contents, "").value()).ok());
  shapeshift::testing::CliResult run = RunShapeshift("run " + bundle + " --no-cache", "2>&1");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_THAT(run.output, HasSubstr("built for other machine code"));
  EXPECT_THAT(run.output, HasSubstr("CPU features"));
  // The certificate is still checkable on this machine; the entries are not
  // re-created, and prove says why.
  shapeshift::testing::CliResult prove = RunShapeshift("prove --bundle " + bundle + " --json", "2>&1");
  EXPECT_EQ(prove.exit_code, 0) << prove.output;
  nlohmann::json j = nlohmann::json::parse(prove.output);
  EXPECT_FALSE(j["recreated"].get<bool>());
  EXPECT_THAT(j["not_recreated"].get<std::string>(), HasSubstr("CPU features"));
}

TEST(BundleCliTest, FlagsThatWouldChangeABundleAreRefused) {
  const std::string bundle = Compile("flags.ssb", "--policy polymorphic");
  for (const std::string flag : {"--dim seq=1..8", "--policy static", "--no-small-row-packing"}) {
    shapeshift::testing::CliResult r = RunShapeshift("run " + bundle + " --no-cache " + flag, "2>&1");
    EXPECT_EQ(r.exit_code, 2) << flag;
    EXPECT_THAT(r.output, HasSubstr("cannot change a bundle")) << flag;
  }
  shapeshift::testing::CliResult no_output = RunShapeshift("compile builtin:bert", "2>&1");
  EXPECT_EQ(no_output.exit_code, 2);
  EXPECT_THAT(no_output.output, HasSubstr("-o OUT.ssb is required"));
}

}  // namespace
