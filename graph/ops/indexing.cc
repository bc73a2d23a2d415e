// Shape rules for Slice, Gather and GatherElements.
//
// Slice follows the ONNX clamping rules symbolically: a negative start/end
// counts from the end (`s + dim`), then start/end are clamped to the dim
// with Min/Max — and the Min/Max collapse whenever the env proves which side
// wins, so `x[:, 0:INT64_MAX]` on a `seq` dim is just `seq`. A symbolic start
// whose sign is not provable makes the sliced dim data-dependent — unless
// the data is a constant table (MPT's ALiBi biases sliced at
// `max_seq_len - key_length`, which counts from the end past the table's
// rows): then, as for a Gather, an undeclared dim is narrowed at import to
// where the bound is non-negative (SliceOfTableBound).
// Gather on a shape vector with constant indices picks the symbolic
// elements (`Shape(x)[1]` is `seq`); a Gather whose indices are bounded by
// shapes limits the dims the model serves (BoundIndicesByTable).
#include <limits>

#include "absl/strings/str_cat.h"
#include "graph/ops/rules.h"
#include "graph/ops/common.h"
#include "graph/value_bounds.h"

namespace shapeshift {
namespace {

// Constants beyond any real dim (INT64_MAX "to the end") are pinned here so
// that `s + dim` cannot overflow.
constexpr int64_t kHugeIndex = int64_t{1} << 62;

SymExpr Clamp(InferenceContext& ctx, SymExpr x, SymExpr lo, SymExpr hi) {
  return ctx.SimplifiedMin(ctx.SimplifiedMax(x, lo), hi);
}

// `index` made non-negative (counting from the end when negative); nullopt
// when the sign of a symbolic index is not provable.
std::optional<SymExpr> FromEnd(InferenceContext& ctx, SymExpr index, SymExpr dim) {
  if (std::optional<int64_t> c = index.AsConst()) {
    int64_t v = std::clamp(*c, -kHugeIndex, kHugeIndex);
    return v < 0 ? dim + v : SymExpr(v);
  }
  if (ctx.CanProve(Predicate::Ge(index, 0))) return index;
  if (ctx.CanProve(Predicate::Lt(index, 0))) return dim + index;
  return std::nullopt;
}

// A Gather whose indices are bounded by shapes (graph/value_bounds.h: a
// position table indexed by Range(sequence)) reads outside its table once
// the bound passes the last row; the model serves only the dims where it
// does not. At import an undeclared dim is narrowed to there (with a note
// naming this node and the table), a declared range that goes past it is an
// error saying the range that works; anywhere else (other symbols, a bound
// that is never inside) the run-time index check refuses bad rows.
absl::Status BoundIndicesByTable(InferenceContext& ctx, SymExpr rows) {
  const Value* indices = ctx.node().input(1);
  std::optional<ValueBounds> bounds = DeriveValueBounds(*indices, ctx.env());
  if (!bounds) return absl::OkStatus();
  // Negative indices count from the end; only the upper bound can limit a dim.
  const Predicate inside = Predicate::Le(bounds->hi, rows - 1);
  if (ctx.CanProve(inside)) return absl::OkStatus();
  const std::string table = ctx.node().input(0)->name();
  const absl::Status unknown = ctx.Error(absl::StrCat("indices '", indices->name(), "' reach ", bounds->hi.ToString(),
                                                      ", past the last row of table '", table, "' (",
                                                      rows.ToString(), " rows)"));
  const std::string reads =
      absl::StrCat("reads rows up to ", bounds->hi.ToString(), " of table '", table, "' (", rows.ToString(), " rows)");
  absl::Status narrowed = ctx.NarrowToProve(inside, unknown, reads);
  if (narrowed != unknown) return narrowed;
  // `unknown` back unchanged: no single dim's range to narrow to (see above).
  ctx.Note(absl::StrCat(reads, ", not proven inside over the declared ranges: a request past the last row is "
                        "refused at run time by this node"));
  return absl::OkStatus();
}

// A symbolic Slice bound of a constant table whose sign the env cannot
// prove: narrowing an undeclared dim to where it is >= 0 (with a note) gives
// the bound itself; otherwise nullopt (the sliced dim is data-dependent).
std::optional<SymExpr> SliceOfTableBound(InferenceContext& ctx, SymExpr index, const char* which) {
  const Value* data = ctx.node().input(0);
  if (data == nullptr || !data->is_constant()) return std::nullopt;
  const Predicate non_negative = Predicate::Ge(index, 0);
  const absl::Status unknown = ctx.Error(absl::StrCat("cannot decide the sign of the slice ", which, " ",
                                                      index.ToString()));
  const std::string need = absl::StrCat("slices table '", data->name(), "' from ", which, " ", index.ToString(),
                                        ", which counts from the end when negative");
  if (!ctx.NarrowToProve(non_negative, unknown, need).ok()) return std::nullopt;  // OK: narrowed until proven
  return index;
}

}  // namespace

absl::Status rules::Slice(InferenceContext& ctx) {
  const auto& in = ctx.input_shape(0);
  int64_t rank = ctx.input_rank(0);
  std::vector<SymExpr> starts, ends;
  std::vector<int64_t> axes, steps;
  if (ctx.opset() < 10) {
    auto s = ctx.attrs().GetInts("starts");
    auto e = ctx.attrs().GetInts("ends");
    if (!s.ok() || !e.ok()) return ctx.Error("attributes 'starts' and 'ends' are required before opset 10");
    starts.assign(s->begin(), s->end());
    ends.assign(e->begin(), e->end());
    auto a = ctx.attrs().GetInts("axes", {});
    if (!a.ok()) return ctx.Error(a.status().message());
    axes = *a;
  } else {
    if (!ctx.HasInput(1) || !ctx.HasInput(2)) return ctx.Error("inputs 'starts' and 'ends' are required");
    const auto& s = ctx.input_elements(1);
    const auto& e = ctx.input_elements(2);
    if (s && e) {
      starts = *s;
      ends = *e;
    }
    for (int i : {3, 4}) {
      if (!ctx.HasInput(i)) continue;
      std::optional<std::vector<int64_t>> v = ctx.input_constant_ints(i);
      if (!v) {
        // Axes or steps are data: every dim may change.
        ctx.SetOutput(0, TensorType(ctx.input_dtype(0), DataDependentShape(ctx, rank)));
        return absl::OkStatus();
      }
      (i == 3 ? axes : steps) = *v;
    }
    if (!s || !e) {
      // Bounds depend on data: the sliced axes get data-dependent sizes.
      std::vector<SymExpr> shape = in;
      std::optional<int64_t> n = ctx.input_shape(1).empty() ? std::nullopt : ctx.input_shape(1)[0].AsConst();
      if (!n) return ctx.Error("starts has a symbolic length");
      if (axes.empty()) {
        for (int64_t d = 0; d < *n; ++d) axes.push_back(d);
      }
      for (int64_t a : axes) {
        absl::StatusOr<int64_t> axis = NormalizeAxis(ctx, a, rank);
        if (!axis.ok()) return axis.status();
        shape[*axis] = ctx.DataDependentDim();
      }
      ctx.SetOutput(0, TensorType(ctx.input_dtype(0), std::move(shape)));
      return absl::OkStatus();
    }
  }
  if (starts.size() != ends.size()) return ctx.Error("starts and ends differ in length");
  if (axes.empty()) {
    for (size_t d = 0; d < starts.size(); ++d) axes.push_back(static_cast<int64_t>(d));
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size()) {
    return ctx.Error("starts, ends, axes and steps differ in length");
  }
  std::vector<SymExpr> shape = in;
  std::vector<SymExpr> first(rank, 0);
  std::vector<int64_t> stride(rank, 1);
  for (size_t i = 0; i < axes.size(); ++i) {
    absl::StatusOr<int64_t> axis = NormalizeAxis(ctx, axes[i], rank);
    if (!axis.ok()) return axis.status();
    if (steps[i] == 0) return ctx.Error("step must not be 0");
    int64_t step = std::clamp(steps[i], -kHugeIndex, kHugeIndex);  // so -step cannot overflow
    SymExpr dim = in[*axis];
    std::optional<SymExpr> s = FromEnd(ctx, starts[i], dim), e = FromEnd(ctx, ends[i], dim);
    if (!s) s = SliceOfTableBound(ctx, starts[i], "start");
    if (!e) e = SliceOfTableBound(ctx, ends[i], "end");
    if (!s || !e) {
      shape[*axis] = ctx.DataDependentDim();
      continue;
    }
    SymExpr len;
    if (step > 0) {
      SymExpr cs = Clamp(ctx, *s, 0, dim), ce = Clamp(ctx, *e, 0, dim);
      len = ctx.SimplifiedMax(CeilDiv(ce - cs, step), 0);
      first[*axis] = cs;
    } else {
      SymExpr cs = Clamp(ctx, *s, 0, dim - 1), ce = Clamp(ctx, *e, -1, dim - 1);
      len = ctx.SimplifiedMax(CeilDiv(cs - ce, -step), 0);
      first[*axis] = cs;
    }
    shape[*axis] = len;
    stride[*axis] = step;
  }
  std::optional<std::vector<SymExpr>> elements;
  const auto& e = ctx.input_elements(0);
  if (e && rank == 1) {
    std::optional<int64_t> begin = first[0].AsConst(), count = shape[0].AsConst();
    if (begin && count) {
      elements.emplace();
      for (int64_t k = 0; k < *count; ++k) elements->push_back((*e)[*begin + k * stride[0]]);
    }
  }
  ctx.SetOutput(0, TensorType(ctx.input_dtype(0), std::move(shape)), std::move(elements));
  return absl::OkStatus();
}

absl::Status rules::Gather(InferenceContext& ctx) {
  DType index_type = ctx.input_dtype(1);
  if (index_type != DType::kI64 && index_type != DType::kI32) return ctx.Error("indices must be i32 or i64");
  absl::StatusOr<int64_t> axis_attr = ctx.attrs().GetInt("axis", 0);
  if (!axis_attr.ok()) return ctx.Error(axis_attr.status().message());
  const auto& data = ctx.input_shape(0);
  int64_t rank = ctx.input_rank(0);
  absl::StatusOr<int64_t> axis = NormalizeAxis(ctx, *axis_attr, rank);
  if (!axis.ok()) return axis.status();
  SymExpr dim = data[*axis];
  std::optional<std::vector<int64_t>> indices = ctx.input_constant_ints(1);
  if (indices) {
    for (int64_t i : *indices) {
      // In range iff -dim <= i < dim; a provably out-of-range index is an error.
      if (ctx.CanProve(Predicate::Ge(SymExpr(i), dim)) || ctx.CanProve(Predicate::Lt(SymExpr(i), -dim))) {
        return ctx.Error(absl::StrCat("index ", i, " is out of range for dim ", dim.ToString()));
      }
    }
  }
  if (!indices) {
    if (absl::Status s = BoundIndicesByTable(ctx, dim); !s.ok()) return s;
  }
  std::vector<SymExpr> shape(data.begin(), data.begin() + *axis);
  shape.insert(shape.end(), ctx.input_shape(1).begin(), ctx.input_shape(1).end());
  shape.insert(shape.end(), data.begin() + *axis + 1, data.end());
  std::optional<std::vector<SymExpr>> elements;
  const auto& values = ctx.input_elements(0);
  auto static_data = StaticDims(data);
  if (values && indices && static_data) {
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < *axis; ++d) outer *= (*static_data)[d];
    for (int64_t d = *axis + 1; d < rank; ++d) inner *= (*static_data)[d];
    int64_t n = (*static_data)[*axis];
    elements.emplace();
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i : *indices) {
        int64_t idx = i < 0 ? i + n : i;
        for (int64_t k = 0; k < inner; ++k) elements->push_back((*values)[(o * n + idx) * inner + k]);
      }
    }
  }
  ctx.SetOutput(0, TensorType(ctx.input_dtype(0), std::move(shape)), std::move(elements));
  return absl::OkStatus();
}

absl::Status rules::GatherElements(InferenceContext& ctx) {
  if (ctx.input_rank(0) != ctx.input_rank(1)) {
    return ctx.Error(absl::StrCat("data ", ctx.input_type(0).ToString(), " and indices ",
                                  ctx.input_type(1).ToString(), " must have the same rank"));
  }
  absl::StatusOr<int64_t> axis_attr = ctx.attrs().GetInt("axis", 0);
  if (!axis_attr.ok()) return ctx.Error(axis_attr.status().message());
  if (auto a = NormalizeAxis(ctx, *axis_attr, ctx.input_rank(0)); !a.ok()) return a.status();
  ctx.SetOutput(0, TensorType(ctx.input_dtype(0), ctx.input_shape(1)));
  return absl::OkStatus();
}

}  // namespace shapeshift
