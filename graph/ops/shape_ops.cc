// Shape rules for ops that move data without computing on it: Reshape,
// Flatten, Squeeze, Unsqueeze, Transpose, Expand, Tile, Concat, Split.
// They keep shape values flowing (a Reshape/Unsqueeze/Concat of a shape
// vector is still a shape vector), which is what lets a Reshape target
// built from Shape→Gather→Unsqueeze→Concat stay symbolic.
//
// Reshape with -1: the inferred dim is total / known, known proven >= 1 (0
// leaves it undefined). When the division is
// evident from the factors (`64*b*s / (b*s)`) it is exact; otherwise it is
// FloorDiv(total, known) and the env is asked whether `known` divides
// `total` (a guard when specialized; an error when undecidable or false).
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "graph/ops/rules.h"
#include "graph/ops/common.h"

namespace shapeshift {
namespace {

// Same elements in the same row-major order, new shape.
void SetReshaped(InferenceContext& ctx, std::vector<SymExpr> shape) {
  ctx.SetOutput(0, TensorType(ctx.input_dtype(0), std::move(shape)), ctx.input_elements(0));
}

absl::StatusOr<SymExpr> InferMinusOne(InferenceContext& ctx, SymExpr total, SymExpr known) {
  // ONNX leaves the -1 undefined when the other dims hold no element (ONNX
  // Runtime refuses it); and total / known is only a quotient for known > 0.
  // Dims start at 1 unless declared or a cache (graph/onnx/cache_dims.h).
  if (!ctx.CanProve(Predicate::Ge(known, 1))) {
    return ctx.Error(absl::StrCat("cannot infer the -1 dim: the other dims' product ", known.ToString(),
                                  " may be 0"));
  }
  if (std::optional<SymExpr> q = ExactQuotient(total, known)) return *q;
  Predicate divides = known.IsConst() && *known.AsConst() > 0
                          ? Predicate::Divisible(total, *known.AsConst())
                          : Predicate::Eq(Mod(total, known), 0);
  absl::StatusOr<bool> ok = ctx.Decide(
      divides, absl::StrCat("Reshape -1: ", known.ToString(), " must divide ", total.ToString()));
  if (!ok.ok()) return ok.status();
  if (!*ok) {
    return ctx.Error(absl::StrCat("cannot infer the -1 dim: ", total.ToString(),
                                  " elements are not divisible by ", known.ToString()));
  }
  return FloorDiv(total, known);
}

}  // namespace

absl::Status rules::Reshape(InferenceContext& ctx) {
  const auto& in = ctx.input_shape(0);
  if (ctx.input_rank(1) != 1) return ctx.Error("shape input must be 1-D");
  const auto& target = ctx.input_elements(1);
  if (!target) {
    // Target not computable: the rank is known, the sizes are data-dependent.
    std::optional<int64_t> rank = ctx.input_shape(1)[0].AsConst();
    if (!rank) return ctx.Error("shape input has a symbolic length");
    std::vector<SymExpr> shape;
    for (int64_t i = 0; i < *rank; ++i) shape.push_back(ctx.DataDependentDim());
    ctx.SetOutput(0, TensorType(ctx.input_dtype(0), std::move(shape)));
    return absl::OkStatus();
  }
  absl::StatusOr<int64_t> allowzero = ctx.attrs().GetInt("allowzero", 0);
  if (!allowzero.ok()) return ctx.Error(allowzero.status().message());
  std::vector<SymExpr> shape;
  int minus_one = -1;
  SymExpr known = 1;
  for (size_t i = 0; i < target->size(); ++i) {
    SymExpr e = (*target)[i];
    std::optional<int64_t> c = e.AsConst();
    if (c && *c == -1) {
      if (minus_one >= 0) return ctx.Error("shape has more than one -1");
      minus_one = static_cast<int>(i);
      shape.push_back(0);
      continue;
    }
    if (c && *c == 0 && *allowzero == 0) {
      if (i >= in.size()) return ctx.Error(absl::StrCat("shape[", i, "] is 0 but the input has rank ", in.size()));
      e = in[i];
    } else if (c && *c < -1) {
      return ctx.Error(absl::StrCat("shape[", i, "] is ", *c));
    } else if (!c && !ctx.CanProve(Predicate::Ge(e, *allowzero != 0 ? 0 : 1))) {
      return ctx.Error(absl::StrCat("shape[", i, "] = ", e.ToString(),
                                    " might be 0 or -1 (special values); cannot infer the shape"));
    }
    shape.push_back(e);
    known *= e;
  }
  SymExpr total = ctx.input_type(0).NumElements();
  if (minus_one >= 0) {
    absl::StatusOr<SymExpr> dim = InferMinusOne(ctx, total, known);
    if (!dim.ok()) return dim.status();
    shape[minus_one] = *dim;
  } else if (absl::Status s = RequireEqualDims(ctx, total, known, "Reshape element counts"); !s.ok()) {
    return s;
  }
  SetReshaped(ctx, std::move(shape));
  return absl::OkStatus();
}

absl::Status rules::Flatten(InferenceContext& ctx) {
  int64_t rank = ctx.input_rank(0);
  absl::StatusOr<int64_t> axis_attr = ctx.attrs().GetInt("axis", 1);
  if (!axis_attr.ok()) return ctx.Error(axis_attr.status().message());
  int64_t axis = *axis_attr < 0 ? *axis_attr + rank : *axis_attr;
  if (axis < 0 || axis > rank) return ctx.Error(absl::StrCat("axis ", *axis_attr, " is out of range for rank ", rank));
  const auto& in = ctx.input_shape(0);
  SetReshaped(ctx, {DimProduct(in, 0, axis), DimProduct(in, axis, rank)});
  return absl::OkStatus();
}

absl::Status rules::Squeeze(InferenceContext& ctx) {
  absl::StatusOr<std::optional<int64_t>> runtime = RuntimeListLength(ctx, 1, 13);
  if (!runtime.ok()) return runtime.status();
  if (runtime->has_value()) {
    ctx.SetOutput(0, TensorType(ctx.input_dtype(0), DataDependentShape(ctx, ctx.input_rank(0) - **runtime)));
    return absl::OkStatus();
  }
  auto axes = ReadIntList(ctx, "axes", 1, 13);
  if (!axes.ok()) return axes.status();
  const auto& in = ctx.input_shape(0);
  int64_t rank = ctx.input_rank(0);
  absl::flat_hash_set<int64_t> drop;
  if (axes->has_value()) {
    for (int64_t a : **axes) {
      absl::StatusOr<int64_t> axis = NormalizeAxis(ctx, a, rank);
      if (!axis.ok()) return axis.status();
      if (absl::Status s = RequireEqualDims(ctx, in[*axis], 1, absl::StrCat("squeezed dim ", *axis, " must be 1"));
          !s.ok()) {
        return s;
      }
      drop.insert(*axis);
    }
  } else {
    for (int64_t d = 0; d < rank; ++d) {
      if (in[d] == SymExpr(1) || ctx.CanProve(Predicate::Eq(in[d], 1))) {
        drop.insert(d);
      } else if (!ctx.CanProve(Predicate::Ne(in[d], 1))) {
        return ctx.Error(absl::StrCat("no axes given and dim ", d, " (", in[d].ToString(),
                                      ") may or may not be 1"));
      }
    }
  }
  std::vector<SymExpr> shape;
  for (int64_t d = 0; d < rank; ++d) {
    if (!drop.contains(d)) shape.push_back(in[d]);
  }
  SetReshaped(ctx, std::move(shape));
  return absl::OkStatus();
}

absl::Status rules::Unsqueeze(InferenceContext& ctx) {
  absl::StatusOr<std::optional<int64_t>> runtime = RuntimeListLength(ctx, 1, 13);
  if (!runtime.ok()) return runtime.status();
  if (runtime->has_value()) {
    ctx.SetOutput(0, TensorType(ctx.input_dtype(0), DataDependentShape(ctx, ctx.input_rank(0) + **runtime)));
    return absl::OkStatus();
  }
  auto axes = ReadIntList(ctx, "axes", 1, 13);
  if (!axes.ok()) return axes.status();
  if (!axes->has_value()) return ctx.Error("axes are required");
  const auto& in = ctx.input_shape(0);
  int64_t out_rank = ctx.input_rank(0) + static_cast<int64_t>((*axes)->size());
  absl::flat_hash_set<int64_t> inserted;
  for (int64_t a : **axes) {
    absl::StatusOr<int64_t> axis = NormalizeAxis(ctx, a, out_rank);
    if (!axis.ok()) return axis.status();
    if (!inserted.insert(*axis).second) return ctx.Error(absl::StrCat("axis ", a, " is repeated"));
  }
  std::vector<SymExpr> shape;
  size_t next = 0;
  for (int64_t d = 0; d < out_rank; ++d) shape.push_back(inserted.contains(d) ? SymExpr(1) : in[next++]);
  SetReshaped(ctx, std::move(shape));
  return absl::OkStatus();
}

absl::Status rules::Transpose(InferenceContext& ctx) {
  int64_t rank = ctx.input_rank(0);
  std::vector<int64_t> reversed;
  for (int64_t d = rank - 1; d >= 0; --d) reversed.push_back(d);
  absl::StatusOr<std::vector<int64_t>> perm = ctx.attrs().GetInts("perm", reversed);
  if (!perm.ok()) return ctx.Error(perm.status().message());
  if (static_cast<int64_t>(perm->size()) != rank) {
    return ctx.Error(absl::StrCat("perm has ", perm->size(), " entries for rank ", rank));
  }
  std::vector<SymExpr> shape;
  absl::flat_hash_set<int64_t> seen;
  for (int64_t p : *perm) {
    if (p < 0 || p >= rank || !seen.insert(p).second) return ctx.Error("perm is not a permutation");
    shape.push_back(ctx.input_shape(0)[p]);
  }
  std::optional<std::vector<SymExpr>> elements;
  if (rank <= 1) elements = ctx.input_elements(0);
  ctx.SetOutput(0, TensorType(ctx.input_dtype(0), std::move(shape)), std::move(elements));
  return absl::OkStatus();
}

namespace {

// Target dims of Expand/Tile from input 1's elements, or data-dependent dims.
absl::StatusOr<std::vector<SymExpr>> ShapeOperand(InferenceContext& ctx, int i) {
  if (ctx.input_rank(i) != 1) return ctx.Error(absl::StrCat("input ", i, " must be 1-D"));
  if (const auto& e = ctx.input_elements(i)) return *e;
  std::optional<int64_t> n = ctx.input_shape(i)[0].AsConst();
  if (!n) return ctx.Error(absl::StrCat("input ", i, " has a symbolic length"));
  std::vector<SymExpr> dims;
  for (int64_t k = 0; k < *n; ++k) dims.push_back(ctx.DataDependentDim());
  return dims;
}

}  // namespace

absl::Status rules::Expand(InferenceContext& ctx) {
  if (ctx.input_rank(1) == 1 && !ctx.input_elements(1)) {
    // Target shape is data: only the output rank is known.
    std::optional<int64_t> n = ctx.input_shape(1)[0].AsConst();
    if (!n) return ctx.Error("shape input has a symbolic length");
    int64_t rank = std::max(*n, ctx.input_rank(0));
    ctx.SetOutput(0, TensorType(ctx.input_dtype(0), DataDependentShape(ctx, rank)));
    return absl::OkStatus();
  }
  absl::StatusOr<std::vector<SymExpr>> target = ShapeOperand(ctx, 1);
  if (!target.ok()) return target.status();
  auto shape = BroadcastShapes(ctx, ctx.input_shape(0), *target);
  if (!shape.ok()) return shape.status();
  std::optional<std::vector<SymExpr>> elements;
  if (TracksElements(ctx.input_dtype(0))) {
    // Broadcasting the element list against itself repeats it into `shape`.
    const auto& in = ctx.input_elements(0);
    elements = BroadcastElements(in, ctx.input_shape(0), in, ctx.input_shape(0), *shape,
                                 [](SymExpr x, SymExpr) -> std::optional<SymExpr> { return x; });
  }
  ctx.SetOutput(0, TensorType(ctx.input_dtype(0), std::move(*shape)), std::move(elements));
  return absl::OkStatus();
}

absl::Status rules::Tile(InferenceContext& ctx) {
  absl::StatusOr<std::vector<SymExpr>> repeats = ShapeOperand(ctx, 1);
  if (!repeats.ok()) return repeats.status();
  if (static_cast<int64_t>(repeats->size()) != ctx.input_rank(0)) {
    return ctx.Error(absl::StrCat("repeats has ", repeats->size(), " entries for rank ", ctx.input_rank(0)));
  }
  std::vector<SymExpr> shape;
  for (size_t d = 0; d < repeats->size(); ++d) shape.push_back(ctx.input_shape(0)[d] * (*repeats)[d]);
  ctx.SetOutput(0, TensorType(ctx.input_dtype(0), std::move(shape)));
  return absl::OkStatus();
}

// RelativePositionExpand(X, S, T) {axis = a} (shapeshift's op, not ONNX's;
// what `relative-position-recognition` writes): X is [p..., L, q...] with L
// at `axis`, S and T one-element integer shape values, and the output is
// [p..., S, T, q...] with out[p, i, j, q] = X[p, j - i + S - 1, q]: L must be
// S + T - 1, one entry per difference j - i of a row i < S and a column j < T.
absl::Status rules::RelativePositionExpand(InferenceContext& ctx) {
  const int64_t rank = ctx.input_rank(0);
  if (rank < 1) return ctx.Error("X must have rank >= 1");
  absl::StatusOr<int64_t> axis_attr = ctx.attrs().GetInt("axis", 0);
  if (!axis_attr.ok()) return ctx.Error(axis_attr.status().message());
  absl::StatusOr<int64_t> axis = NormalizeAxis(ctx, *axis_attr, rank);
  if (!axis.ok()) return axis.status();
  SymExpr lengths[2];
  for (int i : {1, 2}) {
    if (!ctx.HasInput(i) || (ctx.input_dtype(i) != DType::kI64 && ctx.input_dtype(i) != DType::kI32)) {
      return ctx.Error(absl::StrCat("input ", i, " must be an integer length"));
    }
    const auto& e = ctx.input_elements(i);
    if (!e || e->size() != 1) {
      return ctx.Error(absl::StrCat("input ", i, " must be one length known while compiling"));
    }
    lengths[i - 1] = (*e)[0];
  }
  const std::vector<SymExpr>& x = ctx.input_shape(0);
  if (absl::Status s = RequireEqualDims(ctx, x[*axis], lengths[0] + lengths[1] - 1,
                                        "the relative positions span rows + columns - 1 differences");
      !s.ok()) {
    return s;
  }
  std::vector<SymExpr> shape(x.begin(), x.begin() + *axis);
  shape.push_back(lengths[0]);
  shape.push_back(lengths[1]);
  shape.insert(shape.end(), x.begin() + *axis + 1, x.end());
  ctx.SetOutput(0, TensorType(ctx.input_dtype(0), std::move(shape)));
  return absl::OkStatus();
}

absl::Status rules::Concat(InferenceContext& ctx) {
  absl::StatusOr<int64_t> axis_attr = ctx.attrs().GetInt("axis");
  if (!axis_attr.ok()) return ctx.Error(axis_attr.status().message());
  int64_t rank = ctx.input_rank(0);
  absl::StatusOr<int64_t> axis = NormalizeAxis(ctx, *axis_attr, rank);
  if (!axis.ok()) return axis.status();
  std::vector<SymExpr> shape = ctx.input_shape(0);
  std::optional<std::vector<SymExpr>> elements = std::vector<SymExpr>{};
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.HasInput(i)) return ctx.Error(absl::StrCat("input ", i, " is missing"));
    if (ctx.input_dtype(i) != ctx.input_dtype(0) || ctx.input_rank(i) != rank) {
      return ctx.Error(absl::StrCat("input ", i, " ", ctx.input_type(i).ToString(),
                                    " does not match input 0 ", ctx.input_type(0).ToString()));
    }
    if (i > 0) {
      for (int64_t d = 0; d < rank; ++d) {
        if (d == *axis) continue;
        if (absl::Status s = RequireEqualDims(ctx, shape[d], ctx.input_shape(i)[d],
                                              absl::StrCat("Concat dim ", d, " of input ", i));
            !s.ok()) {
          return s;
        }
      }
      shape[*axis] += ctx.input_shape(i)[*axis];
    }
    // Along axis 0, row-major element lists simply concatenate.
    const auto& e = ctx.input_elements(i);
    if (elements && e && *axis == 0) {
      elements->insert(elements->end(), e->begin(), e->end());
    } else {
      elements.reset();
    }
  }
  ctx.SetOutput(0, TensorType(ctx.input_dtype(0), std::move(shape)), std::move(elements));
  return absl::OkStatus();
}

absl::Status rules::Split(InferenceContext& ctx) {
  absl::StatusOr<int64_t> axis_attr = ctx.attrs().GetInt("axis", 0);
  if (!axis_attr.ok()) return ctx.Error(axis_attr.status().message());
  int64_t rank = ctx.input_rank(0);
  absl::StatusOr<int64_t> axis = NormalizeAxis(ctx, *axis_attr, rank);
  if (!axis.ok()) return axis.status();
  int n = ctx.num_outputs();
  absl::StatusOr<std::optional<int64_t>> runtime = RuntimeListLength(ctx, 1, 13);
  if (!runtime.ok()) return runtime.status();
  if (runtime->has_value()) {
    // Split sizes are data: each output's split dim is data-dependent.
    for (int i = 0; i < n; ++i) {
      std::vector<SymExpr> shape = ctx.input_shape(0);
      shape[*axis] = ctx.DataDependentDim();
      ctx.SetOutput(i, TensorType(ctx.input_dtype(0), std::move(shape)));
    }
    return absl::OkStatus();
  }
  auto split = ReadIntList(ctx, "split", 1, 13);
  if (!split.ok()) return split.status();
  SymExpr dim = ctx.input_shape(0)[*axis];
  std::vector<SymExpr> sizes;
  if (split->has_value()) {
    if (static_cast<int>((*split)->size()) != n) {
      return ctx.Error(absl::StrCat("split has ", (*split)->size(), " sizes for ", n, " outputs"));
    }
    SymExpr sum = 0;
    for (int64_t s : **split) {
      if (s < 0) return ctx.Error(absl::StrCat("split size ", s, " is negative"));
      sizes.push_back(s);
      sum += s;
    }
    if (absl::Status s = RequireEqualDims(ctx, sum, dim, "Split sizes must add up to the dim"); !s.ok()) return s;
  } else if (std::optional<int64_t> c = dim.AsConst()) {
    // Opset 18: the last chunk may be smaller (ceil split); equal otherwise.
    int64_t chunk = (*c + n - 1) / n;
    if (ctx.opset() < 18 && *c % n != 0) {
      return ctx.Error(absl::StrCat("dim ", *c, " does not split evenly into ", n, " outputs"));
    }
    for (int i = 0; i < n; ++i) sizes.push_back(std::max<int64_t>(0, std::min(chunk, *c - chunk * i)));
  } else {
    absl::StatusOr<bool> even = ctx.Decide(Predicate::Divisible(dim, n),
                                           absl::StrCat("Split into ", n, " equal parts"));
    if (!even.ok()) return even.status();
    if (!*even) return ctx.Error(absl::StrCat(dim.ToString(), " does not split evenly into ", n, " outputs"));
    for (int i = 0; i < n; ++i) sizes.push_back(FloorDiv(dim, n));
  }
  const auto& elements = ctx.input_elements(0);
  int64_t offset = 0;
  for (int i = 0; i < n; ++i) {
    std::vector<SymExpr> shape = ctx.input_shape(0);
    shape[*axis] = sizes[i];
    std::optional<std::vector<SymExpr>> part;
    std::optional<int64_t> size = sizes[i].AsConst();
    if (elements && rank == 1 && size) {
      part = std::vector<SymExpr>(elements->begin() + offset, elements->begin() + offset + *size);
      offset += *size;
    }
    ctx.SetOutput(i, TensorType(ctx.input_dtype(0), std::move(shape)), std::move(part));
  }
  return absl::OkStatus();
}

}  // namespace shapeshift
