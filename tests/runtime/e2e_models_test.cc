// The example models (examples/models) checked with the reference
// interpreter alone: they build with symbolic shapes over their declared
// ranges, are deterministic, and mean what they claim — padding is masked
// out, attention is causal, and the KV-cache decoder continues a sequence
// exactly as the full decoder computes it.
#include <string>
#include <vector>

#include "examples/models/bert.h"
#include "examples/models/gpt2.h"
#include "graph/interpreter.h"
#include "gtest/gtest.h"
#include "tests/runtime/e2e_util.h"

namespace shapeshift::examples {
namespace {

using ::shapeshift::testing::AllFinite;
using ::shapeshift::testing::SliceAxis;
using ::shapeshift::testing::TensorsClose;

BertConfig SmallBert() {
  BertConfig c;
  c.layers = 2;
  c.hidden = 32;
  c.heads = 4;
  c.intermediate = 64;
  c.vocab = 97;
  c.max_position = 64;
  c.seq = {1, 64};
  return c;
}

Gpt2Config SmallGpt2(bool kv_cache) {
  Gpt2Config c;
  c.layers = 2;
  c.hidden = 32;
  c.heads = 4;
  c.vocab = 89;
  c.max_position = 128;
  c.kv_cache = kv_cache;
  c.seq = {1, 64};
  c.past = {0, 63};
  return c;
}

int CountOps(const Graph& g, const std::string& op) {
  int n = 0;
  for (const Node* node : g.nodes()) n += node->op_type() == op;
  return n;
}

TEST(ExampleModelsTest, DefaultBertIsSymbolicOverItsDeclaredRanges) {
  absl::StatusOr<ImportedModel> model = BuildBert(BertConfig{});
  ASSERT_TRUE(model.ok()) << model.status();
  const SymbolInfo* batch = model->env->FindSymbol("batch");
  const SymbolInfo* seq = model->env->FindSymbol("seq");
  ASSERT_NE(batch, nullptr);
  ASSERT_NE(seq, nullptr);
  EXPECT_EQ(batch->min, 1);
  EXPECT_EQ(batch->max, 8);
  EXPECT_EQ(seq->min, 1);
  EXPECT_EQ(seq->max, 512);
  ASSERT_EQ(model->graph->outputs().size(), 1u);
  EXPECT_EQ(model->graph->outputs()[0]->name(), "last_hidden_state");
  EXPECT_EQ(model->graph->outputs()[0]->type().ToString(), "f32[batch, seq, 256]");
  // Exporter-style reshape targets: Shape→Gather→Concat chains in every layer.
  EXPECT_GE(CountOps(*model->graph, "Shape"), 4 * 4);
  EXPECT_EQ(CountOps(*model->graph, "Softmax"), 4);
  EXPECT_EQ(CountOps(*model->graph, "Erf"), 4);
}

TEST(ExampleModelsTest, DefaultGpt2ModelsBuild) {
  absl::StatusOr<ImportedModel> gpt2 = BuildGpt2(Gpt2Config{});
  ASSERT_TRUE(gpt2.ok()) << gpt2.status();
  EXPECT_EQ(gpt2->graph->outputs()[0]->type().ToString(), "f32[batch, seq, 8192]");
  Gpt2Config kv_config;
  kv_config.kv_cache = true;
  absl::StatusOr<ImportedModel> kv = BuildGpt2(kv_config);
  ASSERT_TRUE(kv.ok()) << kv.status();
  const SymbolInfo* past = kv->env->FindSymbol("past");
  ASSERT_NE(past, nullptr);
  EXPECT_EQ(past->min, 0);
  EXPECT_EQ(past->max, 511);
  EXPECT_EQ(kv->graph->inputs().size(), 1u + 2 * 4);
  EXPECT_EQ(kv->graph->outputs().size(), 1u + 2 * 4);
}

TEST(ExampleModelsTest, DecomposedLayerNormIsTheExportersForm) {
  BertConfig c = SmallBert();
  c.decomposed_layer_norm = true;
  absl::StatusOr<ImportedModel> model = BuildBert(c);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(CountOps(*model->graph, "LayerNormalization"), 0);
  EXPECT_EQ(CountOps(*model->graph, "ReduceMean"), 2 * (1 + 2 * c.layers));
  BertConfig fused = SmallBert();
  absl::StatusOr<ImportedModel> reference = BuildBert(fused);
  ASSERT_TRUE(reference.ok()) << reference.status();
  std::vector<Tensor> inputs = MakeBertInputs(c, 2, 5, 7);
  absl::StatusOr<std::vector<Tensor>> got = Interpret(*model->graph, inputs);
  absl::StatusOr<std::vector<Tensor>> want = Interpret(*reference->graph, inputs);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_TRUE(want.ok()) << want.status();
  EXPECT_TRUE(TensorsClose((*got)[0], (*want)[0], 1e-4, 1e-5));
}

TEST(ExampleModelsTest, BertRunsAtAwkwardShapesDeterministically) {
  BertConfig c = SmallBert();
  absl::StatusOr<ImportedModel> model = BuildBert(c);
  ASSERT_TRUE(model.ok()) << model.status();
  absl::StatusOr<ImportedModel> again = BuildBert(c);
  ASSERT_TRUE(again.ok()) << again.status();
  for (auto [batch, seq] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {2, 7}, {3, 13}, {1, 64}}) {
    std::vector<Tensor> inputs = MakeBertInputs(c, batch, seq, 42, /*padded=*/true);
    absl::StatusOr<std::vector<Tensor>> out = Interpret(*model->graph, inputs);
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ(out->size(), 1u);
    EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{batch, seq, c.hidden}));
    EXPECT_TRUE(AllFinite((*out)[0]));
    absl::StatusOr<std::vector<Tensor>> repeat = Interpret(*again->graph, inputs);
    ASSERT_TRUE(repeat.ok()) << repeat.status();
    EXPECT_TRUE(TensorsClose((*repeat)[0], (*out)[0], 0, 0));
  }
}

TEST(ExampleModelsTest, BertPaddingDoesNotChangeRealTokens) {
  BertConfig c = SmallBert();
  absl::StatusOr<ImportedModel> model = BuildBert(c);
  ASSERT_TRUE(model.ok()) << model.status();
  std::vector<Tensor> full = MakeBertInputs(c, 1, 9, 3);
  std::vector<int64_t> ids(full[0].values<int64_t>().begin(), full[0].values<int64_t>().end());
  std::vector<int64_t> mask = {1, 1, 1, 1, 1, 0, 0, 0, 0};
  std::vector<Tensor> padded = {full[0], Tensor::FromVector(DType::kI64, {1, 9}, mask)};
  std::vector<int64_t> short_ids(ids.begin(), ids.begin() + 5);
  std::vector<Tensor> trimmed = {Tensor::FromVector(DType::kI64, {1, 5}, short_ids),
                                 Tensor::FromVector(DType::kI64, {1, 5}, std::vector<int64_t>(5, 1))};
  absl::StatusOr<std::vector<Tensor>> with_padding = Interpret(*model->graph, padded);
  absl::StatusOr<std::vector<Tensor>> without = Interpret(*model->graph, trimmed);
  ASSERT_TRUE(with_padding.ok()) << with_padding.status();
  ASSERT_TRUE(without.ok()) << without.status();
  EXPECT_TRUE(TensorsClose(SliceAxis((*with_padding)[0], 1, 0, 5), (*without)[0], 1e-4, 1e-5));
}

TEST(ExampleModelsTest, Gpt2IsCausal) {
  Gpt2Config c = SmallGpt2(false);
  absl::StatusOr<ImportedModel> model = BuildGpt2(c);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->graph->outputs()[0]->name(), "logits");
  EXPECT_EQ(model->graph->outputs()[0]->type().ToString(), "f32[batch, seq, 89]");
  std::vector<Tensor> full = MakeGpt2Inputs(c, 2, 9, 0, 5);
  std::vector<Tensor> prefix = {SliceAxis(full[0], 1, 0, 4)};
  absl::StatusOr<std::vector<Tensor>> long_run = Interpret(*model->graph, full);
  absl::StatusOr<std::vector<Tensor>> short_run = Interpret(*model->graph, prefix);
  ASSERT_TRUE(long_run.ok()) << long_run.status();
  ASSERT_TRUE(short_run.ok()) << short_run.status();
  EXPECT_EQ((*long_run)[0].shape(), (std::vector<int64_t>{2, 9, c.vocab}));
  EXPECT_TRUE(AllFinite((*long_run)[0]));
  EXPECT_TRUE(TensorsClose(SliceAxis((*long_run)[0], 1, 0, 4), (*short_run)[0], 1e-4, 1e-5));
}

TEST(ExampleModelsTest, Gpt2KvCacheContinuesTheFullSequence) {
  Gpt2Config full_config = SmallGpt2(false);
  Gpt2Config kv_config = SmallGpt2(true);
  absl::StatusOr<ImportedModel> full = BuildGpt2(full_config);
  absl::StatusOr<ImportedModel> kv = BuildGpt2(kv_config);
  ASSERT_TRUE(full.ok()) << full.status();
  ASSERT_TRUE(kv.ok()) << kv.status();
  ASSERT_EQ(kv->graph->outputs().size(), 1u + 2 * kv_config.layers);
  EXPECT_EQ(kv->graph->outputs()[1]->name(), "present_key_0");
  EXPECT_EQ(kv->graph->outputs()[1]->type().ToString(), "f32[batch, 4, past + seq, 8]");

  constexpr int64_t kBatch = 2, kPast = 6, kNew = 3;
  std::vector<Tensor> tokens = MakeGpt2Inputs(full_config, kBatch, kPast + kNew, 0, 11);
  auto columns = [&](int64_t lo, int64_t hi) { return SliceAxis(tokens[0], 1, lo, hi); };
  // First call: an empty cache (past = 0) and the first kPast tokens.
  std::vector<Tensor> first = MakeGpt2Inputs(kv_config, kBatch, kPast, 0, 0);
  first[0] = columns(0, kPast);
  absl::StatusOr<std::vector<Tensor>> prefill = Interpret(*kv->graph, first);
  ASSERT_TRUE(prefill.ok()) << prefill.status();
  // Second call: the presents as the cache, then the next kNew tokens.
  std::vector<Tensor> second = {columns(kPast, kPast + kNew)};
  for (size_t i = 1; i < prefill->size(); ++i) second.push_back((*prefill)[i]);
  absl::StatusOr<std::vector<Tensor>> step = Interpret(*kv->graph, second);
  ASSERT_TRUE(step.ok()) << step.status();
  EXPECT_EQ((*step)[1].shape(), (std::vector<int64_t>{kBatch, 4, kPast + kNew, 8}));

  absl::StatusOr<std::vector<Tensor>> reference = Interpret(*full->graph, tokens);
  ASSERT_TRUE(reference.ok()) << reference.status();
  EXPECT_TRUE(TensorsClose((*prefill)[0], SliceAxis((*reference)[0], 1, 0, kPast), 1e-4, 1e-5));
  EXPECT_TRUE(TensorsClose((*step)[0], SliceAxis((*reference)[0], 1, kPast, kPast + kNew), 1e-4, 1e-5));
}

TEST(ExampleModelsTest, InvalidConfigsAreErrorsNamingTheField) {
  BertConfig bert = SmallBert();
  bert.heads = 5;
  absl::StatusOr<ImportedModel> b = BuildBert(bert);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("heads"), std::string::npos) << b.status();

  Gpt2Config gpt = SmallGpt2(true);
  gpt.past = {0, 100};
  absl::StatusOr<ImportedModel> g = BuildGpt2(gpt);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("max_position"), std::string::npos) << g.status();
}

}  // namespace
}  // namespace shapeshift::examples
