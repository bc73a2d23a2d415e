#include "graph/ops/common.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace shapeshift {

absl::StatusOr<std::vector<SymExpr>> BroadcastShapes(InferenceContext& ctx,
                                                     const std::vector<SymExpr>& a,
                                                     const std::vector<SymExpr>& b) {
  size_t rank = std::max(a.size(), b.size());
  std::vector<SymExpr> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    // Align from the right; a missing leading dim acts as 1.
    SymExpr da = i + a.size() >= rank ? a[i + a.size() - rank] : SymExpr(1);
    SymExpr db = i + b.size() >= rank ? b[i + b.size() - rank] : SymExpr(1);
    if (da == db || db == SymExpr(1)) {
      out[i] = da;
      continue;
    }
    if (da == SymExpr(1)) {
      out[i] = db;
      continue;
    }
    if (ctx.CanProve(Predicate::Eq(da, SymExpr(1)))) {
      out[i] = db;
      continue;
    }
    if (ctx.CanProve(Predicate::Eq(db, SymExpr(1)))) {
      out[i] = da;
      continue;
    }
    std::string reason = absl::StrCat("broadcast dims ", da.ToString(), " and ", db.ToString(),
                                      " must be equal (neither is provably 1)");
    Answer equal = ctx.Ask(Predicate::Eq(da, db), reason);
    if (IsTrue(equal)) {
      out[i] = da;
      continue;
    }
    if (equal == Answer::kUnknown) {
      absl::Status unknown =
          ctx.Error(absl::StrCat("cannot broadcast ", ShapeToString(a), " with ", ShapeToString(b), ": dims ",
                                 da.ToString(), " and ", db.ToString(),
                                 " are not provably equal and neither is provably 1"));
      if (absl::Status s = ctx.NarrowToProve(Predicate::Eq(da, db), unknown); !s.ok()) return s;
      out[i] = da;
      continue;
    }
    return ctx.Error(absl::StrCat("cannot broadcast ", ShapeToString(a), " with ", ShapeToString(b),
                                  ": dims ", da.ToString(), " and ", db.ToString(), " differ"));
  }
  return out;
}

absl::Status RequireEqualDims(InferenceContext& ctx, SymExpr a, SymExpr b, absl::string_view reason) {
  if (a == b) return absl::OkStatus();
  std::string why = absl::StrCat(reason, ": ", a.ToString(), " == ", b.ToString());
  Answer equal = ctx.Ask(Predicate::Eq(a, b), why);
  if (IsTrue(equal)) return absl::OkStatus();
  if (equal == Answer::kUnknown) {
    return ctx.NarrowToProve(Predicate::Eq(a, b), ctx.Error(absl::StrCat(reason, ": cannot prove ", a.ToString(),
                                                                         " == ", b.ToString(),
                                                                         " over the declared ranges")));
  }
  return ctx.Error(absl::StrCat(reason, ": ", a.ToString(), " != ", b.ToString()));
}

absl::StatusOr<int64_t> NormalizeAxis(InferenceContext& ctx, int64_t axis, int64_t rank,
                                      absl::string_view what) {
  if (axis < -rank || axis >= rank) {
    return ctx.Error(absl::StrCat(what, " ", axis, " is out of range for rank ", rank));
  }
  return axis < 0 ? axis + rank : axis;
}

absl::StatusOr<std::optional<std::vector<int64_t>>> ReadIntList(InferenceContext& ctx,
                                                                const std::string& attr,
                                                                int input_index,
                                                                int input_since_opset) {
  if (ctx.opset() >= input_since_opset) {
    if (!ctx.HasInput(input_index)) return std::optional<std::vector<int64_t>>();
    std::optional<std::vector<int64_t>> values = ctx.input_constant_ints(input_index);
    if (!values) {
      return ctx.Error(absl::StrCat("input ", input_index, " ('", attr,
                                    "') must be a constant (or computable from shapes)"));
    }
    return values;
  }
  if (ctx.HasInput(input_index)) {
    return ctx.Error(absl::StrCat("'", attr, "' is an attribute before opset ", input_since_opset,
                                  " (model opset ", ctx.opset(), "), not input ", input_index));
  }
  if (!ctx.attrs().Has(attr)) return std::optional<std::vector<int64_t>>();
  absl::StatusOr<std::vector<int64_t>> values = ctx.attrs().GetInts(attr);
  if (!values.ok()) return ctx.Error(values.status().message());
  return std::optional<std::vector<int64_t>>(*values);
}

absl::StatusOr<std::optional<int64_t>> RuntimeListLength(InferenceContext& ctx, int input_index,
                                                         int input_since_opset) {
  if (ctx.opset() < input_since_opset || !ctx.HasInput(input_index) ||
      ctx.input_constant_ints(input_index).has_value()) {
    return std::optional<int64_t>();
  }
  if (ctx.input_rank(input_index) != 1) return ctx.Error(absl::StrCat("input ", input_index, " must be 1-D"));
  std::optional<int64_t> n = ctx.input_shape(input_index)[0].AsConst();
  if (!n) return ctx.Error(absl::StrCat("input ", input_index, " has a symbolic length"));
  return n;
}

std::vector<SymExpr> DataDependentShape(InferenceContext& ctx, int64_t rank) {
  std::vector<SymExpr> shape;
  for (int64_t i = 0; i < rank; ++i) shape.push_back(ctx.DataDependentDim());
  return shape;
}

std::optional<std::vector<int64_t>> StaticDims(const std::vector<SymExpr>& shape) {
  std::vector<int64_t> out;
  for (SymExpr d : shape) {
    std::optional<int64_t> c = d.AsConst();
    if (!c) return std::nullopt;
    out.push_back(*c);
  }
  return out;
}

SymExpr DimProduct(const std::vector<SymExpr>& shape, size_t begin, size_t end) {
  SymExpr p = 1;
  for (size_t i = begin; i < end && i < shape.size(); ++i) p *= shape[i];
  return p;
}

namespace {

// A monomial as coefficient × factors (symbols or opaque atoms, repeated for powers).
struct Monomial {
  int64_t coefficient = 1;
  std::vector<SymExpr> factors;
};

std::optional<Monomial> AsMonomial(SymExpr e) {
  Monomial m;
  if (e.kind() == ExprKind::kAdd) return std::nullopt;
  if (std::optional<int64_t> c = e.AsConst()) {
    m.coefficient = *c;
    return m;
  }
  if (e.kind() != ExprKind::kMul) {
    m.factors.push_back(e);
    return m;
  }
  for (SymExpr f : e.operands()) {
    if (std::optional<int64_t> c = f.AsConst()) {
      m.coefficient *= *c;
    } else {
      m.factors.push_back(f);
    }
  }
  return m;
}

}  // namespace

std::optional<SymExpr> ExactQuotient(SymExpr a, SymExpr b) {
  if (b == SymExpr(1)) return a;
  if (a == b) return SymExpr(1);
  if (b.kind() == ExprKind::kAdd && !b.operands().empty()) {
    // A sum divisor (16*past + 16*seq): the quotient of the leading terms,
    // kept when it multiplies back exactly (64*batch*(past+seq) / (16*(past+seq))).
    std::vector<SymExpr> terms = a.kind() == ExprKind::kAdd
                                     ? std::vector<SymExpr>(a.operands().begin(), a.operands().end())
                                     : std::vector<SymExpr>{a};
    for (SymExpr term : terms) {
      std::optional<SymExpr> q = ExactQuotient(term, b.operands()[0]);
      if (q && *q * b == a) return q;
    }
    return std::nullopt;
  }
  if (a.kind() == ExprKind::kAdd) {
    SymExpr sum = 0;
    for (SymExpr term : a.operands()) {
      std::optional<SymExpr> q = ExactQuotient(term, b);
      if (!q) return std::nullopt;
      sum += *q;
    }
    return sum;
  }
  std::optional<Monomial> ma = AsMonomial(a), mb = AsMonomial(b);
  if (!ma || !mb || mb->coefficient == 0 || ma->coefficient % mb->coefficient != 0) return std::nullopt;
  std::vector<SymExpr> rest = ma->factors;
  for (SymExpr f : mb->factors) {
    auto it = std::find(rest.begin(), rest.end(), f);
    if (it == rest.end()) return std::nullopt;
    rest.erase(it);
  }
  SymExpr q = ma->coefficient / mb->coefficient;
  for (SymExpr f : rest) q *= f;
  return q;
}

std::optional<std::vector<SymExpr>> BroadcastElements(
    const std::optional<std::vector<SymExpr>>& a, const std::vector<SymExpr>& shape_a,
    const std::optional<std::vector<SymExpr>>& b, const std::vector<SymExpr>& shape_b,
    const std::vector<SymExpr>& out_shape,
    const std::function<std::optional<SymExpr>(SymExpr, SymExpr)>& fn) {
  if (!a || !b) return std::nullopt;
  auto sa = StaticDims(shape_a), sb = StaticDims(shape_b), so = StaticDims(out_shape);
  if (!sa || !sb || !so) return std::nullopt;
  int64_t total = 1;
  for (int64_t d : *so) total *= d;
  if (total > Graph::kMaxElementsTracked) return std::nullopt;
  std::vector<SymExpr> out;
  out.reserve(total);
  size_t rank = so->size();
  // Index into an operand aligned from the right, with broadcast dims pinned to 0.
  auto operand_index = [rank](const std::vector<int64_t>& dims, const std::vector<int64_t>& coord) {
    int64_t index = 0;
    size_t offset = rank - dims.size();
    for (size_t d = 0; d < dims.size(); ++d) {
      index = index * dims[d] + (dims[d] == 1 ? 0 : coord[d + offset]);
    }
    return index;
  };
  std::vector<int64_t> coord(rank, 0);
  for (int64_t linear = 0; linear < total; ++linear) {
    int64_t rest = linear;
    for (size_t d = rank; d-- > 0;) {
      coord[d] = rest % (*so)[d];
      rest /= (*so)[d];
    }
    std::optional<SymExpr> v = fn((*a)[operand_index(*sa, coord)], (*b)[operand_index(*sb, coord)]);
    if (!v) return std::nullopt;
    out.push_back(*v);
  }
  return out;
}

}  // namespace shapeshift
