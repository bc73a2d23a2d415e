// LayerNorm recognition: rewrites the decomposed layer norm exporters emit
//
//   mean = ReduceMean(x, last axis); d = x - mean
//   var  = ReduceMean(Pow(d, 2) or d*d, last axis)
//   y    = d / Sqrt(var + eps) [* gamma] [+ beta]
//
// into one LayerNormalization(x, gamma, beta) {axis=-1, epsilon=eps} node
// (ONNX opset 17 semantics; the interpreter runs it).
//
// Why: as ten nodes it is two reductions and five elementwise passes over
// the activations; as one node it is one fused kernel (one read of x, one
// write of y). The torch exporter at opset < 17 always decomposes it.
// Only exact matches are rewritten: every intermediate must be used only
// inside the pattern, gamma and beta must be constants of the normalized
// size, and eps a constant scalar.
#ifndef SHAPESHIFT_PASSES_LAYER_NORM_RECOGNITION_H_
#define SHAPESHIFT_PASSES_LAYER_NORM_RECOGNITION_H_

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "shapes/shape_env.h"

namespace shapeshift::passes {

// True when some layer norm was rewritten.
absl::StatusOr<bool> RecognizeLayerNorm(Graph& graph, ShapeEnv& env);

}  // namespace shapeshift::passes

#endif  // SHAPESHIFT_PASSES_LAYER_NORM_RECOGNITION_H_
