// Algebraic simplification: local rewrites that remove work without
// changing any result.
//
//   Identity(x), Dropout(x) (inference)        → x
//   x * 1, 1 * x, x / 1, x + 0, 0 + x, x - 0     → x   (when the result has x's shape)
//   Reshape(x) to x's own shape, Expand(x) to x's own shape, Cast(x) to x's type → x
//   Concat(x) (one input)                       → x
//   Reshape(Reshape(x))                         → Reshape(x)
//   Transpose(Transpose(x))                     → Transpose(x) with the composed
//                                                 permutation, or x if it is the identity
//   Reshape(Transpose(Reshape(x))), the reshapes merging and splitting back
//   leading dims the transpose keeps first      → Transpose(x) (dynamo's Kᵀ:
//                                                 [B,H,T,D] → [B*H,T,D] → [B*H,D,T] → [B,H,D,T])
//
// Why: exporters emit these freely (Identity for shared weights, Dropout in
// eval mode, reshape round trips around attention), and each one left in
// place is a kernel launch and a buffer. Whether a result "has x's shape" is
// a question for the ShapeEnv (provenance "simplify", the node, the rule):
// a broadcast by a constant can change the shape. A value that is a graph
// output is never replaced (its name is what users see).
#ifndef SHAPESHIFT_PASSES_SIMPLIFY_H_
#define SHAPESHIFT_PASSES_SIMPLIFY_H_

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "shapes/shape_env.h"

namespace shapeshift::passes {

// True when something was rewritten (dead nodes are left for DCE).
absl::StatusOr<bool> SimplifyAlgebra(Graph& graph, ShapeEnv& env);

}  // namespace shapeshift::passes

#endif  // SHAPESHIFT_PASSES_SIMPLIFY_H_
