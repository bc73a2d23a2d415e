// CumSum-as-matmul: the running count of a 0/1 mask along the last axis
// becomes a matmul with an upper-triangular 0/1 matrix.
//
// Why: RoBERTa numbers its positions as `cumsum(input_ids != pad) * mask +
// pad` (both exporters write ONNX CumSum over the sequence axis). A scan has
// no kernel here, while out[.., s] = sum_j x[.., j] * (j <= s) is a matmul
// of x (cast to f32) by U[j, s] = (j <= s), which oneDNN runs with runtime
// dims and U is an elementwise generator. Only inputs cast from bool are
// rewritten: their sums are counts below 2^24, exact in f32, so the result
// is bit-identical after the cast back. exclusive/reverse CumSums and other
// axes are left alone.
#ifndef SHAPESHIFT_PASSES_CUMSUM_AS_MATMUL_H_
#define SHAPESHIFT_PASSES_CUMSUM_AS_MATMUL_H_

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "shapes/shape_env.h"

namespace shapeshift::passes {

// True when something was rewritten.
absl::StatusOr<bool> RewriteMaskCumSumAsMatmul(Graph& graph, ShapeEnv& env);

}  // namespace shapeshift::passes

#endif  // SHAPESHIFT_PASSES_CUMSUM_AS_MATMUL_H_
