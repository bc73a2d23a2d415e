// The symbolic shape rules, one per family of ops. Each reads its node's
// input types (and, for shape operands, their known elements) through the
// InferenceContext and sets the output types, asking the ShapeEnv for every
// fact it needs. The op table (graph/op_table.h) says which op uses which.
#ifndef SHAPESHIFT_GRAPH_OPS_RULES_H_
#define SHAPESHIFT_GRAPH_OPS_RULES_H_

#include "absl/status/status.h"

namespace shapeshift {

class InferenceContext;

namespace rules {

// elementwise.cc
absl::Status FloatUnary(InferenceContext& ctx);
absl::Status Gelu(InferenceContext& ctx);
absl::Status NumericUnary(InferenceContext& ctx);
absl::Status BoolUnary(InferenceContext& ctx);
absl::Status FloatPredicate(InferenceContext& ctx);
absl::Status Broadcasting(InferenceContext& ctx);
absl::Status Where(InferenceContext& ctx);
absl::Status RotateHalfMulAdd(InferenceContext& ctx);      // x*a + rotate_half(x)*b
absl::Status RotateEveryTwoMulAdd(InferenceContext& ctx);  // GPT-J's interleaved form, rotary_dim
absl::Status Clip(InferenceContext& ctx);
absl::Status Cast(InferenceContext& ctx);
absl::Status Dropout(InferenceContext& ctx);
absl::Status SoftmaxLike(InferenceContext& ctx);
absl::Status CausalSoftmax(InferenceContext& ctx);  // softmax(x + (allowed(i, j) ? m : fill))
absl::Status Trilu(InferenceContext& ctx);
absl::Status LayerNormalization(InferenceContext& ctx);  // also RMSNormalization (Y only)
// reduction.cc
absl::Status Reduce(InferenceContext& ctx);
absl::Status ArgReduce(InferenceContext& ctx);
// linalg.cc
absl::Status MatMul(InferenceContext& ctx);
absl::Status Gemm(InferenceContext& ctx);
// shape_ops.cc
absl::Status Reshape(InferenceContext& ctx);
absl::Status Flatten(InferenceContext& ctx);
absl::Status Squeeze(InferenceContext& ctx);
absl::Status Unsqueeze(InferenceContext& ctx);
absl::Status Transpose(InferenceContext& ctx);
absl::Status Expand(InferenceContext& ctx);
absl::Status Tile(InferenceContext& ctx);
absl::Status RelativePositionExpand(InferenceContext& ctx);  // out[.., i, j, ..] = x[.., j - i + S - 1, ..]
absl::Status Concat(InferenceContext& ctx);
absl::Status Split(InferenceContext& ctx);
// indexing.cc, gather_nd.cc
absl::Status Slice(InferenceContext& ctx);
absl::Status Gather(InferenceContext& ctx);
absl::Status GatherElements(InferenceContext& ctx);
absl::Status GatherND(InferenceContext& ctx);
// scatter_nd.cc
absl::Status ScatterND(InferenceContext& ctx);
// shape_values.cc
absl::Status Shape(InferenceContext& ctx);
absl::Status Size(InferenceContext& ctx);
absl::Status Constant(InferenceContext& ctx);
absl::Status ConstantOfShape(InferenceContext& ctx);
absl::Status Range(InferenceContext& ctx);

}  // namespace rules
}  // namespace shapeshift

#endif  // SHAPESHIFT_GRAPH_OPS_RULES_H_
