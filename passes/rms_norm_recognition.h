// RMSNorm recognition: rewrites the decomposed RMSNorm that exporters emit
// for Llama, Qwen, Mistral, Gemma and T5,
//
//   ms = ReduceMean(Pow(x, 2) or x*x, last axis)
//   y  = x / Sqrt(ms + eps)                 or
//   y  = x * Reciprocal(Sqrt(ms + eps))     or   x * (1 / Sqrt(ms + eps))
//   [y = y * gamma]
//
// into one RMSNormalization(x, gamma) {axis=-1, epsilon=eps} node (ONNX
// opset 23 semantics; the interpreter runs it, fusion makes it one row
// kernel like LayerNormalization, absorbing the residual Add before it).
//
// Why: as six or seven nodes it is a reduction kernel and an elementwise
// kernel with the mean square stored between them, and x read twice; as one
// node it is one kernel per row. Only exact matches are rewritten: every
// intermediate must be read only inside the pattern (x itself may have other
// readers: it is the residual stream), gamma must be a constant of the
// normalized size, and eps a constant scalar. Without a gamma, the scale is
// a vector of ones.
#ifndef SHAPESHIFT_PASSES_RMS_NORM_RECOGNITION_H_
#define SHAPESHIFT_PASSES_RMS_NORM_RECOGNITION_H_

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "shapes/shape_env.h"

namespace shapeshift::passes {

// True when some RMSNorm was rewritten.
absl::StatusOr<bool> RecognizeRmsNorm(Graph& graph, ShapeEnv& env);

}  // namespace shapeshift::passes

#endif  // SHAPESHIFT_PASSES_RMS_NORM_RECOGNITION_H_
