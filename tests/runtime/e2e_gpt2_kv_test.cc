// End to end, builtin:gpt2-kv (the GPT-2 decoder with a KV cache of
// symbolic length `past`): compiled ONCE for batch 1..8 × seq 1..512 ×
// past 0..511 and run at 50+ shapes — empty caches (past 0), full ones
// (past 511), single-token decode steps and random prefills — every output
// (logits and every present_key/value) matching the reference interpreter
// (rtol 1e-3, atol 1e-4), with the compile count still 1. A short greedy
// decode loop feeding the presents back as the next cache matches too.
#include <random>
#include <tuple>
#include <vector>

#include "examples/models/gpt2.h"
#include "gtest/gtest.h"
#include "runtime/session.h"
#include "tests/runtime/e2e_util.h"

namespace shapeshift::examples {
namespace {

using ::shapeshift::testing::CompiledMatchesInterpreter;
using ::shapeshift::testing::TensorsClose;

constexpr double kRtol = 1e-3;
constexpr double kAtol = 1e-4;

Gpt2Config KvConfig() {
  Gpt2Config config;  // the builtin:gpt2-kv defaults
  config.kv_cache = true;
  return config;
}

std::unique_ptr<runtime::Session> Compile(const Gpt2Config& config) {
  absl::StatusOr<ImportedModel> model = BuildGpt2(config);
  EXPECT_TRUE(model.ok()) << model.status();
  if (!model.ok()) return nullptr;
  absl::StatusOr<std::unique_ptr<runtime::Session>> session =
      runtime::Session::Create(runtime::ModelSource::Built(std::move(model->graph), std::move(model->env)));
  EXPECT_TRUE(session.ok()) << session.status();
  return session.ok() ? *std::move(session) : nullptr;
}

TEST(E2eGpt2KvTest, OneCompileServesFiftyShapesMatchingTheInterpreter) {
  Gpt2Config config = KvConfig();
  std::unique_ptr<runtime::Session> session = Compile(config);
  ASSERT_NE(session, nullptr);
  absl::StatusOr<ImportedModel> reference = BuildGpt2(config);
  ASSERT_TRUE(reference.ok()) << reference.status();

  // (batch, seq, past)
  std::vector<std::tuple<int64_t, int64_t, int64_t>> shapes = {
      {1, 1, 0},  {1, 2, 0},   {1, 1, 1},  {2, 1, 511}, {1, 1, 510}, {8, 1, 3},
      {1, 7, 0},  {3, 13, 17}, {1, 31, 97}, {2, 1, 128}, {1, 512, 0}, {1, 2, 509}};
  std::mt19937_64 rng(5);
  while (shapes.size() < 52) {
    int64_t batch = std::uniform_int_distribution<int64_t>(1, 4)(rng);
    bool decode_step = std::uniform_int_distribution<int>(0, 1)(rng) == 0;
    int64_t seq = decode_step ? 1 : std::uniform_int_distribution<int64_t>(1, 32)(rng);
    int64_t past = std::uniform_int_distribution<int64_t>(0, 511)(rng);
    shapes.emplace_back(batch, seq, past);
  }
  uint64_t seed = 900;
  for (auto [batch, seq, past] : shapes) {
    EXPECT_TRUE(CompiledMatchesInterpreter(*session, *reference->graph, MakeGpt2Inputs(config, batch, seq, past, seed++),
                                           kRtol, kAtol))
        << "batch " << batch << ", seq " << seq << ", past " << past;
  }
  EXPECT_EQ(session->stats().compiles, 1);
  EXPECT_EQ(session->stats().recompiles, 0);
}

TEST(E2eGpt2KvTest, GreedyDecodeLoopMatchesTheInterpreter) {
  Gpt2Config config = KvConfig();
  config.layers = 2;
  std::unique_ptr<runtime::Session> session = Compile(config);
  ASSERT_NE(session, nullptr);
  absl::StatusOr<ImportedModel> reference = BuildGpt2(config);
  ASSERT_TRUE(reference.ok()) << reference.status();

  std::vector<Tensor> inputs = MakeGpt2Inputs(config, 1, 6, 0, 3);  // prefill 6 tokens, empty cache
  for (int step = 0; step < 8; ++step) {
    absl::StatusOr<std::vector<Tensor>> got = session->Run(inputs);
    absl::StatusOr<std::vector<Tensor>> want = Interpret(*reference->graph, inputs);
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_TRUE(want.ok()) << want.status();
    for (size_t i = 0; i < got->size(); ++i) {
      ASSERT_TRUE(TensorsClose((*got)[i], (*want)[i], kRtol, kAtol)) << "step " << step << ", output " << i;
    }
    // The next token: argmax of the interpreter's last-position logits.
    const Tensor& logits = (*want)[0];
    int64_t positions = logits.shape()[1];
    const float* last = logits.data<float>() + (positions - 1) * config.vocab;
    int64_t next = std::max_element(last, last + config.vocab) - last;
    inputs = {Tensor::FromVector(DType::kI64, {1, 1}, std::vector<int64_t>{next})};
    for (size_t i = 1; i < want->size(); ++i) inputs.push_back((*want)[i]);
  }
  EXPECT_EQ(session->stats().compiles, 1);
}

}  // namespace
}  // namespace shapeshift::examples
