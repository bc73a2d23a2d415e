// End to end, builtin:gpt2 (examples/models/gpt2.h at its default size,
// logits over an 8192-token vocabulary): compiled ONCE for batch 1..8 ×
// seq 1..512 and run at 50+ shapes — edges (1, 2, primes, 511, 512) and
// random ones — every output matching the reference interpreter on the model
// as built (rtol 1e-3, atol 1e-4), with the compile count still 1.
#include <random>
#include <utility>
#include <vector>

#include "examples/models/gpt2.h"
#include "gtest/gtest.h"
#include "runtime/session.h"
#include "tests/runtime/e2e_util.h"

namespace shapeshift::examples {
namespace {

using ::shapeshift::testing::CompiledMatchesInterpreter;

constexpr double kRtol = 1e-3;
constexpr double kAtol = 1e-4;
// The LM head dominates the interpreter's time: keep random shapes small.
constexpr int64_t kMaxRandomTokens = 128;

TEST(E2eGpt2Test, OneCompileServesFiftyShapesMatchingTheInterpreter) {
  Gpt2Config config;  // the builtin:gpt2 defaults
  absl::StatusOr<ImportedModel> compiled = BuildGpt2(config);
  absl::StatusOr<ImportedModel> reference = BuildGpt2(config);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  ASSERT_TRUE(reference.ok()) << reference.status();
  absl::StatusOr<std::unique_ptr<runtime::Session>> session = runtime::Session::Create(
      runtime::ModelSource::Built(std::move(compiled->graph), std::move(compiled->env)));
  ASSERT_TRUE(session.ok()) << session.status();

  std::vector<std::pair<int64_t, int64_t>> shapes = {{1, 1},  {1, 2},  {2, 1},   {8, 1},  {1, 5},
                                                     {3, 11}, {2, 29}, {1, 127}, {1, 511}, {1, 512}};
  std::mt19937_64 rng(77);
  while (shapes.size() < 52) {
    int64_t batch = std::uniform_int_distribution<int64_t>(1, 8)(rng);
    int64_t seq = std::uniform_int_distribution<int64_t>(1, kMaxRandomTokens / batch)(rng);
    shapes.emplace_back(batch, seq);
  }
  uint64_t seed = 300;
  for (auto [batch, seq] : shapes) {
    EXPECT_TRUE(CompiledMatchesInterpreter(**session, *reference->graph, MakeGpt2Inputs(config, batch, seq, 0, seed++),
                                           kRtol, kAtol))
        << "batch " << batch << ", seq " << seq;
  }
  EXPECT_EQ((*session)->stats().compiles, 1);
  EXPECT_EQ((*session)->stats().recompiles, 0);
}

}  // namespace
}  // namespace shapeshift::examples
