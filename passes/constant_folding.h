// Constant folding: a node whose inputs are all constants is run once, at
// compile time, with the reference kernels, and its outputs become
// constants.
//
// Why: exporters leave arithmetic on weights and literals in the graph
// (Identity of a shared weight, Sqrt of a constant head size, Cast of a
// literal); computing it per request is waste, and folding it exposes the
// constant scalars and vectors the pattern matchers and fusion look for.
// Results larger than a cap stay unfolded (they would bloat the program).
#ifndef SHAPESHIFT_PASSES_CONSTANT_FOLDING_H_
#define SHAPESHIFT_PASSES_CONSTANT_FOLDING_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "graph/graph.h"

namespace shapeshift::passes {

// True when some node was folded (the node itself is left for DCE).
absl::StatusOr<bool> FoldConstants(Graph& graph, int64_t max_folded_elements);

}  // namespace shapeshift::passes

#endif  // SHAPESHIFT_PASSES_CONSTANT_FOLDING_H_
