// Common-subexpression elimination: two nodes with the same op type,
// attributes and inputs compute the same outputs, so the later one's uses
// are redirected to the earlier one; equal small constants are merged the
// same way.
//
// Why: exporters emit one Shape→Gather chain per use of a dimension and one
// scalar constant per literal; merging them shrinks the graph, and merged
// constants let later rewrites (and CSE itself, on the next round) see that
// two nodes read the same thing. Nodes are pure, so this is always sound.
#ifndef SHAPESHIFT_PASSES_CSE_H_
#define SHAPESHIFT_PASSES_CSE_H_

#include "absl/status/statusor.h"
#include "graph/graph.h"

namespace shapeshift::passes {

// Constants of up to this many elements are compared by content.
inline constexpr int64_t kMaxCseConstantElements = 4096;

// True when some use was redirected (the duplicates are left for DCE).
absl::StatusOr<bool> EliminateCommonSubexpressions(Graph& graph);

}  // namespace shapeshift::passes

#endif  // SHAPESHIFT_PASSES_CSE_H_
