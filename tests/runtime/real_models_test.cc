// The torch-exported tiny models of tests/data/models (BERT, DistilBERT,
// RoBERTa, GPT-2, GPT-2 with past key/values; TorchScript and dynamo
// exporters; made by bench/peers/export_models.py --tiny --repo-test-data,
// see tests/data/models/README.md): one Session per file, compiled once,
// reproduces every stored data set (expected outputs from torch eager) at
// their different batch/sequence/past shapes, padded masks included.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "graph/onnx/importer.h"
#include "graph/tensor_proto.h"
#include "runtime/bundle/bundle.h"
#include "runtime/session.h"
#include "tests/graph/imported_model_util.h"
#include "tests/real_exports.h"
#include "tests/runtime/runtime_test_util.h"
#include "tests/support/temp_path.h"

namespace shapeshift::runtime {
namespace {

std::string ModelDir(const std::string& name) {
  return std::string(SHAPESHIFT_SOURCE_DIR) + "/tests/data/models/" + name + "/";
}

using ::shapeshift::testing::ReadNumbered;

// The declared domain: BERT-style models have 512 positions; past lengths
// are declared only where the model has them.
std::map<std::string, DimRange> DeclaredDims(const std::string& dir) {
  std::map<std::string, DimRange> dims = {{"batch", {1, 8}}, {"sequence", {1, 512}}};
  if (dir.find("past") != std::string::npos) dims["past_sequence"] = {1, 512};
  return dims;
}

// Runs every test_data_set_N of `dir` through `session`; returns how many.
int ExpectReproducesDataSets(Session& session, const std::string& dir) {
  int sets = 0;
  for (int set = 0; set < 16; ++set) {
    const std::string set_dir = dir + "test_data_set_" + std::to_string(set) + "/";
    if (!std::filesystem::exists(set_dir)) continue;
    ++sets;
    std::vector<Tensor> inputs = ReadNumbered(set_dir, "input");
    std::vector<Tensor> expected = ReadNumbered(set_dir, "output");
    EXPECT_FALSE(inputs.empty() || expected.empty()) << set_dir;
    absl::StatusOr<std::vector<Tensor>> out = session.Run(inputs);
    EXPECT_TRUE(out.ok()) << set_dir << ": " << out.status();
    if (!out.ok()) continue;
    EXPECT_EQ(out->size(), expected.size()) << set_dir;
    for (size_t i = 0; i < std::min(expected.size(), out->size()); ++i) {
      EXPECT_EQ((*out)[i].shape(), expected[i].shape()) << set_dir << " output " << i;
      if ((*out)[i].shape() != expected[i].shape()) continue;
      double diff = testing::MaxAbsDiff((*out)[i], expected[i]);
      EXPECT_LE(diff, 1e-3) << set_dir << " output " << i;
      std::printf("%s output %zu: max abs diff %.3g\n", set_dir.c_str(), i, diff);
    }
  }
  EXPECT_GE(sets, 3) << "the data sets of " << dir << " are missing";
  EXPECT_EQ(session.stats().requests, sets);
  return sets;
}

// Runs every test_data_set_N of `dir` through one Session of dir/model.onnx.
void ExpectSessionReproducesDataSets(const std::string& dir) {
  CompileOptions options;
  options.dims = DeclaredDims(dir);
  absl::StatusOr<std::unique_ptr<Session>> session =
      Session::Create(ModelSource::OnnxFile(dir + "model.onnx"), options);
  ASSERT_TRUE(session.ok()) << session.status();
  ExpectReproducesDataSets(**session, dir);
  EXPECT_EQ((*session)->stats().compiles, 1);
}

class RealModelTest : public ::testing::TestWithParam<const char*> {};

TEST_P(RealModelTest, OneCompileReproducesEveryDataSet) { ExpectSessionReproducesDataSets(ModelDir(GetParam())); }

// GPT-2 with past: the mask's axis is past_sequence + sequence (recorded in
// the file's metadata), so a mask of any other length is refused, not read
// out of bounds.
TEST(RealModelDimsTest, MaskThatDoesNotCoverPastAndNewTokensIsRejected) {
  const std::string dir = ModelDir("gpt2-past-torchscript");
  CompileOptions options;
  options.dims = {{"batch", {1, 8}}, {"sequence", {1, 512}}, {"past_sequence", {1, 512}}};
  absl::StatusOr<std::unique_ptr<Session>> session =
      Session::Create(ModelSource::OnnxFile(dir + "model.onnx"), options);
  ASSERT_TRUE(session.ok()) << session.status();
  std::vector<Tensor> inputs = ReadNumbered(dir + "test_data_set_0/", "input");  // batch 1, seq 5, past 4
  ASSERT_EQ(inputs[1].shape(), (std::vector<int64_t>{1, 9}));
  inputs[1] = Tensor::FromVector<int64_t>(DType::kI64, {1, 8}, std::vector<int64_t>(8, 1));
  absl::StatusOr<std::vector<Tensor>> out = (*session)->Run(inputs);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("attention_mask"), std::string::npos) << out.status();
}

// The full-size exports (hundreds of MB, never in git) against ONNX Runtime:
// bench/peers/check_full_models.py writes ORT's outputs as data sets under a
// directory and runs this test with SHAPESHIFT_FULL_MODELS_DIR pointing at it.
// Without the variable there is nothing to run, and the suite has no cases.
std::vector<std::string> FullModelDirs() {
  std::vector<std::string> dirs;
  const char* root = std::getenv("SHAPESHIFT_FULL_MODELS_DIR");
  if (root == nullptr) return dirs;
  for (const auto& entry : std::filesystem::directory_iterator(root)) {
    if (std::filesystem::exists(entry.path() / "model.onnx")) dirs.push_back(entry.path().string() + "/");
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

class FullSizeModelTest : public ::testing::TestWithParam<std::string> {};

TEST_P(FullSizeModelTest, OneCompileMatchesOnnxRuntime) { ExpectSessionReproducesDataSets(GetParam()); }

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(FullSizeModelTest);
INSTANTIATE_TEST_SUITE_P(OnnxRuntimeReference, FullSizeModelTest, ::testing::ValuesIn(FullModelDirs()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = std::filesystem::path(info.param).parent_path().filename();
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

INSTANTIATE_TEST_SUITE_P(
    Exports, RealModelTest,
    ::testing::ValuesIn(shapeshift::testing::kRealExports), shapeshift::testing::RealExportTestName);

// An AOT bundle of a real export (runtime/bundle/): compiled, written, read
// back and served with 0 compiles, it reproduces the same data sets. The
// bundle holds the model as the exporter writes it, so this is the exporter
// and the importer agreeing on torch's graphs too. Every dynamo export is
// opset 18, which Debian's libonnx checker does not know: until the exporter
// used the importer's checker, none of these could be bundled.
class RealModelBundleTest : public ::testing::TestWithParam<const char*> {};

TEST_P(RealModelBundleTest, ABundleServesEveryDataSetWithZeroCompiles) {
  const std::string dir = ModelDir(GetParam());
  ImportOptions import;
  import.dim_ranges = DeclaredDims(dir);
  absl::StatusOr<ImportedModel> model = ImportOnnxFile(dir + "model.onnx", import);
  ASSERT_TRUE(model.ok()) << model.status();
  const std::string path = shapeshift::testing::ProcessTempPath(std::string(GetParam()) + ".ssb");
  bundle::BundleCompileOptions options;
  options.source = dir + "model.onnx";
  options.policy = SpecializationPolicy::kPolymorphic;
  absl::StatusOr<bundle::BundleSummary> summary = bundle::CompileBundle(*std::move(model), options, path);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->header.certificate.verdict, "covered");
  absl::StatusOr<bundle::Bundle> read = bundle::ReadBundle(path, "");
  ASSERT_TRUE(read.ok()) << read.status();
  absl::StatusOr<ImportedModel> embedded = bundle::ImportBundleModel(*read);  // its weights: from the file
  ASSERT_TRUE(embedded.ok()) << embedded.status();
  std::remove(path.c_str());
  absl::StatusOr<std::unique_ptr<Session>> session = bundle::OpenBundleSession(*read, *std::move(embedded), {});
  ASSERT_TRUE(session.ok()) << session.status();
  ExpectReproducesDataSets(**session, dir);
  EXPECT_EQ((*session)->stats().compiles, 0);
}

// The peer models' dynamo exports and three of the zoo's whose opset-18
// nodes differ: RMSNorm's ReduceMean over an axes input (Llama), Split by
// num_outputs (GPT-NeoX), ReduceL2 for a normalized embedding
// (sentence-BERT).
constexpr const char* kBundledExports[] = {"bert-base-dynamo", "distilbert-dynamo", "gpt2-dynamo",
                                           "gpt2-past-dynamo", "llama-past-dynamo", "gpt-neox-past-dynamo",
                                           "sentence-bert-dynamo"};

INSTANTIATE_TEST_SUITE_P(Exports, RealModelBundleTest, ::testing::ValuesIn(kBundledExports),
                         shapeshift::testing::RealExportTestName);

}  // namespace
}  // namespace shapeshift::runtime
