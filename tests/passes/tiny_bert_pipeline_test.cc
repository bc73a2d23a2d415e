// The whole pipeline on real torch-exported graphs: after it, the graph has
// LayerNormalization nodes (recognized at opset 14), GELU is found (absorbed
// into the FFN matmul), no Shape node is computed at runtime, and the
// interpreter running the optimized graph still reproduces the expected
// outputs — the passes preserve semantics.
#include <cmath>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "graph/interpreter.h"
#include "graph/onnx/importer.h"
#include "graph/tensor_proto.h"
#include "gtest/gtest.h"
#include "passes/pipeline.h"

namespace shapeshift::passes {
namespace {

std::string DataPath(const std::string& name) {
  return std::string(SHAPESHIFT_SOURCE_DIR) + "/tests/data/models/" + name;
}

int CountOps(const Graph& graph, const std::string& op) {
  int n = 0;
  for (const Node* node : graph.nodes()) n += node->op_type() == op;
  return n;
}

class TinyBertPipelineTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    ImportOptions options;
    options.dim_ranges["batch"] = {1, 8};
    options.dim_ranges["sequence"] = {1, 128};
    absl::StatusOr<ImportedModel> model = ImportOnnxFile(DataPath(GetParam()), options);
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = *std::move(model);
    std::ostringstream printed;
    PipelineOptions popts;
    popts.print_after = {"fusion"};
    popts.print_stream = &printed;
    absl::StatusOr<PipelineResult> result = RunPipeline(*model_.graph, *model_.env, popts);
    ASSERT_TRUE(result.ok()) << result.status();
    result_ = *std::move(result);
    printed_ = printed.str();
  }

  ImportedModel model_;
  PipelineResult result_;
  std::string printed_;
};

TEST_P(TinyBertPipelineTest, RecognizesLayerNormAndSoftmaxAndDropsDecomposition) {
  const Graph& g = *model_.graph;
  EXPECT_EQ(CountOps(g, "LayerNormalization"), 5);  // embeddings + 2 per layer
  EXPECT_EQ(CountOps(g, "ReduceMean"), 0);
  EXPECT_EQ(CountOps(g, "Identity"), 0);
  EXPECT_EQ(CountOps(g, "Softmax"), 2);
}

TEST_P(TinyBertPipelineTest, NoShapeComputationAtRuntime) {
  for (const Group& group : result_.fusion.groups) {
    for (const Node* n : group.nodes) {
      EXPECT_NE(n->op_type(), "Shape") << group.ToString();
      EXPECT_NE(n->op_type(), "Concat") << group.ToString();  // the model's only Concats build shapes
    }
  }
  // Every remaining Reshape target is a constant (shape chains folded away).
  for (const Node* n : model_.graph->nodes()) {
    if (n->op_type() == "Reshape") EXPECT_TRUE(n->input(1)->is_constant()) << n->name();
  }
}

TEST_P(TinyBertPipelineTest, FusesAttentionAndFeedForward) {
  int matmuls = 0, gelu_matmuls = 0, attention_with_mask = 0, other = 0;
  for (const Group& group : result_.fusion.groups) {
    if (group.kind == GroupKind::kMatmul) {
      ++matmuls;
      gelu_matmuls += group.matmul.activation == GeluForm::kErf;
    }
    // Q·Kᵀ, the masked softmax and P·V: one attention group per layer.
    if (group.kind == GroupKind::kAttention && group.attention.mask != nullptr) ++attention_with_mask;
    if (group.kind == GroupKind::kOther) ++other;
  }
  EXPECT_EQ(matmuls, 2 * 6);  // per layer: q, k, v, o, f1, f2
  EXPECT_EQ(gelu_matmuls, 2);
  EXPECT_EQ(attention_with_mask, 2);
  EXPECT_EQ(other, 0) << printed_;
  EXPECT_THAT(printed_, ::testing::HasSubstr("after fusion"));
}

TEST_P(TinyBertPipelineTest, OptimizedGraphReproducesExpectedOutputs) {
  for (int set = 0; set < 4; ++set) {
    std::string dir = DataPath("tiny_bert_data/test_data_set_" + std::to_string(set) + "/");
    std::vector<Tensor> inputs = {ReadTensorProtoFile(dir + "input_0.pb").value(),
                                  ReadTensorProtoFile(dir + "input_1.pb").value()};
    Tensor expected = ReadTensorProtoFile(dir + "output_0.pb").value();
    absl::StatusOr<std::vector<Tensor>> out = Interpret(*model_.graph, inputs);
    ASSERT_TRUE(out.ok()) << "set " << set << ": " << out.status();
    ASSERT_EQ((*out)[0].shape(), expected.shape());
    double max_err = 0;
    for (int64_t i = 0; i < expected.num_elements(); ++i) {
      max_err = std::max(max_err, std::abs((*out)[0].GetAsDouble(i) - expected.GetAsDouble(i)));
    }
    EXPECT_LE(max_err, 1e-4) << "set " << set;
  }
}

TEST_P(TinyBertPipelineTest, GraphOutputKeepsItsName) {
  ASSERT_EQ(model_.graph->outputs().size(), 1u);
  EXPECT_EQ(model_.graph->outputs()[0]->name(), "last_hidden_state");
}

INSTANTIATE_TEST_SUITE_P(Opsets, TinyBertPipelineTest,
                         ::testing::Values("tiny_bert_opset14.onnx", "tiny_bert_opset17.onnx"));

}  // namespace
}  // namespace shapeshift::passes
