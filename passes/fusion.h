// Fusion planning: groups the optimized graph's nodes into kernels.
//
// Greedy, in two phases over the topological order (XLA-style, simple and
// predictable):
//  1. Anchors. A MatMul/Gemm absorbs its epilogue forward — a Mul/Div by a
//     constant scalar (scale), an Add of a constant per-N vector (bias), a
//     Gelu node (gelu_recognition.h) and an Add of a same-shape tensor
//     (residual), in that order, each only while the running value has no
//     other reader; a B operand that is a Transpose of the last two dims
//     (read only by the matmul) becomes transpose_b. A Softmax over the last
//     axis absorbs backward an Add of a mask that broadcasts to the scores
//     and a scale by a constant scalar; a relative-position mask
//     (relative_position_recognition.h) with the nodes computing it, which
//     the matmul producing the scores then leaves to it (no residual). A LayerNormalization or
//     RMSNormalization over the last axis absorbs backward an Add of two same-shape tensors (the residual
//     sum; if the sum is read elsewhere it is also a group output). A
//     trailing-axes Reduce* absorbs forward a chain of elementwise ops over
//     its result. A RotateHalfMulAdd or RotateEveryTwoMulAdd (the fused
//     RoPEs) is a row kernel of its own. Transpose, views, Gather (embedding), Concat and Slice
//     become their own groups; anything else is kOther (a Gather or
//     GatherElements with the RelativePositionExpand and Expand computing
//     its indices from relative positions).
//  2. Elementwise. Remaining elementwise nodes are grouped consumer-first:
//     a producer joins its consumer's group when it is elementwise (or a
//     RelativePositionExpand, an index remap), every
//     runtime reader of its output is in that group, and its output has the
//     group's iteration domain (an env question, provenance "fusion").
//  3. Attention (optional). The groups of one attention — head transposes,
//     Q·Kᵀ, softmax, NaN-to-zero, ·V, output transpose — merge into one
//     kAttention group (internal/attention_groups.h says exactly which).
// Multi-use values: a value read by two groups is computed once, by its
// producer's group, stored, and read by both; no group ever recomputes a
// value another group computes. Every absorption is also checked not to
// create a cycle between groups.
#ifndef SHAPESHIFT_PASSES_FUSION_H_
#define SHAPESHIFT_PASSES_FUSION_H_

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "passes/fusion_plan.h"
#include "shapes/shape_env.h"

namespace shapeshift::passes {

struct FusionOptions {
  // Merge each attention's groups into one kAttention group
  // (internal/attention_groups.h), when its head dims are at most
  // attention_max_head_dim (0: any).
  bool fuse_attention = true;
  int64_t attention_max_head_dim = 0;
};

absl::StatusOr<FusionPlan> PlanFusion(const Graph& graph, ShapeEnv& env, const FusionOptions& options = {});

}  // namespace shapeshift::passes

#endif  // SHAPESHIFT_PASSES_FUSION_H_
