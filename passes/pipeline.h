// The optimization pipeline: the one entry point the compiler (runtime/)
// calls to turn an imported Graph into a FusionPlan with a memory plan.
//
// Order (see passes/README.md for why this order): shape-value folding,
// constant folding, algebraic simplification, CSE and DCE repeated to a
// fixpoint; LayerNorm, Softmax and GELU recognition; the matmul operand
// layout; DCE; fusion; memory planning. The graph is rewritten
// in place and stays runnable by the interpreter with the same results; the
// returned plan points into it, so the Graph must outlive the plan.
#ifndef SHAPESHIFT_PASSES_PIPELINE_H_
#define SHAPESHIFT_PASSES_PIPELINE_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "passes/fusion_plan.h"
#include "passes/memory_plan.h"
#include "shapes/shape_env.h"

namespace shapeshift::passes {

struct PipelineOptions {
  // Pass names (PipelinePassNames()) after which to print the graph (or, for
  // "fusion" and "memory-plan", the plan) to `print_stream`.
  std::vector<std::string> print_after;
  std::ostream* print_stream = nullptr;  // std::cerr when null
  // Run Graph::Verify() after every graph pass (cheap; on by default).
  bool verify_each_pass = true;
  // Constant folding leaves results larger than this many elements unfolded
  // (they would bloat the program; the kernels compute them instead).
  int64_t max_folded_elements = 1 << 16;
  // Fusion's attention groups (fusion.h, FusionOptions), and the largest
  // head dims a group may have (0: any; the device's fused kernel says).
  bool fuse_attention = true;
  int64_t attention_max_head_dim = 0;
};

struct PipelineResult {
  FusionPlan fusion;
  MemoryPlan memory;
};

// Runs every pass in order; an error names the pass and the node at fault.
absl::StatusOr<PipelineResult> RunPipeline(Graph& graph, ShapeEnv& env,
                                           const PipelineOptions& options = {});

// The names `print_after` accepts, in pipeline order (for --print-after).
std::vector<std::string> PipelinePassNames();

}  // namespace shapeshift::passes

#endif  // SHAPESHIFT_PASSES_PIPELINE_H_
