// Dead-code elimination: removes nodes none of whose outputs is read or is
// a graph output, and constants nobody reads.
//
// Why: the other passes rewrite by redirecting uses and leave the old nodes
// behind (a folded Shape→Gather→Concat chain, the ten nodes of a recognized
// LayerNorm); removing them in one place keeps every rewrite simple. Every
// op shapeshift supports is pure, so an unread node has no effect.
#ifndef SHAPESHIFT_PASSES_DCE_H_
#define SHAPESHIFT_PASSES_DCE_H_

#include "absl/status/statusor.h"
#include "graph/graph.h"

namespace shapeshift::passes {

// True when something was removed.
absl::StatusOr<bool> EliminateDeadCode(Graph& graph);

}  // namespace shapeshift::passes

#endif  // SHAPESHIFT_PASSES_DCE_H_
