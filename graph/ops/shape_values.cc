// Shape rules for the ops that create shape values or constants: Shape,
// Size, Constant, ConstantOfShape, Range. `Shape` is where shape-value
// propagation starts: its output's elements are the input's symbolic dims.
#include "absl/strings/str_cat.h"
#include "graph/ops/rules.h"
#include "graph/ops/common.h"

namespace shapeshift {

absl::Status rules::Shape(InferenceContext& ctx) {
  int64_t rank = ctx.input_rank(0);
  absl::StatusOr<int64_t> start_attr = ctx.attrs().GetInt("start", 0);
  absl::StatusOr<int64_t> end_attr = ctx.attrs().GetInt("end", rank);
  if (!start_attr.ok()) return ctx.Error(start_attr.status().message());
  if (!end_attr.ok()) return ctx.Error(end_attr.status().message());
  // Opset 15 start/end: negative counts from the end, then clamp to [0, rank].
  auto clamp = [rank](int64_t v) { return std::clamp(v < 0 ? v + rank : v, int64_t{0}, rank); };
  int64_t start = clamp(*start_attr), end = clamp(*end_attr);
  std::vector<SymExpr> dims;
  for (int64_t d = start; d < end; ++d) dims.push_back(ctx.input_shape(0)[d]);
  int64_t n = static_cast<int64_t>(dims.size());
  ctx.SetOutput(0, TensorType(DType::kI64, {n}), std::move(dims));
  return absl::OkStatus();
}

absl::Status rules::Size(InferenceContext& ctx) {
  ctx.SetOutput(0, TensorType(DType::kI64, {}), std::vector<SymExpr>{ctx.input_type(0).NumElements()});
  return absl::OkStatus();
}

namespace {

// The tensor a Constant node holds, from whichever value* attribute is set.
absl::StatusOr<Tensor> ConstantValue(InferenceContext& ctx) {
  const Attributes& a = ctx.attrs();
  if (a.Has("value")) return a.GetTensor("value");
  if (a.Has("value_float")) {
    absl::StatusOr<float> v = a.GetFloat("value_float", 0);
    if (!v.ok()) return v.status();
    return Tensor::Scalar(*v);
  }
  if (a.Has("value_int")) {
    absl::StatusOr<int64_t> v = a.GetInt("value_int");
    if (!v.ok()) return v.status();
    return Tensor::ScalarI64(*v);
  }
  if (a.Has("value_floats")) {
    absl::StatusOr<std::vector<float>> v = a.GetFloats("value_floats");
    if (!v.ok()) return v.status();
    return Tensor::FromVector(DType::kF32, {static_cast<int64_t>(v->size())}, *v);
  }
  if (a.Has("value_ints")) {
    absl::StatusOr<std::vector<int64_t>> v = a.GetInts("value_ints");
    if (!v.ok()) return v.status();
    return Tensor::FromVector(DType::kI64, {static_cast<int64_t>(v->size())}, *v);
  }
  return absl::InvalidArgumentError(
      "needs one of the attributes value, value_float(s), value_int(s) (sparse and string "
      "constants are unsupported)");
}

std::optional<std::vector<SymExpr>> TrackedElements(const Tensor& t) {
  if (!TracksElements(t.dtype()) || t.num_elements() > Graph::kMaxElementsTracked) return std::nullopt;
  std::vector<SymExpr> out;
  for (int64_t i = 0; i < t.num_elements(); ++i) out.push_back(t.GetAsInt64(i));
  return out;
}

}  // namespace

absl::Status rules::Constant(InferenceContext& ctx) {
  absl::StatusOr<Tensor> value = ConstantValue(ctx);
  if (!value.ok()) return ctx.Error(value.status().message());
  std::vector<SymExpr> shape(value->shape().begin(), value->shape().end());
  ctx.SetOutput(0, TensorType(value->dtype(), std::move(shape)), TrackedElements(*value));
  return absl::OkStatus();
}

absl::Status rules::ConstantOfShape(InferenceContext& ctx) {
  if (ctx.input_rank(0) != 1) return ctx.Error("input must be a 1-D shape");
  Tensor fill = Tensor::Scalar(0.0f);
  if (ctx.attrs().Has("value")) {
    absl::StatusOr<Tensor> v = ctx.attrs().GetTensor("value");
    if (!v.ok()) return ctx.Error(v.status().message());
    if (v->num_elements() != 1) return ctx.Error("attribute 'value' must hold one element");
    fill = *v;
  }
  std::vector<SymExpr> shape;
  if (const auto& dims = ctx.input_elements(0)) {
    shape = *dims;
  } else {
    std::optional<int64_t> n = ctx.input_shape(0)[0].AsConst();
    if (!n) return ctx.Error("shape input has a symbolic length");
    for (int64_t i = 0; i < *n; ++i) shape.push_back(ctx.DataDependentDim());
  }
  TensorType type(fill.dtype(), std::move(shape));
  std::optional<std::vector<SymExpr>> elements;
  std::optional<int64_t> count = type.NumElements().AsConst();
  if (TracksElements(fill.dtype()) && count && *count <= Graph::kMaxElementsTracked) {
    elements = std::vector<SymExpr>(*count, fill.GetAsInt64(0));
  }
  ctx.SetOutput(0, std::move(type), std::move(elements));
  return absl::OkStatus();
}

absl::Status rules::Range(InferenceContext& ctx) {
  for (int i = 0; i < 3; ++i) {
    if (ctx.input_rank(i) != 0) return ctx.Error(absl::StrCat("input ", i, " must be a scalar"));
    if (ctx.input_dtype(i) != ctx.input_dtype(0)) return ctx.Error("start, limit and delta dtypes differ");
  }
  DType dtype = ctx.input_dtype(0);
  const auto& start = ctx.input_elements(0);
  const auto& limit = ctx.input_elements(1);
  std::optional<std::vector<int64_t>> delta = ctx.input_constant_ints(2);
  SymExpr len;
  if (start && limit && delta && (*delta)[0] != 0) {
    int64_t step = (*delta)[0];
    SymExpr span = step > 0 ? (*limit)[0] - (*start)[0] : (*start)[0] - (*limit)[0];
    len = ctx.SimplifiedMax(CeilDiv(span, step > 0 ? step : -step), 0);
  } else if (delta && (*delta)[0] == 0) {
    return ctx.Error("delta must not be 0");
  } else {
    len = ctx.DataDependentDim();
  }
  std::optional<std::vector<SymExpr>> elements;
  std::optional<int64_t> n = len.AsConst();
  if (n && start && delta && *n <= Graph::kMaxElementsTracked) {
    elements.emplace();
    for (int64_t i = 0; i < *n; ++i) elements->push_back((*start)[0] + i * (*delta)[0]);
  }
  ctx.SetOutput(0, TensorType(dtype, {len}), std::move(elements));
  return absl::OkStatus();
}

}  // namespace shapeshift
