// Matmul-operand-scale: a MatMul of scalar-scaled operands becomes a scaled
// MatMul, (c1·a)·(c2·b) = (c1·c2)·(a·b).
//
// Why: torch's TorchScript export of transformers' attention scales both
// the query and the transposed key by 1/√√d before QKᵀ — two elementwise
// kernels over [batch, heads, seq, d] per layer, and the Mul between the key
// transpose and the MatMul hides the transpose from matmul-layout. Moved to
// the output, the scale is a oneDNN output scale (or the softmax's scale) in
// the fusion plan and the key transpose becomes `transpose_b`. Runs before
// matmul-layout. Only f32 constant scalars whose Mul feeds nothing else move.
#ifndef SHAPESHIFT_PASSES_MATMUL_OPERAND_SCALE_H_
#define SHAPESHIFT_PASSES_MATMUL_OPERAND_SCALE_H_

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "shapes/shape_env.h"

namespace shapeshift::passes {

// True when something was rewritten.
absl::StatusOr<bool> HoistMatmulOperandScales(Graph& graph, ShapeEnv& env);

}  // namespace shapeshift::passes

#endif  // SHAPESHIFT_PASSES_MATMUL_OPERAND_SCALE_H_
