// End to end, builtin:bert (examples/models/bert.h at its default size):
// compiled ONCE for batch 1..8 × seq 1..512 and run at 50+ shapes — the
// awkward edges (1, 2, primes, 511, 512) and random ones, padded masks
// included — every output matching the reference interpreter on the model
// as built (rtol 1e-3, atol 1e-4), with the compile count still 1 at the end.
// The same model exported to ONNX and compiled from the bytes agrees too.
#include <random>
#include <utility>
#include <vector>

#include "examples/models/bert.h"
#include "graph/onnx/exporter.h"
#include "gtest/gtest.h"
#include "runtime/session.h"
#include "tests/runtime/e2e_util.h"

namespace shapeshift::examples {
namespace {

using ::shapeshift::testing::CompiledMatchesInterpreter;

constexpr double kRtol = 1e-3;
constexpr double kAtol = 1e-4;
// Random shapes stay at most this many tokens so the interpreter side of
// the test stays quick; the edge shapes below go up to seq 512.
constexpr int64_t kMaxRandomTokens = 256;

std::vector<std::pair<int64_t, int64_t>> BatchSeqShapes(int random_count, uint64_t seed) {
  std::vector<std::pair<int64_t, int64_t>> shapes = {{1, 1}, {1, 2},  {2, 1},  {8, 1},   {1, 3},  {3, 7},
                                                     {2, 13}, {1, 97}, {1, 128}, {1, 511}, {1, 512}, {8, 31}};
  std::mt19937_64 rng(seed);
  while (static_cast<int>(shapes.size()) < 12 + random_count) {
    int64_t batch = std::uniform_int_distribution<int64_t>(1, 8)(rng);
    int64_t seq = std::uniform_int_distribution<int64_t>(1, kMaxRandomTokens / batch)(rng);
    shapes.emplace_back(batch, seq);
  }
  return shapes;
}

TEST(E2eBertTest, OneCompileServesFiftyShapesMatchingTheInterpreter) {
  BertConfig config;  // the builtin:bert defaults
  absl::StatusOr<ImportedModel> compiled = BuildBert(config);
  absl::StatusOr<ImportedModel> reference = BuildBert(config);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  ASSERT_TRUE(reference.ok()) << reference.status();
  absl::StatusOr<std::unique_ptr<runtime::Session>> session = runtime::Session::Create(
      runtime::ModelSource::Built(std::move(compiled->graph), std::move(compiled->env)));
  ASSERT_TRUE(session.ok()) << session.status();

  uint64_t seed = 100;
  for (auto [batch, seq] : BatchSeqShapes(40, 2024)) {
    const uint64_t request_seed = seed++;  // one read of seed per argument list
    std::vector<Tensor> inputs = MakeBertInputs(config, batch, seq, request_seed, /*padded=*/request_seed % 2 == 0);
    EXPECT_TRUE(CompiledMatchesInterpreter(**session, *reference->graph, inputs, kRtol, kAtol))
        << "batch " << batch << ", seq " << seq;
  }
  EXPECT_EQ((*session)->stats().compiles, 1);
  EXPECT_EQ((*session)->stats().recompiles, 0);
}

TEST(E2eBertTest, ShapesOutsideTheDeclaredRangesAreRejectedWithoutRecompiling) {
  BertConfig config;
  config.layers = 1;
  config.seq = {1, 64};
  absl::StatusOr<ImportedModel> model = BuildBert(config);
  ASSERT_TRUE(model.ok()) << model.status();
  absl::StatusOr<std::unique_ptr<runtime::Session>> session =
      runtime::Session::Create(runtime::ModelSource::Built(std::move(model->graph), std::move(model->env)));
  ASSERT_TRUE(session.ok()) << session.status();
  absl::StatusOr<std::vector<Tensor>> too_long = (*session)->Run(MakeBertInputs(config, 1, 65, 1));
  ASSERT_FALSE(too_long.ok());
  EXPECT_NE(too_long.status().message().find("seq"), std::string::npos) << too_long.status();
  absl::StatusOr<std::vector<Tensor>> too_wide = (*session)->Run(MakeBertInputs(config, 9, 4, 1));
  ASSERT_FALSE(too_wide.ok());
  EXPECT_NE(too_wide.status().message().find("batch"), std::string::npos) << too_wide.status();
  EXPECT_TRUE((*session)->Run(MakeBertInputs(config, 2, 64, 1)).ok());
  EXPECT_EQ((*session)->stats().compiles, 1);
}

TEST(E2eBertTest, ExportedOnnxCompilesAndMatches) {
  BertConfig config;
  config.layers = 2;
  config.decomposed_layer_norm = true;  // torch's opset-14 form: the passes must recognize it
  absl::StatusOr<ImportedModel> model = BuildBert(config);
  ASSERT_TRUE(model.ok()) << model.status();
  absl::StatusOr<std::string> bytes = ExportOnnxBytes(*model->graph, *model->env);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  runtime::CompileOptions options;
  options.dims = {{"batch", config.batch}, {"seq", config.seq}};
  absl::StatusOr<std::unique_ptr<runtime::Session>> session =
      runtime::Session::Create(runtime::ModelSource::OnnxBytes(*bytes, "bert.onnx"), options);
  ASSERT_TRUE(session.ok()) << session.status();
  for (auto [batch, seq] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {2, 17}, {1, 200}}) {
    EXPECT_TRUE(CompiledMatchesInterpreter(**session, *model->graph, MakeBertInputs(config, batch, seq, 5, true),
                                           kRtol, kAtol))
        << "batch " << batch << ", seq " << seq;
  }
  EXPECT_EQ((*session)->stats().compiles, 1);
}

}  // namespace
}  // namespace shapeshift::examples
