// Lowering of one FusionPlan group (passes/fusion_plan.h) to the steps that
// compute it: generated kernels (kernel IR), oneDNN matmuls, embedding
// lookups and buffer aliases (see lowered_step.h).
//
// Why per group: the plan already decided what fuses with what; lowering
// only translates each group's semantics, so a new fusion pattern is a new
// case here, not a change to the runtime. Kernels are shape-polymorphic (dims
// are symbols bound per request), so one lowering serves every input in the
// declared domain. Every shape fact relied on is asked of the ShapeEnv.
//
// An unsupported group (kind kOther, an op the fused emitter does not know,
// an element type kernels do not handle) is an error naming the node and op.
#ifndef SHAPESHIFT_CODEGEN_LOWER_LOWER_GROUP_H_
#define SHAPESHIFT_CODEGEN_LOWER_LOWER_GROUP_H_

#include <vector>

#include "absl/status/statusor.h"
#include "codegen/lower/lowered_step.h"
#include "passes/fusion_plan.h"
#include "shapes/shape_env.h"

namespace shapeshift::codegen::lower {

absl::StatusOr<std::vector<LoweredStep>> LowerGroup(const passes::Group& group, ShapeEnv* env);

// The kernel-producing lowerings, one per group kind (lower_kernels.cc).
absl::StatusOr<KernelCall> LowerElementwise(const passes::Group& group, ShapeEnv* env);
absl::StatusOr<KernelCall> LowerSoftmax(const passes::Group& group, ShapeEnv* env);
absl::StatusOr<KernelCall> LowerLayerNorm(const passes::Group& group, ShapeEnv* env);
absl::StatusOr<KernelCall> LowerReduction(const passes::Group& group, ShapeEnv* env);
absl::StatusOr<std::vector<LoweredStep>> LowerConcat(const passes::Group& group, ShapeEnv* env);
absl::StatusOr<KernelCall> LowerSlice(const passes::Group& group, ShapeEnv* env);
// RotateHalfMulAdd, RotateEveryTwoMulAdd (rotary_kernel.cc).
absl::StatusOr<KernelCall> LowerRotary(const passes::Group& group, ShapeEnv* env);
// CumSum (scan_kernel.cc).
absl::StatusOr<KernelCall> LowerScan(const passes::Group& group, ShapeEnv* env);

// One fused attention (lower_attention.cc).
absl::StatusOr<AttentionCall> LowerAttention(const passes::Group& group);

// One Gather (any axis, any data), GatherElements, GatherND, Tile or Trilu
// node as a kernel over its output, after an
// IndexCheckCall for the gathers (a Gather or GatherElements group may also
// hold the remaps computing its indices from a relative-position vector,
// which the check then reads); ScatterND as a check, a copy and a scatter
// kernel (lower_indexing.cc). IsDataMovementOp: whether it handles the node.
bool IsDataMovementOp(const Node& node);
absl::StatusOr<std::vector<LoweredStep>> LowerDataMovement(const passes::Group& group, ShapeEnv* env);

}  // namespace shapeshift::codegen::lower

#endif  // SHAPESHIFT_CODEGEN_LOWER_LOWER_GROUP_H_
