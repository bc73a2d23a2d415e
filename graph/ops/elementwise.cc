// Shape rules for element-wise ops: unary math and activations (output type =
// input type), broadcasting binary/variadic arithmetic, comparisons and
// logic (bool output), Where, RotateHalfMulAdd, Clip, Cast, Dropout, and the normalizations
// whose output has the input's shape (Softmax, LayerNormalization, RMSNormalization, CumSum).
//
// Integer arithmetic also propagates shape values. ONNX integer Div
// truncates toward zero while SymExpr FloorDiv floors, so Div is folded to
// FloorDiv only when both operands are provably non-negative (then the two
// agree) or both are constants (then it is computed exactly).
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "graph/ops/rules.h"
#include "graph/ops/common.h"

namespace shapeshift {
namespace {

using ElementFn = std::function<std::optional<SymExpr>(SymExpr, SymExpr)>;

absl::Status SameTypeAsInput0(InferenceContext& ctx) {
  ctx.SetOutput(0, ctx.input_type(0));
  return absl::OkStatus();
}

absl::Status RequireFloat(InferenceContext& ctx, int i) {
  if (!IsFloat(ctx.input_dtype(i))) {
    return ctx.Error(absl::StrCat("input ", i, " must be a floating-point tensor, got ",
                                  ctx.input_type(i).ToString()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status rules::FloatUnary(InferenceContext& ctx) {
  if (absl::Status s = RequireFloat(ctx, 0); !s.ok()) return s;
  return SameTypeAsInput0(ctx);
}

namespace {

// Gelu is ONNX opset 20; shapeshift accepts it at every supported opset (an
// extension below 20) because the passes rewrite recognized GELU
// decompositions into it and the optimized graph must stay interpretable.
}  // namespace

absl::Status rules::Gelu(InferenceContext& ctx) {
  absl::StatusOr<std::string> approximate = ctx.attrs().GetString("approximate", "none");
  if (!approximate.ok()) return ctx.Error(approximate.status().message());
  if (*approximate != "none" && *approximate != "tanh") {
    return ctx.Error(absl::StrCat("approximate must be \"none\" or \"tanh\", not \"", *approximate, "\""));
  }
  return FloatUnary(ctx);
}

namespace {

// Unary ops defined on integers too, with their effect on shape values.
}  // namespace

absl::Status rules::NumericUnary(InferenceContext& ctx) {
  const TensorType& t = ctx.input_type(0);
  std::optional<std::vector<SymExpr>> elements;
  const auto& in = ctx.input_elements(0);
  if (in && TracksElements(t.dtype)) {
    std::vector<SymExpr> out;
    for (SymExpr e : *in) {
      const std::string& op = ctx.op_type();
      if (op == "Identity") {
        out.push_back(e);
      } else if (op == "Neg") {
        out.push_back(-e);
      } else if (op == "Relu") {
        out.push_back(ctx.SimplifiedMax(e, 0));
      } else if (op == "Abs" && ctx.CanProve(Predicate::Ge(e, 0))) {
        out.push_back(e);
      } else if (op == "Abs" && ctx.CanProve(Predicate::Le(e, 0))) {
        out.push_back(-e);
      } else {
        break;
      }
    }
    if (out.size() == in->size()) elements = std::move(out);
  }
  ctx.SetOutput(0, t, std::move(elements));
  return absl::OkStatus();
}

absl::Status rules::Trilu(InferenceContext& ctx) {
  if (ctx.input_rank(0) < 2) return ctx.Error("input must have rank >= 2");
  return SameTypeAsInput0(ctx);
}

absl::Status rules::BoolUnary(InferenceContext& ctx) {  // Not
  if (ctx.input_dtype(0) != DType::kBool) return ctx.Error("input must be bool");
  std::optional<std::vector<SymExpr>> elements;
  if (auto in = ctx.input_constant_ints(0)) {
    elements.emplace();
    for (int64_t v : *in) elements->push_back(v == 0 ? 1 : 0);
  }
  ctx.SetOutput(0, ctx.input_type(0), std::move(elements));
  return absl::OkStatus();
}

absl::Status rules::FloatPredicate(InferenceContext& ctx) {  // IsNaN, IsInf
  if (absl::Status s = RequireFloat(ctx, 0); !s.ok()) return s;
  ctx.SetOutput(0, TensorType(DType::kBool, ctx.input_shape(0)));
  return absl::OkStatus();
}

namespace {

std::optional<SymExpr> ConstPair(SymExpr a, SymExpr b, int64_t* x, int64_t* y) {
  auto ca = a.AsConst(), cb = b.AsConst();
  if (!ca || !cb) return std::nullopt;
  *x = *ca;
  *y = *cb;
  return SymExpr(int64_t{0});
}

// The element function for a binary arithmetic/comparison op on integers.
ElementFn ElementFunction(InferenceContext& ctx) {
  const std::string& op = ctx.op_type();
  if (op == "Add") return [](SymExpr a, SymExpr b) -> std::optional<SymExpr> { return a + b; };
  if (op == "Sub") return [](SymExpr a, SymExpr b) -> std::optional<SymExpr> { return a - b; };
  if (op == "Mul") return [](SymExpr a, SymExpr b) -> std::optional<SymExpr> { return a * b; };
  if (op == "Div") {
    return [&ctx](SymExpr a, SymExpr b) -> std::optional<SymExpr> {
      int64_t x, y;
      if (ConstPair(a, b, &x, &y)) {
        if (y == 0 || (y == -1 && x == std::numeric_limits<int64_t>::min())) return std::nullopt;
        return SymExpr(x / y);  // C++ integer division truncates, like ONNX
      }
      // batch*seq / batch (torch.export's `floordiv` of a shape product) is
      // seq exactly, whatever rounding the op uses.
      if (std::optional<SymExpr> q = ExactQuotient(a, b); q && ctx.CanProve(Predicate::Gt(b, 0))) return *q;
      if (ctx.CanProve(Predicate::Ge(a, 0)) && ctx.CanProve(Predicate::Gt(b, 0))) return FloorDiv(a, b);
      return std::nullopt;
    };
  }
  if (op == "Mod") {
    bool fmod = ctx.attrs().GetInt("fmod", 0).value_or(0) != 0;
    return [&ctx, fmod](SymExpr a, SymExpr b) -> std::optional<SymExpr> {
      int64_t x, y;
      if (ConstPair(a, b, &x, &y)) {
        if (y == 0 || y == -1) return y == -1 ? std::optional<SymExpr>(SymExpr(int64_t{0})) : std::nullopt;
        return SymExpr(fmod ? x % y : FloorModInt(x, y));
      }
      bool positive_divisor = ctx.CanProve(Predicate::Gt(b, 0));
      if (!fmod && positive_divisor) return Mod(a, b);
      if (fmod && positive_divisor && ctx.CanProve(Predicate::Ge(a, 0))) return Mod(a, b);
      return std::nullopt;
    };
  }
  if (op == "Pow") {
    return [](SymExpr a, SymExpr b) -> std::optional<SymExpr> {
      int64_t x, y;
      if (!ConstPair(a, b, &x, &y) || y < 0 || y > 62) return std::nullopt;
      int64_t r = 1;
      for (int64_t i = 0; i < y; ++i) {
        if (__builtin_mul_overflow(r, x, &r)) return std::nullopt;
      }
      return SymExpr(r);
    };
  }
  if (op == "Min") return [&ctx](SymExpr a, SymExpr b) -> std::optional<SymExpr> { return ctx.SimplifiedMin(a, b); };
  if (op == "Max") return [&ctx](SymExpr a, SymExpr b) -> std::optional<SymExpr> { return ctx.SimplifiedMax(a, b); };
  if (op == "Sum") return [](SymExpr a, SymExpr b) -> std::optional<SymExpr> { return a + b; };
  // Comparisons: decided only when provable; otherwise unknown.
  auto decide = [&ctx](Predicate yes, Predicate no) -> std::optional<SymExpr> {
    if (ctx.CanProve(yes)) return SymExpr(1);
    if (ctx.CanProve(no)) return SymExpr(int64_t{0});
    return std::nullopt;
  };
  if (op == "Equal") {
    return [decide](SymExpr a, SymExpr b) -> std::optional<SymExpr> {
      if (a == b) return SymExpr(1);
      return decide(Predicate::Eq(a, b), Predicate::Ne(a, b));
    };
  }
  if (op == "Less") return [decide](SymExpr a, SymExpr b) { return decide(Predicate::Lt(a, b), Predicate::Ge(a, b)); };
  if (op == "LessOrEqual") return [decide](SymExpr a, SymExpr b) { return decide(Predicate::Le(a, b), Predicate::Gt(a, b)); };
  if (op == "Greater") return [decide](SymExpr a, SymExpr b) { return decide(Predicate::Gt(a, b), Predicate::Le(a, b)); };
  if (op == "GreaterOrEqual") return [decide](SymExpr a, SymExpr b) { return decide(Predicate::Ge(a, b), Predicate::Lt(a, b)); };
  auto logic = [](bool (*f)(bool, bool)) {
    return [f](SymExpr a, SymExpr b) -> std::optional<SymExpr> {
      int64_t x, y;
      if (!ConstPair(a, b, &x, &y)) return std::nullopt;
      return SymExpr(f(x != 0, y != 0) ? 1 : 0);
    };
  };
  if (op == "And") return logic([](bool x, bool y) { return x && y; });
  if (op == "Or") return logic([](bool x, bool y) { return x || y; });
  if (op == "Xor") return logic([](bool x, bool y) { return x != y; });
  return [](SymExpr, SymExpr) -> std::optional<SymExpr> { return std::nullopt; };
}

bool IsComparison(const std::string& op) {
  return op == "Equal" || op == "Less" || op == "LessOrEqual" || op == "Greater" ||
         op == "GreaterOrEqual";
}

bool IsLogic(const std::string& op) { return op == "And" || op == "Or" || op == "Xor"; }

// Binary and variadic broadcasting ops (Add ... Xor, Min/Max/Sum/Mean, PRelu).
}  // namespace

absl::Status rules::Broadcasting(InferenceContext& ctx) {
  const std::string& op = ctx.op_type();
  if (ctx.attrs().Has("broadcast")) {
    return ctx.Error("the legacy 'broadcast' attribute (opset < 7) is not supported");
  }
  DType dtype = ctx.input_dtype(0);
  bool mixed_ok = op == "Pow";  // base and exponent types may differ
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    if (!mixed_ok && ctx.input_dtype(i) != dtype) {
      return ctx.Error(absl::StrCat("input dtypes differ: input 0 is ", ctx.input_type(0).ToString(),
                                    ", input ", i, " is ", ctx.input_type(i).ToString()));
    }
  }
  if (IsLogic(op) && dtype != DType::kBool) return ctx.Error("inputs must be bool");
  std::vector<SymExpr> shape = ctx.input_shape(0);
  std::optional<std::vector<SymExpr>> elements = ctx.input_elements(0);
  ElementFn fn = ElementFunction(ctx);
  bool track = TracksElements(dtype) && op != "Mean" && op != "PRelu";
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    absl::StatusOr<std::vector<SymExpr>> out = BroadcastShapes(ctx, shape, ctx.input_shape(i));
    if (!out.ok()) return out.status();
    if (track) {
      elements = BroadcastElements(elements, shape, ctx.input_elements(i), ctx.input_shape(i), *out, fn);
    }
    shape = std::move(*out);
  }
  if (!track) elements.reset();
  DType out_dtype = IsComparison(op) || IsLogic(op) ? DType::kBool : dtype;
  ctx.SetOutput(0, TensorType(out_dtype, std::move(shape)), std::move(elements));
  return absl::OkStatus();
}

absl::Status rules::Where(InferenceContext& ctx) {
  if (ctx.input_dtype(0) != DType::kBool) return ctx.Error("condition (input 0) must be bool");
  if (ctx.input_dtype(1) != ctx.input_dtype(2)) {
    return ctx.Error(absl::StrCat("X and Y dtypes differ: ", ctx.input_type(1).ToString(), " vs ",
                                  ctx.input_type(2).ToString()));
  }
  auto xy = BroadcastShapes(ctx, ctx.input_shape(1), ctx.input_shape(2));
  if (!xy.ok()) return xy.status();
  auto shape = BroadcastShapes(ctx, ctx.input_shape(0), *xy);
  if (!shape.ok()) return shape.status();
  std::optional<std::vector<SymExpr>> elements;
  if (TracksElements(ctx.input_dtype(1))) {
    // Select x where cond is a constant 1, y where it is 0 (cond must be known).
    auto x_full = BroadcastElements(
        ctx.input_elements(1), ctx.input_shape(1), ctx.input_elements(2), ctx.input_shape(2), *xy,
        [](SymExpr x, SymExpr) -> std::optional<SymExpr> { return x; });
    auto y_full = BroadcastElements(
        ctx.input_elements(1), ctx.input_shape(1), ctx.input_elements(2), ctx.input_shape(2), *xy,
        [](SymExpr, SymExpr y) -> std::optional<SymExpr> { return y; });
    if (x_full && y_full) {
      // Broadcast the condition against element positions, then pick x or y.
      std::vector<SymExpr> index(x_full->size());
      for (size_t i = 0; i < index.size(); ++i) index[i] = static_cast<int64_t>(i);
      elements = BroadcastElements(
          ctx.input_elements(0), ctx.input_shape(0), index, *xy, *shape,
          [&](SymExpr c, SymExpr i) -> std::optional<SymExpr> {
            auto cc = c.AsConst();
            if (!cc) return std::nullopt;
            size_t k = static_cast<size_t>(*i.AsConst());
            return *cc != 0 ? (*x_full)[k] : (*y_full)[k];
          });
    }
  }
  ctx.SetOutput(0, TensorType(ctx.input_dtype(1), std::move(*shape)), std::move(elements));
  return absl::OkStatus();
}

// The fused rotary position embeddings (passes/rotary_embedding_recognition.h;
// shapeshift ops, not ONNX's; semantics in graph/reference/rotary.cc). The
// rotation acts on X's last axis, so that dim must be a known even number.
// Both, RotateHalfMulAdd(X, A, B) {rotary_dim = r} = X' * A + rotate_half(X') * B
// and RotateEveryTwoMulAdd, rotate X' = X[..., :r] (r even, 2 <= r <= d,
// default d) and pass X[..., r:] through: the shape is the broadcast of X', A
// and B, which for r < d must keep X's leading dims (it is concatenated with
// X[..., r:]), last dim d.
namespace {

absl::Status RotaryMulAdd(InferenceContext& ctx) {
  for (int i = 0; i < 3; ++i) {
    if (absl::Status s = RequireFloat(ctx, i); !s.ok()) return s;
    if (ctx.input_dtype(i) != ctx.input_dtype(0)) {
      return ctx.Error(absl::StrCat("input dtypes differ: input 0 is ", ctx.input_type(0).ToString(), ", input ", i,
                                    " is ", ctx.input_type(i).ToString()));
    }
  }
  std::vector<SymExpr> x = ctx.input_shape(0);
  std::optional<int64_t> d = x.empty() ? std::nullopt : x.back().AsConst();
  if (!d || *d < 2 || *d % 2 != 0) {
    return ctx.Error(absl::StrCat("the last dim of X must be a known even number, got ",
                                  ctx.input_type(0).ToString()));
  }
  absl::StatusOr<int64_t> attr = ctx.attrs().GetInt("rotary_dim", *d);
  if (!attr.ok()) return ctx.Error(attr.status().message());
  if (*attr < 2 || *attr > *d || *attr % 2 != 0) {
    return ctx.Error(absl::StrCat("rotary_dim must be even and within [2, ", *d, "], got ", *attr));
  }
  const int64_t r = *attr;
  const std::vector<SymExpr> leading(x.begin(), x.end() - 1);
  x.back() = SymExpr(r);
  auto ab = BroadcastShapes(ctx, ctx.input_shape(1), ctx.input_shape(2));
  if (!ab.ok()) return ab.status();
  auto shape = BroadcastShapes(ctx, x, *ab);
  if (!shape.ok()) return shape.status();
  if (r < *d) {
    if (shape->size() != x.size()) {
      return ctx.Error(absl::StrCat("with rotary_dim ", r, " < ", *d, " A and B must not add dims to X, got ",
                                    ctx.input_type(1).ToString(), " and ", ctx.input_type(2).ToString()));
    }
    for (size_t k = 0; k < leading.size(); ++k) {
      if (absl::Status s = RequireEqualDims(ctx, (*shape)[k], leading[k],
                                            absl::StrCat("rotary dim ", k, " of the rotated part and of X"));
          !s.ok()) {
        return s;
      }
    }
    shape->back() = SymExpr(*d);
  }
  ctx.SetOutput(0, TensorType(ctx.input_dtype(0), std::move(*shape)));
  return absl::OkStatus();
}

}  // namespace

absl::Status rules::RotateHalfMulAdd(InferenceContext& ctx) { return RotaryMulAdd(ctx); }
absl::Status rules::RotateEveryTwoMulAdd(InferenceContext& ctx) { return RotaryMulAdd(ctx); }

// CausalSoftmax(X[, M]) {window, fill[, keep_window, keep_fill]}: the
// softmax over X's last axis of X + (allowed(i, j) ? M : fill), i and j the
// last two indices (a shapeshift op, passes/causal_mask_recognition.h); with
// a bool M, of (allowed(i, j) and M) ? X : fill (masked_fill's form); with
// keep_fill, X there is keep(i, j) ? X : keep_fill (keep: the causal
// predicate with keep_window). M broadcasts to X, which keeps its type.
absl::Status rules::CausalSoftmax(InferenceContext& ctx) {
  if (absl::Status s = RequireFloat(ctx, 0); !s.ok()) return s;
  if (ctx.input_rank(0) < 2) {
    return ctx.Error(absl::StrCat("X needs rank >= 2 (queries, keys), got ", ctx.input_type(0).ToString()));
  }
  absl::StatusOr<int64_t> window = ctx.attrs().GetInt("window", 0);
  if (!window.ok()) return ctx.Error(window.status().message());
  if (*window < 0) return ctx.Error(absl::StrCat("window must be >= 0 (0: none), got ", *window));
  if (!ctx.attrs().Has("fill")) return ctx.Error("the attribute fill (the masked entries' addend) is required");
  if (absl::StatusOr<float> fill = ctx.attrs().GetFloat("fill", 0); !fill.ok()) return ctx.Error(fill.status().message());
  absl::StatusOr<int64_t> keep_window = ctx.attrs().GetInt("keep_window", 0);
  if (!keep_window.ok()) return ctx.Error(keep_window.status().message());
  if (*keep_window < 0) return ctx.Error(absl::StrCat("keep_window must be >= 0 (0: none), got ", *keep_window));
  if (ctx.attrs().Has("keep_window") && !ctx.attrs().Has("keep_fill")) {
    return ctx.Error("keep_window needs keep_fill (the value of X where keep is false)");
  }
  if (absl::StatusOr<float> keep_fill = ctx.attrs().GetFloat("keep_fill", 0); !keep_fill.ok()) {
    return ctx.Error(keep_fill.status().message());
  }
  if (ctx.HasInput(1)) {
    if (ctx.input_dtype(1) != ctx.input_dtype(0) && ctx.input_dtype(1) != DType::kBool) {
      return ctx.Error(absl::StrCat("M has dtype ", DTypeName(ctx.input_dtype(1)), ", X has ",
                                    DTypeName(ctx.input_dtype(0)), " (M is X's type, or bool to select)"));
    }
    if (ctx.input_rank(1) > ctx.input_rank(0)) {
      return ctx.Error(absl::StrCat("M ", ctx.input_type(1).ToString(), " does not broadcast to X ",
                                    ctx.input_type(0).ToString()));
    }
    auto shape = BroadcastShapes(ctx, ctx.input_shape(0), ctx.input_shape(1));
    if (!shape.ok()) return shape.status();
  }
  return SameTypeAsInput0(ctx);
}

absl::Status rules::Clip(InferenceContext& ctx) {
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    if (ctx.HasInput(i) && ctx.input_dtype(i) != ctx.input_dtype(0)) {
      return ctx.Error(absl::StrCat("min/max input ", i, " has dtype ", DTypeName(ctx.input_dtype(i)),
                                    ", expected ", DTypeName(ctx.input_dtype(0))));
    }
    if (ctx.HasInput(i) && ctx.input_rank(i) != 0) {
      return ctx.Error(absl::StrCat("min/max input ", i, " must be a scalar, got ",
                                    ctx.input_type(i).ToString()));
    }
  }
  return SameTypeAsInput0(ctx);
}

absl::Status rules::Cast(InferenceContext& ctx) {
  absl::StatusOr<int64_t> to = ctx.attrs().GetInt("to");
  if (!to.ok()) return ctx.Error(to.status().message());
  std::optional<DType> dtype = DTypeFromOnnx(static_cast<int>(*to));
  if (!dtype) return ctx.Error(absl::StrCat("unsupported target element type ", *to));
  std::optional<std::vector<SymExpr>> elements;
  DType from = ctx.input_dtype(0);
  if (TracksElements(from) && TracksElements(*dtype) && ctx.input_elements(0)) {
    if (*dtype == DType::kBool) {
      if (auto ints = ctx.input_constant_ints(0)) {
        elements.emplace();
        for (int64_t v : *ints) elements->push_back(v != 0 ? 1 : 0);
      }
    } else if (*dtype == DType::kI64 || from != DType::kI64) {
      elements = ctx.input_elements(0);  // widening (or same width): values unchanged
    } else if (*dtype == DType::kI32) {
      // Narrowing keeps the values only when each provably fits in 32 bits.
      std::vector<SymExpr> kept;
      for (SymExpr e : *ctx.input_elements(0)) {
        if (!ctx.CanProve(Predicate::Le(e, std::numeric_limits<int32_t>::max())) ||
            !ctx.CanProve(Predicate::Ge(e, std::numeric_limits<int32_t>::min()))) {
          break;
        }
        kept.push_back(e);
      }
      if (kept.size() == ctx.input_elements(0)->size()) elements = std::move(kept);
    }
  }
  ctx.SetOutput(0, TensorType(*dtype, ctx.input_shape(0)), std::move(elements));
  return absl::OkStatus();
}

absl::Status rules::Dropout(InferenceContext& ctx) {
  ctx.SetOutput(0, ctx.input_type(0), ctx.input_elements(0));
  if (ctx.num_outputs() > 1) ctx.SetOutput(1, TensorType(DType::kBool, ctx.input_shape(0)));
  return absl::OkStatus();
}

absl::Status rules::SoftmaxLike(InferenceContext& ctx) {  // Softmax, LogSoftmax, CumSum
  int64_t rank = ctx.input_rank(0);
  if (ctx.op_type() != "CumSum") {
    int64_t fallback = ctx.opset() >= 13 ? -1 : 1;
    absl::StatusOr<int64_t> axis = ctx.attrs().GetInt("axis", fallback);
    if (!axis.ok()) return ctx.Error(axis.status().message());
    if (rank > 0) {
      if (auto a = NormalizeAxis(ctx, *axis, rank); !a.ok()) return a.status();
    }
    if (absl::Status s = RequireFloat(ctx, 0); !s.ok()) return s;
  } else if (ctx.input_rank(1) > 1) {
    return ctx.Error("axis input must be a scalar or 1-element tensor");
  }
  return SameTypeAsInput0(ctx);
}

absl::Status rules::LayerNormalization(InferenceContext& ctx) {
  if (absl::Status s = RequireFloat(ctx, 0); !s.ok()) return s;
  int64_t rank = ctx.input_rank(0);
  absl::StatusOr<int64_t> axis_attr = ctx.attrs().GetInt("axis", -1);
  if (!axis_attr.ok()) return ctx.Error(axis_attr.status().message());
  absl::StatusOr<int64_t> axis = NormalizeAxis(ctx, *axis_attr, rank);
  if (!axis.ok()) return axis.status();
  const std::vector<SymExpr>& x = ctx.input_shape(0);
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    if (!ctx.HasInput(i)) continue;
    // Scale and bias broadcast to the normalized trailing dims.
    std::vector<SymExpr> tail(x.begin() + *axis, x.end());
    auto b = BroadcastShapes(ctx, tail, ctx.input_shape(i));
    if (!b.ok()) return b.status();
    if (b->size() != tail.size()) {
      return ctx.Error(absl::StrCat("input ", i, " ", ctx.input_type(i).ToString(),
                                    " has more dims than the normalized shape ", ShapeToString(tail)));
    }
  }
  ctx.SetOutput(0, ctx.input_type(0));
  std::vector<SymExpr> stats = x;
  for (int64_t d = *axis; d < rank; ++d) stats[d] = 1;
  for (int i = 1; i < ctx.num_outputs(); ++i) ctx.SetOutput(i, TensorType(DType::kF32, stats));
  return absl::OkStatus();
}

}  // namespace shapeshift
