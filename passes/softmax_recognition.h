// Softmax recognition: rewrites the decomposed row softmax
//
//   e = Exp(x - ReduceMax(x, last axis))   (or Exp(x))
//   y = e / ReduceSum(e, last axis)
//
// into one Softmax(x) {axis = rank-1} node.
//
// Why: decomposed it is three passes over the scores tensor (the largest
// activation in attention, [batch, heads, seq, seq]); recognized it is one
// fused kernel, and fusion can absorb the scale and mask add in front of it
// (a decoder's causal mask add is then folded into the softmax itself by
// causal-mask-recognition, causal_mask_recognition.h).
// Both forms compute the same function (the max subtraction only avoids
// overflow), so the rewrite is exact; every intermediate must be used only
// inside the pattern.
#ifndef SHAPESHIFT_PASSES_SOFTMAX_RECOGNITION_H_
#define SHAPESHIFT_PASSES_SOFTMAX_RECOGNITION_H_

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "shapes/shape_env.h"

namespace shapeshift::passes {

// True when some softmax was rewritten.
absl::StatusOr<bool> RecognizeSoftmax(Graph& graph, ShapeEnv& env);

}  // namespace shapeshift::passes

#endif  // SHAPESHIFT_PASSES_SOFTMAX_RECOGNITION_H_
