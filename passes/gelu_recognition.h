// GELU recognition: rewrites the two GELU decompositions exporters produce,
//
//   erf:  x * 0.5 * (1 + erf(x / √2))                 (x/√2 also as x * 0.7071…)
//   tanh: 0.5 * x * (1 + tanh(√(2/π) * (x + 0.044715 * x³)))   (x³ as Pow(x, 3) or x*x*x)
//
// in any association and operand order of the products, into one
// Gelu(x) {approximate = "none" | "tanh"} node (ONNX opset 20 semantics; the
// interpreter runs it at every opset: a shapeshift extension below 20, see
// graph/ops/elementwise.cc).
//
// Why a rewrite and not a side record: with the op in the graph, fusion sees
// one node it can absorb into a matmul epilogue (a oneDNN post-op) and an
// elementwise kernel computes one gelu instead of seven ops, while the
// optimized graph stays the single source of truth the interpreter checks.
// Only exact matches are rewritten: every intermediate must be used only
// inside the pattern, and x must be f32.
//
// Then every Gelu (recognized or in the model) that reads a Reshape of a
// MatMul's or Gemm's output, the reshape read by it alone, moves above the
// reshape: Gelu(Reshape(m)) → Reshape(Gelu(m)). GPT-2's Conv1D flattens the
// rows for its Gemm and splits them back before the activation; moved, the
// GELU is the GEMM's epilogue instead of a pass over the activations.
#ifndef SHAPESHIFT_PASSES_GELU_RECOGNITION_H_
#define SHAPESHIFT_PASSES_GELU_RECOGNITION_H_

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "shapes/shape_env.h"

namespace shapeshift::passes {

// True when some GELU was rewritten.
absl::StatusOr<bool> RecognizeGelu(Graph& graph, ShapeEnv& env);

}  // namespace shapeshift::passes

#endif  // SHAPESHIFT_PASSES_GELU_RECOGNITION_H_
