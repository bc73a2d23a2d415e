// The pipeline on the ten torch-exported tiny models (tests/data/models):
// the exporter idioms that would need data-dependent addressing or a scan
// are gone (gather-as-view, uniform-gather, cumsum-as-matmul,
// split-to-slices), no group is `other`, and the interpreter running the
// optimized graph reproduces torch eager's outputs on a stored data set.
#include <filesystem>
#include <iterator>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "graph/interpreter.h"
#include "graph/onnx/importer.h"
#include "graph/tensor_compare.h"
#include "graph/tensor_proto.h"
#include "passes/pipeline.h"
#include "tests/real_exports.h"

namespace shapeshift::passes {
namespace {

std::string ModelDir(const std::string& name) {
  return std::string(SHAPESHIFT_SOURCE_DIR) + "/tests/data/models/" + name + "/";
}

std::vector<Tensor> ReadNumbered(const std::string& dir, const std::string& prefix) {
  std::vector<Tensor> tensors;
  for (int k = 0; std::filesystem::exists(dir + prefix + "_" + std::to_string(k) + ".pb"); ++k) {
    tensors.push_back(ReadTensorProtoFile(dir + prefix + "_" + std::to_string(k) + ".pb").value());
  }
  return tensors;
}

class RealExportsPipelineTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    ImportOptions options;
    options.dim_ranges = {{"batch", {1, 8}}, {"sequence", {1, 512}}};
    // With past, ranges every value of which some request has: MPT serves
    // past_sequence + sequence <= 512 (a relation of the domain).
    if (std::string(GetParam()).find("past") != std::string::npos) {
      options.dim_ranges["sequence"] = {1, 256};
      options.dim_ranges["past_sequence"] = {1, 256};
    }
    absl::StatusOr<ImportedModel> model = ImportOnnxFile(ModelDir(GetParam()) + "model.onnx", options);
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = *std::move(model);
    absl::StatusOr<PipelineResult> result = RunPipeline(*model_.graph, *model_.env, {});
    ASSERT_TRUE(result.ok()) << result.status();
    result_ = *std::move(result);
  }
  ImportedModel model_;
  PipelineResult result_;
};

TEST_P(RealExportsPipelineTest, NoDataDependentIdiomLeft) {
  for (const Node* n : model_.graph->nodes()) {
    const std::string& op = n->op_type();
    EXPECT_NE(op, "GatherND") << n->name();
    EXPECT_NE(op, "GatherElements") << n->name();
    EXPECT_NE(op, "CumSum") << n->name();
    EXPECT_NE(op, "Split") << n->name();
    if (op == "Gather") {
      // What remains is an embedding lookup or compile-time shape arithmetic.
      bool compile_time = n->output(0)->elements().has_value();
      EXPECT_TRUE(n->input(0)->is_constant() || compile_time) << n->name();
    }
  }
  for (const Group& group : result_.fusion.groups) EXPECT_NE(group.kind, GroupKind::kOther) << group.ToString();
}

TEST_P(RealExportsPipelineTest, OptimizedGraphReproducesTorchEager) {
  const std::string set = ModelDir(GetParam()) + "test_data_set_1/";  // batch 2, a padded row
  std::vector<Tensor> inputs = ReadNumbered(set, "input");
  std::vector<Tensor> expected = ReadNumbered(set, "output");
  absl::StatusOr<std::vector<Tensor>> out = Interpret(*model_.graph, inputs);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    ASSERT_EQ((*out)[i].shape(), expected[i].shape());
    EXPECT_LE(CompareTensors((*out)[i], expected[i]).max_abs_error, 1e-3) << "output " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Exports, RealExportsPipelineTest,
    ::testing::ValuesIn(shapeshift::testing::kRealExports), shapeshift::testing::RealExportTestName);

// The decoders of both exporters (tests/data/models): every attention
// softmax is a CausalSoftmax, and no [seq, total] mask (a bool, or an f32
// without a heads axis) is left for a kernel to build or read.
using DecoderExportsPipelineTest = RealExportsPipelineTest;

bool IsQueryKeyMask(const TensorType& t) {
  // [.., seq, total]: both trailing dims symbolic (a [batch, seq] input mask
  // has rank 2), the query dim one symbol (multi-query scores grouped by
  // key/value head, [batch, 1, heads*seq, total], are no mask).
  if (t.rank() < 3 || !t.shape[t.rank() - 2].IsSymbol() || t.shape.back().IsConst()) return false;
  return t.dtype == DType::kBool || (t.dtype == DType::kF32 && t.rank() == 4 && t.shape[1].AsConst() == 1);
}

TEST_P(DecoderExportsPipelineTest, CausalMasksBecomeIndexPredicates) {
  int causal = 0;
  for (const Node* n : model_.graph->nodes()) {
    EXPECT_NE(n->op_type(), "Softmax") << n->name();
    causal += n->op_type() == "CausalSoftmax";
  }
  EXPECT_EQ(causal, 2);  // one per layer
  for (const Group& group : result_.fusion.groups) {
    for (const Value* v : group.outputs) EXPECT_FALSE(IsQueryKeyMask(v->type())) << v->name() << ": " << v->type().ToString();
  }
  // GPT-Neo also selects its scores by a Slice of a constant [1, 1, 512,
  // 512] `bias` table, Where(table[.., T-S:T, :T], scores, min): causal in
  // the global layer 0, a band of window_size 16 in the local layer 1. It is
  // the CausalSoftmax's keep stage, so the softmax reads the matmul's scores
  // and neither the slice nor the Where runs.
  if (std::string(GetParam()).rfind("gpt-neo-", 0) != 0) return;
  std::vector<int64_t> keep_windows;
  for (const Node* n : model_.graph->nodes()) {
    EXPECT_NE(n->op_type(), "Slice") << n->name();
    if (n->op_type() != "CausalSoftmax") continue;
    EXPECT_TRUE(n->attrs().Has("keep_fill")) << n->name();
    keep_windows.push_back(n->attrs().GetInt("keep_window", 0).value());
    const Node* scores = n->input(0)->producer();
    EXPECT_TRUE(scores != nullptr && scores->op_type() == "MatMul") << n->name();
  }
  EXPECT_EQ(keep_windows, (std::vector<int64_t>{0, 16}));
  for (const Group& group : result_.fusion.groups) {
    EXPECT_FALSE(group.kind == GroupKind::kElementwise && group.elementwise.domain.size() == 4 &&
                 group.elementwise.domain[2] == group.elementwise.domain[3])
        << "a kernel over the scores: " << group.ToString();
  }
}

// Every decoder export: those without past, then kPastExports.
std::vector<const char*> DecoderExports() {
  std::vector<const char*> names = {
      "gpt2-torchscript",     "gpt2-dynamo",     "llama-torchscript",    "llama-dynamo",    "qwen2-torchscript",
      "qwen2-dynamo",         "opt-torchscript", "opt-dynamo",           "gpt-neo-torchscript", "gpt-neo-dynamo",
      "gptj-torchscript",     "gptj-dynamo",     "gpt-neox-torchscript", "gpt-neox-dynamo", "phi-torchscript",
      "phi-dynamo",           "mistral-torchscript", "mistral-dynamo",   "gemma-torchscript", "gemma-dynamo",
      "bloom-torchscript",    "bloom-dynamo",    "gpt-bigcode-torchscript", "gpt-bigcode-dynamo",
      "falcon-torchscript",   "falcon-dynamo",   "stablelm-torchscript", "stablelm-dynamo", "mpt-torchscript",
      "mpt-dynamo"};
  names.insert(names.end(), std::begin(shapeshift::testing::kPastExports), std::end(shapeshift::testing::kPastExports));
  return names;
}

INSTANTIATE_TEST_SUITE_P(Decoders, DecoderExportsPipelineTest, ::testing::ValuesIn(DecoderExports()),
                         shapeshift::testing::RealExportTestName);

// The ALiBi decoders (BLOOM: the bias from the mask's cumsum, [b·heads, 1,
// T], added to [b·heads, S, T] scores and viewed as [b, heads, S, T]; MPT:
// a slice of a constant [heads, 1, 512] table added to [b, heads, S, T]):
// each softmax group adds the bias itself, so no elementwise kernel over the
// scores runs and no [.., S, T] sum is stored (the scores the matmul writes
// and the softmax's output are the only such values).
using AlibiExportsPipelineTest = RealExportsPipelineTest;

TEST_P(AlibiExportsPipelineTest, TheBiasAddIsPartOfTheSoftmaxKernel) {
  int softmax = 0;
  for (const Group& group : result_.fusion.groups) {
    if (group.kind == GroupKind::kSoftmax) {
      ++softmax;
      EXPECT_NE(group.softmax.bias, nullptr) << group.ToString();
      EXPECT_TRUE(group.softmax.causal) << group.ToString();
      continue;
    }
    if (group.kind == GroupKind::kMatmul || group.kind == GroupKind::kView) continue;  // views alias
    for (const Value* v : group.outputs) {
      const std::vector<SymExpr>& shape = v->type().shape;
      const bool scores_sized = shape.size() >= 3 && !shape.back().IsConst() && !shape[shape.size() - 2].IsConst();
      EXPECT_FALSE(scores_sized) << group.ToString();
    }
  }
  EXPECT_EQ(softmax, 2);  // one per layer
}

INSTANTIATE_TEST_SUITE_P(AlibiDecoders, AlibiExportsPipelineTest,
                         ::testing::Values("bloom-torchscript", "bloom-dynamo", "bloom-past-torchscript",
                                           "bloom-past-dynamo", "mpt-torchscript", "mpt-dynamo"),
                         shapeshift::testing::RealExportTestName);

// The RoPE decoders of both exporters: each rotary embedding of q and k is
// one rotary group (rotary-embedding-recognition), whole-head (Llama, Qwen2)
// or partial with its pass-through channels absorbed (GPT-J every two,
// GPT-NeoX and Phi rotate_half): no Neg, no Concat of a rotated head is left.
using RopeExportsPipelineTest = RealExportsPipelineTest;

TEST_P(RopeExportsPipelineTest, EachRotaryEmbeddingIsOneRotaryGroup) {
  int rotary = 0;
  for (const Group& group : result_.fusion.groups) {
    if (group.kind != GroupKind::kRotary) continue;
    ++rotary;
    EXPECT_EQ(group.nodes.size(), 1u) << group.ToString();
  }
  EXPECT_EQ(rotary, 4);  // q and k in each of the 2 layers
  for (const Node* n : model_.graph->nodes()) EXPECT_NE(n->op_type(), "Neg") << n->name();
}

INSTANTIATE_TEST_SUITE_P(RopeDecoders, RopeExportsPipelineTest,
                         ::testing::Values("llama-torchscript", "llama-dynamo", "llama-past-torchscript",
                                           "llama-past-dynamo", "qwen2-torchscript", "qwen2-dynamo",
                                           "qwen2-past-torchscript", "qwen2-past-dynamo", "gptj-torchscript",
                                           "gptj-dynamo", "gpt-neox-torchscript", "gpt-neox-dynamo",
                                           "phi-torchscript", "phi-dynamo", "mistral-torchscript",
                                           "mistral-dynamo", "gemma-torchscript", "gemma-dynamo",
                                           "falcon-torchscript", "falcon-dynamo", "stablelm-torchscript",
                                           "stablelm-dynamo", "mistral-past-torchscript", "mistral-past-dynamo", "gemma-past-torchscript",
                                           "gemma-past-dynamo", "phi-past-torchscript", "phi-past-dynamo",
                                           "gpt-neox-past-torchscript", "gpt-neox-past-dynamo", "stablelm-past-torchscript",
                                           "stablelm-past-dynamo", "falcon-past-torchscript", "falcon-past-dynamo"),
                         shapeshift::testing::RealExportTestName);

}  // namespace
}  // namespace shapeshift::passes
