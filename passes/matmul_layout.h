// MatMul operand layout: splits a Transpose feeding a MatMul's B operand
// into "the permutation that lays B out as [..., N, K]" followed by a swap
// of the last two dims.
//
// Why: oneDNN reads a transposed B for free (transpose_b), but only as a
// swap of the last two dims. Attention exporters write Kᵀ as one Transpose
// of the head-split key, perm [0, 2, 3, 1]; split into [0, 2, 1, 3] (the
// same head transpose Q and V get, so the same kernel) plus a last-two
// swap, fusion absorbs the swap into the Q·Kᵀ matmul. Runs after
// simplification (which would merge the two transposes back).
#ifndef SHAPESHIFT_PASSES_MATMUL_LAYOUT_H_
#define SHAPESHIFT_PASSES_MATMUL_LAYOUT_H_

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "shapes/shape_env.h"

namespace shapeshift::passes {

// True when some Transpose was split.
absl::StatusOr<bool> SplitMatmulOperandTransposes(Graph& graph, ShapeEnv& env);

}  // namespace shapeshift::passes

#endif  // SHAPESHIFT_PASSES_MATMUL_LAYOUT_H_
