// Gather-as-view: a Gather or GatherND whose indices are provably the
// row-major position of each element becomes a Reshape of its data.
//
// Why: Hugging Face transformers builds the padding part of the attention
// mask as `attention_mask[batch_idx, kv_idx]` over broadcast Range index
// grids. torch's TorchScript exporter writes that as
// Gather(Flatten(mask), b*seq + kv), the dynamo exporter as
// GatherND(mask, Concat(Expand(b), Expand(kv))). Both read the mask in
// order: the result is the mask itself with unit dims inserted, i.e. a view
// (no kernel, no data-dependent addressing). The pass evaluates the index
// tensor symbolically at a symbolic element position (through Range,
// Unsqueeze/Reshape views, Expand, Concat, Cast, Add/Sub/Mul/Min/Max and
// shape values) and rewrites only when the result is exactly that
// position and the element counts are proven equal (a ShapeEnv question
// with provenance "gather-as-view"). Anything else is left alone.
#ifndef SHAPESHIFT_PASSES_GATHER_AS_VIEW_H_
#define SHAPESHIFT_PASSES_GATHER_AS_VIEW_H_

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "shapes/shape_env.h"

namespace shapeshift::passes {

// True when something was rewritten.
absl::StatusOr<bool> RewriteGathersAsViews(Graph& graph, ShapeEnv& env);

}  // namespace shapeshift::passes

#endif  // SHAPESHIFT_PASSES_GATHER_AS_VIEW_H_
