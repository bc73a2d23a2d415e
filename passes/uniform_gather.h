// Uniform-gather: a GatherElements from a tensor whose elements are
// all the same constant is that constant, broadcast to the result's shape.
//
// Why: RoBERTa's exports look its token types up in a registered all-zero
// buffer (`token_type_ids` [1, 514], expanded over the batch) with
// GatherElements at the position ids — data-dependent addressing with no
// kernel, for a result that is zeros whatever the positions. The rewrite is
// ConstantOfShape(Shape(indices)): an elementwise generator. The one thing
// it drops is ONNX's out-of-range error for an index beyond the buffer
// (positions stay within it for every sequence the model supports).
#ifndef SHAPESHIFT_PASSES_UNIFORM_GATHER_H_
#define SHAPESHIFT_PASSES_UNIFORM_GATHER_H_

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "shapes/shape_env.h"

namespace shapeshift::passes {

// True when something was rewritten.
absl::StatusOr<bool> RewriteUniformGathers(Graph& graph, ShapeEnv& env);

}  // namespace shapeshift::passes

#endif  // SHAPESHIFT_PASSES_UNIFORM_GATHER_H_
