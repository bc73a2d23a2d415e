// Helpers shared by the shape rules in graph/ops/: broadcasting on symbolic
// dims, axis normalization, reading integer lists that moved from attributes
// to inputs across opsets, and element-wise evaluation of shape values.
#ifndef SHAPESHIFT_GRAPH_OPS_COMMON_H_
#define SHAPESHIFT_GRAPH_OPS_COMMON_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/shape_inference.h"

namespace shapeshift {

// Multidirectional (numpy) broadcast of two shapes. A dim pair broadcasts
// when the dims are identical or one is provably 1; otherwise the env is
// asked whether they are equal (maybe recording a guard); kUnknown (after
// InferenceContext::NarrowToProve: an undeclared input dim may be narrowed
// to where the dims are equal) and "provably different and neither is 1"
// are errors naming both dims.
absl::StatusOr<std::vector<SymExpr>> BroadcastShapes(InferenceContext& ctx,
                                                     const std::vector<SymExpr>& a,
                                                     const std::vector<SymExpr>& b);

// Requires dims `a` and `b` to be equal: proven, guarded by the env, or
// proven after InferenceContext::NarrowToProve narrowed an undeclared dim.
absl::Status RequireEqualDims(InferenceContext& ctx, SymExpr a, SymExpr b, absl::string_view reason);

// `axis` in [-rank, rank) → [0, rank); an error names the attribute.
absl::StatusOr<int64_t> NormalizeAxis(InferenceContext& ctx, int64_t axis, int64_t rank,
                                      absl::string_view what = "axis");

// An integer list that is an attribute before `input_since_opset` and input
// `input_index` from it on (Squeeze axes, Reduce* axes, Split sizes, ...).
// nullopt when absent in both places. An input whose values are not
// constants is an error ("must be a constant").
absl::StatusOr<std::optional<std::vector<int64_t>>> ReadIntList(InferenceContext& ctx,
                                                                const std::string& attr,
                                                                int input_index,
                                                                int input_since_opset);

// The length of an integer-list input whose values are runtime data (not
// constants, not shape values) when the list moved to inputs at
// `input_since_opset`; nullopt when the list is known or absent. Rules then
// know the output rank but not its dims (see DataDependentShape). An error
// when even the length is symbolic.
absl::StatusOr<std::optional<int64_t>> RuntimeListLength(InferenceContext& ctx, int input_index,
                                                         int input_since_opset);

// `rank` fresh data-dependent dims.
std::vector<SymExpr> DataDependentShape(InferenceContext& ctx, int64_t rank);

// Row-major broadcast of element lists for tensors of static shapes
// `shape_a`/`shape_b` into `out_shape`; nullopt if any side is unknown or a
// shape is not static. `fn` returning nullopt aborts (element undecidable).
std::optional<std::vector<SymExpr>> BroadcastElements(
    const std::optional<std::vector<SymExpr>>& a, const std::vector<SymExpr>& shape_a,
    const std::optional<std::vector<SymExpr>>& b, const std::vector<SymExpr>& shape_b,
    const std::vector<SymExpr>& out_shape,
    const std::function<std::optional<SymExpr>(SymExpr, SymExpr)>& fn);

// Static dims as integers; nullopt if any dim is symbolic.
std::optional<std::vector<int64_t>> StaticDims(const std::vector<SymExpr>& shape);

// Product of `shape[begin, end)`.
SymExpr DimProduct(const std::vector<SymExpr>& shape, size_t begin, size_t end);

// a / b when b divides a structurally (monomial factors and coefficients:
// `64*batch*seq / (batch*seq)` is 64); nullopt when that is not evident.
std::optional<SymExpr> ExactQuotient(SymExpr a, SymExpr b);

// True for the element types whose values shape-value propagation tracks.
inline bool TracksElements(DType t) {
  return t == DType::kI64 || t == DType::kI32 || t == DType::kBool || t == DType::kI8 ||
         t == DType::kU8;
}

}  // namespace shapeshift

#endif  // SHAPESHIFT_GRAPH_OPS_COMMON_H_
