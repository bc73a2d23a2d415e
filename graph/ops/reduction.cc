// Shape rules for reductions (Reduce*, ArgMax/ArgMin). The axes list moved
// from an attribute to an optional input: at opset 13 for ReduceSum, at 18
// for the other Reduce* ops. Reducing a whole small integer tensor (e.g.
// ReduceProd of a Shape, as exporters do to count elements) also folds its
// shape value.
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "graph/ops/rules.h"
#include "graph/ops/common.h"

namespace shapeshift {
namespace {

std::optional<SymExpr> FoldAll(InferenceContext& ctx, const std::vector<SymExpr>& values) {
  const std::string& op = ctx.op_type();
  if (values.empty()) return std::nullopt;
  SymExpr acc = values[0];
  for (size_t i = 1; i < values.size(); ++i) {
    if (op == "ReduceSum") {
      acc = acc + values[i];
    } else if (op == "ReduceProd") {
      acc = acc * values[i];
    } else if (op == "ReduceMax") {
      acc = ctx.SimplifiedMax(acc, values[i]);
    } else if (op == "ReduceMin") {
      acc = ctx.SimplifiedMin(acc, values[i]);
    } else {
      return std::nullopt;
    }
  }
  if (op != "ReduceSum" && op != "ReduceProd" && op != "ReduceMax" && op != "ReduceMin") {
    return std::nullopt;
  }
  return acc;
}

}  // namespace

absl::Status rules::Reduce(InferenceContext& ctx) {
  int since = ctx.op_type() == "ReduceSum" ? 13 : 18;
  absl::StatusOr<int64_t> keepdims = ctx.attrs().GetInt("keepdims", 1);
  absl::StatusOr<int64_t> noop = ctx.attrs().GetInt("noop_with_empty_axes", 0);
  if (!keepdims.ok()) return ctx.Error(keepdims.status().message());
  if (!noop.ok()) return ctx.Error(noop.status().message());
  int64_t rank = ctx.input_rank(0);
  absl::StatusOr<std::optional<int64_t>> runtime = RuntimeListLength(ctx, 1, since);
  if (!runtime.ok()) return runtime.status();
  if (runtime->has_value() && **runtime > 0) {
    // Axes are data: the rank is known, which dims shrink is not.
    int64_t out_rank = *keepdims != 0 ? rank : rank - **runtime;
    ctx.SetOutput(0, TensorType(ctx.input_dtype(0), DataDependentShape(ctx, out_rank)));
    return absl::OkStatus();
  }
  std::vector<int64_t> axes;
  if (!runtime->has_value()) {
    auto axes_or = ReadIntList(ctx, "axes", 1, since);
    if (!axes_or.ok()) return axes_or.status();
    axes = axes_or->value_or(std::vector<int64_t>{});
  }
  if (axes.empty()) {
    if (*noop != 0) {
      ctx.SetOutput(0, ctx.input_type(0), ctx.input_elements(0));
      return absl::OkStatus();
    }
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  absl::flat_hash_set<int64_t> reduced;
  for (int64_t a : axes) {
    absl::StatusOr<int64_t> axis = NormalizeAxis(ctx, a, rank, "reduction axis");
    if (!axis.ok()) return axis.status();
    reduced.insert(*axis);
  }
  std::vector<SymExpr> shape;
  for (int64_t d = 0; d < rank; ++d) {
    if (!reduced.contains(d)) {
      shape.push_back(ctx.input_shape(0)[d]);
    } else if (*keepdims != 0) {
      shape.push_back(1);
    }
  }
  std::optional<std::vector<SymExpr>> elements;
  const auto& in = ctx.input_elements(0);
  if (TracksElements(ctx.input_dtype(0)) && in && static_cast<int64_t>(reduced.size()) == rank) {
    if (std::optional<SymExpr> folded = FoldAll(ctx, *in)) elements = std::vector<SymExpr>{*folded};
  }
  ctx.SetOutput(0, TensorType(ctx.input_dtype(0), std::move(shape)), std::move(elements));
  return absl::OkStatus();
}

absl::Status rules::ArgReduce(InferenceContext& ctx) {  // ArgMax, ArgMin
  absl::StatusOr<int64_t> axis_attr = ctx.attrs().GetInt("axis", 0);
  absl::StatusOr<int64_t> keepdims = ctx.attrs().GetInt("keepdims", 1);
  if (!axis_attr.ok()) return ctx.Error(axis_attr.status().message());
  if (!keepdims.ok()) return ctx.Error(keepdims.status().message());
  int64_t rank = ctx.input_rank(0);
  absl::StatusOr<int64_t> axis = NormalizeAxis(ctx, *axis_attr, rank);
  if (!axis.ok()) return axis.status();
  std::vector<SymExpr> shape;
  for (int64_t d = 0; d < rank; ++d) {
    if (d != *axis) {
      shape.push_back(ctx.input_shape(0)[d]);
    } else if (*keepdims != 0) {
      shape.push_back(1);
    }
  }
  ctx.SetOutput(0, TensorType(DType::kI64, std::move(shape)));
  return absl::OkStatus();
}

}  // namespace shapeshift
