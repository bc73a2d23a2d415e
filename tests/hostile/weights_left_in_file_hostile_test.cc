// Corrupted model files through the rewrite that leaves their weights in the
// file (graph/onnx/weights_left_in_file.h): its fuzz property
// (tests/fuzz/checks/weights_left_in_file_check.h) over random corruptions
// of a model with weights, and the same files imported from disk.
#include <filesystem>
#include <fstream>
#include <optional>
#include <algorithm>
#include <random>
#include <string>

#include "gtest/gtest.h"
#include "graph/onnx/importer.h"
#include "graph/onnx/weights_left_in_file.h"
#include "tests/fuzz/checks/weights_left_in_file_check.h"
#include "tests/graph/onnx_test_model.h"
#include "tests/support/temp_path.h"

namespace shapeshift {
namespace {

using testing::OnnxTestModel;

std::string Corrupt(std::string bytes, std::mt19937& rng) {
  const int edits = 1 + static_cast<int>(rng() % 3);
  for (int e = 0; e < edits && !bytes.empty(); ++e) {
    const size_t at = rng() % bytes.size();
    switch (rng() % 3) {
      case 0: bytes[at] = static_cast<char>(rng()); break;
      case 1: bytes.erase(at, 1 + rng() % 4); break;
      default: bytes.insert(at, 1, static_cast<char>(rng())); break;
    }
  }
  return bytes;
}

TEST(WeightsLeftInFileHostileTest, CorruptedModelsAreRewrittenFaithfullyOrLeftToTheParser) {
  const std::string model = testing::RawWeightsModel().Bytes();
  ASSERT_FALSE(fuzz::CheckWeightsLeftInFile(model).has_value());
  std::mt19937 rng(7);
  int rewritten = 0;
  for (int trial = 0; trial < 4000; ++trial) {
    const std::string bytes = Corrupt(model, rng);
    fuzz::Violation v = fuzz::CheckWeightsLeftInFile(bytes);
    EXPECT_FALSE(v.has_value()) << "trial " << trial << ": " << *v;
    onnx::ModelProto parsed;
    if (LeaveWeightsInFile(bytes, "m.onnx", fuzz::kFuzzWeightMinBytes) && parsed.ParseFromString(bytes)) ++rewritten;
  }
  EXPECT_GT(rewritten, 100);  // the property held where it says something, not only where the rewrite declined
}

// Corrupted model files whose weight is large enough to be left in the file
// (1 MiB), corrupted anywhere but inside the weight's bytes: the import
// answers with a model or an error naming the file, as when it parsed the
// file whole.
TEST(WeightsLeftInFileHostileTest, CorruptedModelFilesImportOrFailNamingTheFile) {
  const std::filesystem::path dir = testing::ProcessTempPath("weights_left_in_file_hostile");
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "model.onnx").string();
  OnnxTestModel m(17);
  m.Input("x", onnx::TensorProto::FLOAT, {"n", "512"});
  m.RawFloatInitializer("w", 512, 512, 0.5f).RawFloatInitializer("b", 1, 512, -1.0f);
  m.Node("MatMul", {"x", "w"}, {"xw"});
  m.Node("Add", {"xw", "b"}, {"y"});
  m.Output("y", onnx::TensorProto::FLOAT, {"n", "512"});
  const std::string model = m.Bytes();
  std::optional<ModelWithoutWeights> intact = LeaveWeightsInFile(model, "model.onnx", size_t{1} << 20);
  ASSERT_TRUE(intact.has_value());
  ASSERT_EQ(intact->weights.size(), 1u);
  const size_t weight_begin = static_cast<size_t>(intact->weights[0].offset);
  const size_t weight_end = weight_begin + static_cast<size_t>(intact->weights[0].size);
  std::mt19937 rng(11);
  int imported_ok = 0;
  for (int trial = 0; trial < 150; ++trial) {
    std::string bytes = model;
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits; ++e) {
      const size_t outside = weight_begin + (model.size() - weight_end);
      size_t at = rng() % outside;
      if (at >= weight_begin) at += weight_end - weight_begin;
      at = std::min(at, bytes.size() - 1);
      bytes[at] = static_cast<char>(rng());
    }
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
    absl::StatusOr<ImportedModel> imported = ImportOnnxFile(path);
    if (imported.ok()) {
      ++imported_ok;
      continue;
    }
    EXPECT_NE(std::string(imported.status().message()).find("model.onnx"), std::string::npos)
        << "trial " << trial << ": " << imported.status();
  }
  EXPECT_GT(imported_ok, 0);  // some corruptions (names, metadata) still make a model
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace shapeshift
