// The pipeline on the built-in example models (BERT, GPT-2, GPT-2 with a KV
// cache; LayerNorm decomposed or not): every group has a fused lowering (no
// kOther), GELU lands in a matmul epilogue, and the optimized graph computes
// what the original computes at several shapes, including past = 0.
#include <cmath>
#include <string>

#include "examples/models/bert.h"
#include "examples/models/gpt2.h"
#include "graph/interpreter.h"
#include "graph/tensor_compare.h"
#include "gtest/gtest.h"
#include "passes/pipeline.h"

namespace shapeshift::passes {
namespace {

struct Shape {
  int64_t batch, seq, past;
};

// Every layer's GELU is one Gelu node (so the equivalence checks below run
// the rewritten op) absorbed into its matmul as the post-op.
void ExpectFullyFused(const Graph& graph, const PipelineResult& result, GeluForm gelu, int layers) {
  int gelu_epilogues = 0;
  for (const Group& g : result.fusion.groups) {
    EXPECT_NE(g.kind, GroupKind::kOther) << g.ToString();
    if (g.kind == GroupKind::kMatmul && g.matmul.activation == gelu) ++gelu_epilogues;
  }
  EXPECT_EQ(gelu_epilogues, layers) << result.fusion.ToString();
  int gelu_nodes = 0;
  for (const Node* n : graph.nodes()) {
    gelu_nodes += n->op_type() == "Gelu";
    EXPECT_NE(n->op_type(), "Erf") << n->name();
    EXPECT_NE(n->op_type(), "Tanh") << n->name();
  }
  EXPECT_EQ(gelu_nodes, layers);
}

void ExpectSameOutputs(const Graph& original, const Graph& optimized, const std::vector<Tensor>& inputs) {
  absl::StatusOr<std::vector<Tensor>> want = Interpret(original, inputs);
  ASSERT_TRUE(want.ok()) << want.status();
  absl::StatusOr<std::vector<Tensor>> got = Interpret(optimized, inputs);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(want->size(), got->size());
  for (size_t i = 0; i < want->size(); ++i) {
    ASSERT_EQ((*want)[i].shape(), (*got)[i].shape()) << "output " << i;
    EXPECT_LE(CompareTensors((*got)[i], (*want)[i]).max_abs_error, 1e-4) << "output " << i;
  }
}

class BertPipelineTest : public ::testing::TestWithParam<bool> {};

TEST_P(BertPipelineTest, FusedAndEquivalent) {
  examples::BertConfig config;
  config.layers = 2;
  config.hidden = 64;
  config.heads = 4;
  config.intermediate = 128;
  config.vocab = 100;
  config.decomposed_layer_norm = GetParam();
  absl::StatusOr<ImportedModel> original = examples::BuildBert(config);
  absl::StatusOr<ImportedModel> model = examples::BuildBert(config);
  ASSERT_TRUE(original.ok() && model.ok()) << original.status() << model.status();
  absl::StatusOr<PipelineResult> result = RunPipeline(*model->graph, *model->env);
  ASSERT_TRUE(result.ok()) << result.status();
  ExpectFullyFused(*model->graph, *result, GeluForm::kErf, config.layers);
  for (Shape s : {Shape{1, 1, 0}, Shape{2, 7, 0}, Shape{3, 13, 0}}) {
    SCOPED_TRACE(testing::Message() << "batch " << s.batch << " seq " << s.seq);
    ExpectSameOutputs(*original->graph, *model->graph,
                      examples::MakeBertInputs(config, s.batch, s.seq, 7, /*padded=*/true));
  }
}

INSTANTIATE_TEST_SUITE_P(LayerNormForms, BertPipelineTest, ::testing::Bool());

class Gpt2PipelineTest : public ::testing::TestWithParam<std::tuple<bool, bool>> {};

TEST_P(Gpt2PipelineTest, FusedAndEquivalent) {
  examples::Gpt2Config config;
  config.layers = 2;
  config.hidden = 64;
  config.heads = 4;
  config.vocab = 100;
  config.max_position = 64;
  config.seq = {1, 32};
  config.past = {0, 31};
  config.kv_cache = std::get<0>(GetParam());
  config.decomposed_layer_norm = std::get<1>(GetParam());
  absl::StatusOr<ImportedModel> original = examples::BuildGpt2(config);
  absl::StatusOr<ImportedModel> model = examples::BuildGpt2(config);
  ASSERT_TRUE(original.ok() && model.ok()) << original.status() << model.status();
  absl::StatusOr<PipelineResult> result = RunPipeline(*model->graph, *model->env);
  ASSERT_TRUE(result.ok()) << result.status();
  ExpectFullyFused(*model->graph, *result, GeluForm::kTanh, config.layers);
  for (Shape s : {Shape{1, 1, 0}, Shape{2, 5, 3}, Shape{1, 11, 0}, Shape{2, 1, 17}}) {
    if (!config.kv_cache && s.past > 0) continue;
    SCOPED_TRACE(testing::Message() << "batch " << s.batch << " seq " << s.seq << " past " << s.past);
    ExpectSameOutputs(*original->graph, *model->graph,
                      examples::MakeGpt2Inputs(config, s.batch, s.seq, s.past, 11));
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, Gpt2PipelineTest,
                         ::testing::Combine(::testing::Bool(), ::testing::Bool()));

}  // namespace
}  // namespace shapeshift::passes
