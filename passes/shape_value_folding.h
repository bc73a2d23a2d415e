// Shape-value folding: removes runtime shape arithmetic.
//
// Shape inference already knows the elements of every small integer tensor
// computed from shapes (`Shape(x)` → {batch, seq, 768}; a Concat of
// Unsqueezed Gathers of it → {batch, seq, 12, 64}). This pass uses that:
//  1. a computed value whose elements are all constants becomes a constant;
//  2. a Reshape whose target mentions symbols gets an equivalent constant
//     target, using ONNX's 0 ("copy this input dim") and -1 ("infer") where
//     the env proves the output dim equals the input dim (a question with
//     provenance "shape-value-folding"); an Expand target likewise, using 1
//     for dims that keep the input's size.
//  3. a one-element shape value that a runtime node reads as data (GPT-2's
//     position offset `past_sequence` added to a Range) becomes a
//     one-element Range generator, computed by the kernel from the dims.
// The Shape→Gather→Concat chains that fed them become dead (DCE removes
// them). What remains are shape operands whose elements are symbolic and
// have no constant encoding (a Range limit of `seq`, a Slice end of
// `past + seq`): they stay as compile-time shape values; the fusion plan
// computes nothing for them and lowering reads their elements().
#ifndef SHAPESHIFT_PASSES_SHAPE_VALUE_FOLDING_H_
#define SHAPESHIFT_PASSES_SHAPE_VALUE_FOLDING_H_

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "shapes/shape_env.h"

namespace shapeshift::passes {

// True when something was rewritten.
absl::StatusOr<bool> FoldShapeValues(Graph& graph, ShapeEnv& env);

}  // namespace shapeshift::passes

#endif  // SHAPESHIFT_PASSES_SHAPE_VALUE_FOLDING_H_
