// Bad input never crashes the importer: byte-level corruptions and
// truncations of valid models either import or fail with a message naming
// the source. Deterministic (fixed seed; SHAPESHIFT_TEST_SEED overrides).
#include <cstdlib>
#include <random>

#include "gmock/gmock.h"
#include "graph/onnx/importer.h"
#include "gtest/gtest.h"
#include "tests/graph/onnx_test_model.h"

namespace shapeshift {
namespace {

using ::testing::HasSubstr;

uint32_t Seed() {
  const char* env = std::getenv("SHAPESHIFT_TEST_SEED");
  return env != nullptr ? static_cast<uint32_t>(std::strtoul(env, nullptr, 10)) : 20261130u;
}

void ExpectImportsOrExplains(const std::string& bytes, ImportOptions options) {
  absl::StatusOr<ImportedModel> model = ImportOnnxBytes(bytes, options, "mutant.onnx");
  if (model.ok()) {
    EXPECT_TRUE(model->graph->Verify().ok());
  } else {
    EXPECT_THAT(std::string(model.status().message()), HasSubstr("mutant.onnx"));
  }
}

TEST(ImporterRobustnessTest, CorruptedBytesNeverCrash) {
  std::mt19937 rng(Seed());
  std::string original = testing::AttentionReshapeModel(14).Bytes();
  for (bool checker : {true, false}) {
    ImportOptions options;
    options.run_checker = checker;
    for (int trial = 0; trial < 300; ++trial) {
      std::string bytes = original;
      int flips = 1 + static_cast<int>(rng() % 4);
      for (int f = 0; f < flips; ++f) {
        bytes[rng() % bytes.size()] = static_cast<char>(rng() & 0xff);
      }
      ExpectImportsOrExplains(bytes, options);
    }
  }
}

TEST(ImporterRobustnessTest, EveryTruncationFailsCleanly) {
  std::string original = testing::AttentionReshapeModel(14).Bytes();
  ImportOptions options;
  options.run_checker = false;
  for (size_t cut = 0; cut < original.size(); cut += 7) {
    ExpectImportsOrExplains(original.substr(0, cut), options);
  }
}

}  // namespace
}  // namespace shapeshift
