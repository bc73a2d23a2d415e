// Split-to-slices: a Split with static part sizes becomes one Slice per
// output.
//
// Why: GPT-2's fused QKV projection is split into query, key and value along
// the hidden axis. A Slice is a group kind the fusion plan and lowering
// already handle (a strided copy with normalized bounds), so rewriting
// keeps one lowering for "take a sub-range" instead of two. Splits whose
// outputs are graph outputs keep their names and are left alone, as are
// splits with symbolic part sizes.
#ifndef SHAPESHIFT_PASSES_SPLIT_TO_SLICES_H_
#define SHAPESHIFT_PASSES_SPLIT_TO_SLICES_H_

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "shapes/shape_env.h"

namespace shapeshift::passes {

// True when something was rewritten.
absl::StatusOr<bool> SplitToSlices(Graph& graph, ShapeEnv& env);

}  // namespace shapeshift::passes

#endif  // SHAPESHIFT_PASSES_SPLIT_TO_SLICES_H_
