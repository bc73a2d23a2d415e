#include "passes/pipeline.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "passes/causal_mask_recognition.h"
#include "passes/constant_folding.h"
#include "passes/cse.h"
#include "passes/cumsum_as_matmul.h"
#include "passes/dce.h"
#include "passes/fusion.h"
#include "passes/gather_as_view.h"
#include "passes/gelu_recognition.h"
#include "passes/grouped_query_matmul.h"
#include "passes/layer_norm_recognition.h"
#include "passes/matmul_layout.h"
#include "passes/matmul_operand_scale.h"
#include "passes/pass_manager.h"
#include "passes/relative_position_recognition.h"
#include "passes/rms_norm_recognition.h"
#include "passes/rotary_embedding_recognition.h"
#include "passes/shape_value_folding.h"
#include "passes/simplify.h"
#include "passes/softmax_recognition.h"
#include "passes/split_to_slices.h"
#include "passes/uniform_gather.h"

namespace shapeshift::passes {
namespace {

constexpr int kMaxCanonicalizeRounds = 8;

// Folding, simplification, CSE and DCE, repeated until nothing changes.
PassManager Canonicalization(const PassManagerOptions& options, int64_t max_folded_elements) {
  PassManager pm(options);
  pm.Add("shape-value-folding", FoldShapeValues);
  pm.Add("gather-as-view", RewriteGathersAsViews);
  pm.Add("split-to-slices", SplitToSlices);
  pm.Add("uniform-gather", RewriteUniformGathers);
  pm.Add("constant-folding", [max_folded_elements](Graph& g, ShapeEnv&) {
    return FoldConstants(g, max_folded_elements);
  });
  pm.Add("simplify", SimplifyAlgebra);
  pm.Add("cse", [](Graph& g, ShapeEnv&) { return EliminateCommonSubexpressions(g); });
  pm.Add("dce", [](Graph& g, ShapeEnv&) { return EliminateDeadCode(g); });
  return pm;
}

// Pattern recognition, then the matmul operand layout fusion relies on.
PassManager Recognition(const PassManagerOptions& options) {
  PassManager pm(options);
  pm.Add("cumsum-as-matmul", RewriteMaskCumSumAsMatmul);
  pm.Add("layer-norm-recognition", RecognizeLayerNorm);
  pm.Add("rms-norm-recognition", RecognizeRmsNorm);
  pm.Add("rotary-embedding-recognition", RecognizeRotaryEmbedding);
  pm.Add("softmax-recognition", RecognizeSoftmax);
  pm.Add("causal-mask-recognition", RecognizeCausalMask);
  pm.Add("relative-position-recognition", RecognizeRelativePositions);
  pm.Add("gelu-recognition", RecognizeGelu);
  pm.Add("matmul-operand-scale", HoistMatmulOperandScales);
  pm.Add("grouped-query-matmul", GroupQueryMatmuls);
  pm.Add("matmul-layout", SplitMatmulOperandTransposes);
  pm.Add("dce", [](Graph& g, ShapeEnv&) { return EliminateDeadCode(g); });
  return pm;
}

}  // namespace

std::vector<std::string> PipelinePassNames() {
  return {"shape-value-folding",    "gather-as-view", "split-to-slices", "uniform-gather", "constant-folding", "simplify",      "cse",    "dce",
          "cumsum-as-matmul", "layer-norm-recognition", "rms-norm-recognition", "rotary-embedding-recognition", "softmax-recognition", "causal-mask-recognition", "relative-position-recognition", "gelu-recognition", "matmul-operand-scale", "grouped-query-matmul", "matmul-layout", "fusion",
          "memory-plan"};
}

absl::StatusOr<PipelineResult> RunPipeline(Graph& graph, ShapeEnv& env, const PipelineOptions& options) {
  const std::vector<std::string> known = PipelinePassNames();
  for (const std::string& name : options.print_after) {
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      return absl::InvalidArgumentError(absl::StrCat("unknown pass '", name, "' in print_after; passes are: ",
                                                     absl::StrJoin(known, ", ")));
    }
  }
  PassManagerOptions pm_options{options.print_after, options.print_stream, options.verify_each_pass};
  if (options.verify_each_pass) {
    if (absl::Status s = graph.Verify(); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("input graph is invalid: ", s.message()));
    }
  }
  if (absl::Status s = Canonicalization(pm_options, options.max_folded_elements)
                           .RunToFixpoint(graph, env, kMaxCanonicalizeRounds);
      !s.ok()) {
    return s;
  }
  absl::StatusOr<bool> recognized = Recognition(pm_options).Run(graph, env);
  if (!recognized.ok()) return recognized.status();
  PassManager reporter(pm_options);
  PipelineResult result;
  absl::StatusOr<FusionPlan> fusion = PlanFusion(graph, env, FusionOptions{options.fuse_attention, options.attention_max_head_dim});
  if (!fusion.ok()) {
    return absl::Status(fusion.status().code(), absl::StrCat("pass 'fusion': ", fusion.status().message()));
  }
  result.fusion = *std::move(fusion);
  reporter.PrintIfRequested("fusion", result.fusion.ToString());
  absl::StatusOr<MemoryPlan> memory = PlanMemory(graph, result.fusion, env);
  if (!memory.ok()) {
    return absl::Status(memory.status().code(), absl::StrCat("pass 'memory-plan': ", memory.status().message()));
  }
  result.memory = *std::move(memory);
  reporter.PrintIfRequested("memory-plan", result.memory.ToString());
  return result;
}

}  // namespace shapeshift::passes
