// relative-position-recognition on the committed torch exports of T5's
// encoder and DeBERTa-v2 (both exporters): on the graph as imported, the
// rewrite gives bit for bit the interpreter's outputs on every stored data
// set (sequence 5, 37 with padding, 1, 13); through the whole pipeline, each
// softmax (T5) or relative-position gather (DeBERTa) computes its bias or
// indices from its loop indices, and no [.., S, S] integer tensor is stored.
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "graph/interpreter.h"
#include "graph/onnx/importer.h"
#include "gtest/gtest.h"
#include "passes/dce.h"
#include "passes/pipeline.h"
#include "passes/relative_position_recognition.h"
#include "tests/graph/imported_model_util.h"
#include "tests/real_exports.h"

namespace shapeshift::passes {
namespace {

using ::shapeshift::testing::ReadNumbered;

std::string ModelDir(const std::string& name) {
  return std::string(SHAPESHIFT_SOURCE_DIR) + "/tests/data/models/" + name + "/";
}

int CountOp(const std::vector<Node*>& nodes, const char* op) {
  int n = 0;
  for (const Node* node : nodes) n += node->op_type() == op;
  return n;
}

class RelativePositionExportsTest : public ::testing::TestWithParam<const char*> {
 protected:
  bool IsT5() const { return std::string(GetParam()).rfind("t5", 0) == 0; }
};

TEST_P(RelativePositionExportsTest, RewriteIsBitExactOnTheImportedGraph) {
  absl::StatusOr<ImportedModel> model = ImportOnnxFile(ModelDir(GetParam()) + "model.onnx");
  ASSERT_TRUE(model.ok()) << model.status();
  std::unique_ptr<Graph> original = model->graph->Clone();
  absl::StatusOr<bool> changed = RecognizeRelativePositions(*model->graph, *model->env);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(EliminateDeadCode(*model->graph).ok());
  ASSERT_TRUE(model->graph->Verify().ok()) << model->graph->Verify();
  // T5: the bias expanded once per layer's softmax; DeBERTa: the c2p and
  // p2c indices once per layer's gathers (2 layers). (Unfolded, the graph
  // may also measure an expansion: a Shape reads only its type.)
  int read = 0;
  for (const Node* n : model->graph->nodes()) {
    if (n->op_type() != "RelativePositionExpand") continue;
    bool data = false;
    for (const Use& u : n->output(0)->uses()) data = data || u.user->op_type() != "Shape";
    read += data;
  }
  EXPECT_EQ(read, IsT5() ? 2 : 4);
  int sets = 0;
  for (int set = 0; set < 8; ++set) {
    const std::string dir = ModelDir(GetParam()) + "test_data_set_" + std::to_string(set) + "/";
    if (!std::filesystem::exists(dir)) continue;
    ++sets;
    std::vector<Tensor> inputs = ReadNumbered(dir, "input");
    absl::StatusOr<std::vector<Tensor>> want = Interpret(*original, inputs);
    ASSERT_TRUE(want.ok()) << want.status();
    absl::StatusOr<std::vector<Tensor>> got = Interpret(*model->graph, inputs);
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(got->size(), want->size());
    for (size_t o = 0; o < want->size(); ++o) {
      ASSERT_EQ((*got)[o].shape(), (*want)[o].shape()) << dir;
      EXPECT_EQ(std::memcmp((*got)[o].raw(), (*want)[o].raw(), (*want)[o].byte_size()), 0)
          << dir << " output " << o << " differs from the original graph's";
    }
  }
  EXPECT_EQ(sets, 4);
}

TEST_P(RelativePositionExportsTest, KernelsReadThePositionsAtTheDifferenceOfTheirIndices) {
  absl::StatusOr<ImportedModel> model = ImportOnnxFile(ModelDir(GetParam()) + "model.onnx");
  ASSERT_TRUE(model.ok()) << model.status();
  absl::StatusOr<PipelineResult> result = RunPipeline(*model->graph, *model->env, PipelineOptions{});
  ASSERT_TRUE(result.ok()) << result.status();
  const SymExpr seq = SymExpr::Symbol("sequence");
  int readers = 0;
  for (const Group& group : result->fusion.groups) {
    const int expands = CountOp(group.nodes, "RelativePositionExpand");
    if (IsT5() && group.kind == GroupKind::kSoftmax) {
      EXPECT_EQ(expands, 1) << group.ToString();
      readers += expands;
    }
    if (!IsT5() && group.nodes.back()->op_type() == "GatherElements") {
      EXPECT_EQ(expands, 1) << group.ToString();
      readers += expands;
    }
    for (const Value* out : group.outputs) {
      int seq_dims = 0;
      for (SymExpr d : out->type().shape) seq_dims += d == seq;
      // T5's scores matmul adds no stored bias: the softmax adds it.
      if (IsT5() && group.kind == GroupKind::kMatmul && seq_dims == 2) {
        EXPECT_EQ(group.matmul.residual, nullptr) << group.ToString();
      }
      // No bucket, index or bias tensor over [S, S]: only the scores, the
      // probabilities, the gathered position scores (DeBERTa) and DeBERTa's
      // own [batch, 1, S, S] attention mask.
      if (seq_dims == 2) {
        EXPECT_TRUE(out->type().dtype == DType::kF32 || (!IsT5() && out->type().dtype == DType::kBool))
            << group.ToString();
        EXPECT_NE(out->type().shape.front(), SymExpr(1)) << group.ToString();  // no batch-free [1, .., S, S] tensor
      }
    }
  }
  EXPECT_EQ(readers, IsT5() ? 2 : 4);
}

INSTANTIATE_TEST_SUITE_P(Exports, RelativePositionExportsTest,
                         ::testing::ValuesIn(shapeshift::testing::kRelativePositionExports),
                         shapeshift::testing::RealExportTestName);

}  // namespace
}  // namespace shapeshift::passes
