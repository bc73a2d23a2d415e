// Reductions over a set of axes (Reduce*), along one axis (ArgMax/ArgMin)
// and prefix reductions (CumSum).
// Floating-point reductions accumulate in double; integer ones in int64.
//
// Opset differences: the axes list moved from an attribute to an optional
// second input (ReduceSum at opset 13, the other Reduce* at 18). The kernel
// reads the input when present and the attribute otherwise, so both forms
// work at any opset; with neither, all axes are reduced unless
// noop_with_empty_axes=1, which makes the op an identity.
#include <cmath>
#include <limits>
#include <set>
#include <type_traits>

#include "graph/reference/kernel_util.h"

namespace shapeshift::reference {
namespace {

enum class ReduceKind { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kLogSum, kLogSumExp, kSumSquare };

struct ReduceOp {
  const char* name;
  ReduceKind kind;
};

constexpr ReduceOp kReduceOps[] = {
    {"ReduceSum", ReduceKind::kSum},          {"ReduceMean", ReduceKind::kMean},
    {"ReduceMax", ReduceKind::kMax},          {"ReduceMin", ReduceKind::kMin},
    {"ReduceProd", ReduceKind::kProd},        {"ReduceL1", ReduceKind::kL1},
    {"ReduceL2", ReduceKind::kL2},            {"ReduceLogSum", ReduceKind::kLogSum},
    {"ReduceLogSumExp", ReduceKind::kLogSumExp}, {"ReduceSumSquare", ReduceKind::kSumSquare},
};

template <typename Acc>
Acc Initial(ReduceKind kind) {
  switch (kind) {
    // An empty reduction gives -inf / +inf for floats (lowest / max for ints).
    case ReduceKind::kMax:
      return std::numeric_limits<Acc>::has_infinity ? -std::numeric_limits<Acc>::infinity()
                                                    : std::numeric_limits<Acc>::lowest();
    case ReduceKind::kMin:
      return std::numeric_limits<Acc>::has_infinity ? std::numeric_limits<Acc>::infinity()
                                                    : std::numeric_limits<Acc>::max();
    case ReduceKind::kProd: return Acc{1};
    default: return Acc{0};
  }
}

template <typename Acc>
Acc Combine(ReduceKind kind, Acc acc, Acc x) {
  if constexpr (std::is_floating_point_v<Acc>) {
    // ReduceMax/ReduceMin of a set holding a NaN is NaN (numpy.max). ONNX
    // Runtime keeps the NaN only when it comes first in the row (or lands in
    // a vector tail): an artefact of its loop, not a semantics to copy.
    if ((kind == ReduceKind::kMax || kind == ReduceKind::kMin) && (std::isnan(acc) || std::isnan(x))) {
      return std::isnan(acc) ? acc : x;
    }
  }
  switch (kind) {
    case ReduceKind::kMax: return x > acc ? x : acc;
    case ReduceKind::kMin: return x < acc ? x : acc;
    case ReduceKind::kProd: return acc * x;
    case ReduceKind::kL1: return acc + (x < 0 ? -x : x);
    case ReduceKind::kL2:
    case ReduceKind::kSumSquare: return acc + x * x;
    case ReduceKind::kLogSumExp: return acc + static_cast<Acc>(std::exp(static_cast<double>(x)));  // x is shifted
    default: return acc + x;
  }
}

// Kinds whose result is the accumulator itself (exact for integers).
bool IsExact(ReduceKind kind) {
  return kind != ReduceKind::kMean && kind != ReduceKind::kL2 && kind != ReduceKind::kLogSum &&
         kind != ReduceKind::kLogSumExp;
}

// A sum accumulated in double where a sum of T's would have overflowed:
// +-inf, as the f32 kernels (shapeshift's and ONNX Runtime's) give, so
// ReduceMean of a row of FLT_MAX is inf, not FLT_MAX. (A sum that overflows
// only partway and cancels later depends on the order; it is not modelled.)
template <typename T>
double OverflowLike(double sum) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::abs(sum) > static_cast<double>(std::numeric_limits<T>::max())) {
      return std::copysign(std::numeric_limits<double>::infinity(), sum);
    }
  }
  return sum;
}

// The result of a non-exact kind from its accumulated value.
double Finish(ReduceKind kind, double acc, int64_t count) {
  switch (kind) {
    case ReduceKind::kMean: return acc / static_cast<double>(count);
    case ReduceKind::kL2: return std::sqrt(acc);
    default: return std::log(acc);  // kLogSum, kLogSumExp
  }
}

// `v` as T. For integer T a non-finite or out-of-range value (log of an
// empty or zero sum is -inf; the mean of an empty set is NaN) has no C++
// conversion: it saturates to T's limits, NaN becomes 0.
template <typename T>
T ToElement(double v) {
  if constexpr (std::is_integral_v<T>) {
    if (std::isnan(v)) return T{0};
    if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  }
  return static_cast<T>(v);
}

// The axes to reduce, or nullopt for "no reduction" (noop_with_empty_axes).
absl::StatusOr<std::optional<std::vector<int64_t>>> ReduceAxes(const KernelArgs& args,
                                                               int64_t rank) {
  std::vector<int64_t> axes;
  if (const Tensor* t = OptionalInput(args, 1)) {
    absl::StatusOr<std::vector<int64_t>> v = ToInt64s(*t, "axes input");
    if (!v.ok()) return v.status();
    axes = *v;
  } else {
    absl::StatusOr<std::vector<int64_t>> v = args.attrs->GetInts("axes", {});
    if (!v.ok()) return v.status();
    axes = *v;
  }
  if (axes.empty()) {
    absl::StatusOr<int64_t> noop = args.attrs->GetInt("noop_with_empty_axes", 0);
    if (!noop.ok()) return noop.status();
    if (*noop) return std::optional<std::vector<int64_t>>();
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  absl::StatusOr<std::vector<int64_t>> normalized = NormalizeAxes(axes, rank);
  if (!normalized.ok()) return normalized.status();
  return std::optional<std::vector<int64_t>>(*normalized);
}

KernelResult Reduce(const KernelArgs& args) {
  const ReduceOp* op = nullptr;
  for (const ReduceOp& candidate : kReduceOps) {
    if (args.op_type == candidate.name) op = &candidate;
  }
  if (op == nullptr) return absl::InternalError("not a reduce op");
  absl::StatusOr<const Tensor*> x = RequiredInput(args, 0);
  if (!x.ok()) return x.status();
  absl::StatusOr<int64_t> keepdims = args.attrs->GetInt("keepdims", 1);
  if (!keepdims.ok()) return keepdims.status();
  absl::StatusOr<std::optional<std::vector<int64_t>>> axes = ReduceAxes(args, (*x)->rank());
  if (!axes.ok()) return axes.status();
  if (!axes->has_value()) return std::vector<Tensor>{**x};

  const std::vector<int64_t>& in_shape = (*x)->shape();
  const std::set<int64_t> reduced(axes->value().begin(), axes->value().end());
  std::vector<int64_t> kept_shape;  // rank preserved, reduced dims are 1
  std::vector<int64_t> out_shape;
  int64_t count = 1;
  for (int64_t d = 0; d < (*x)->rank(); ++d) {
    const bool r = reduced.count(d) > 0;
    kept_shape.push_back(r ? 1 : in_shape[d]);
    if (r) count *= in_shape[d];
    if (!r || *keepdims) out_shape.push_back(r ? 1 : in_shape[d]);
  }
  absl::StatusOr<Tensor> out = NewOutput((*x)->dtype(), out_shape);
  if (!out.ok()) return out.status();
  absl::Status st = VisitNumeric(args, (*x)->dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;
    const T* in = (*x)->data<T>();
    // LogSumExp subtracts each output's maximum before exp (and adds it back
    // after the log), so large inputs do not overflow.
    std::vector<double> shift(out->num_elements(), 0.0);
    if (op->kind == ReduceKind::kLogSumExp) {
      std::vector<double> max(out->num_elements(), -std::numeric_limits<double>::infinity());
      IndexWalker walk = IndexWalker::Broadcast(in_shape, {kept_shape});
      for (int64_t i = 0; i < (*x)->num_elements(); ++i, walk.Next()) {
        max[walk.offset(0)] = std::max(max[walk.offset(0)], static_cast<double>(in[i]));
      }
      for (size_t i = 0; i < max.size(); ++i) shift[i] = std::isfinite(max[i]) ? max[i] : 0.0;
    }
    std::vector<Acc> acc(out->num_elements(), Initial<Acc>(op->kind));
    IndexWalker walk = IndexWalker::Broadcast(in_shape, {kept_shape});
    for (int64_t i = 0; i < (*x)->num_elements(); ++i, walk.Next()) {
      Acc& a = acc[walk.offset(0)];
      const Acc v = op->kind == ReduceKind::kLogSumExp
                        ? static_cast<Acc>(in[i] - shift[walk.offset(0)])
                        : static_cast<Acc>(in[i]);
      a = Combine<Acc>(op->kind, a, v);
    }
    T* o = out->mutable_data<T>();
    for (int64_t i = 0; i < out->num_elements(); ++i) {
      if (IsExact(op->kind)) {
        o[i] = static_cast<T>(acc[i]);
      } else {
        const double sum = op->kind == ReduceKind::kLogSumExp ? static_cast<double>(acc[i])
                                                              : OverflowLike<T>(static_cast<double>(acc[i]));
        o[i] = ToElement<T>(Finish(op->kind, sum, count) + shift[i]);
      }
    }
    return absl::OkStatus();
  });
  if (!st.ok()) return st;
  return std::vector<Tensor>{*std::move(out)};
}

// ArgMax/ArgMin along `axis`; ties go to the first index unless
// select_last_index=1.
KernelResult ArgReduce(const KernelArgs& args) {
  const bool is_max = args.op_type == "ArgMax";
  absl::StatusOr<const Tensor*> x = RequiredInput(args, 0);
  if (!x.ok()) return x.status();
  absl::StatusOr<int64_t> axis_attr = args.attrs->GetInt("axis", 0);
  absl::StatusOr<int64_t> keepdims = args.attrs->GetInt("keepdims", 1);
  absl::StatusOr<int64_t> last = args.attrs->GetInt("select_last_index", 0);
  for (const auto* s : {&axis_attr, &keepdims, &last}) {
    if (!s->ok()) return s->status();
  }
  absl::StatusOr<int64_t> axis = NormalizeAxis(*axis_attr, (*x)->rank());
  if (!axis.ok()) return axis.status();
  const std::vector<int64_t>& shape = (*x)->shape();
  const int64_t outer = Product(shape, 0, *axis);
  const int64_t n = shape[*axis];
  const int64_t inner = Product(shape, *axis + 1);
  if (n == 0) return Invalid("cannot take ", args.op_type, " over an empty axis");
  std::vector<int64_t> out_shape;
  for (int64_t d = 0; d < (*x)->rank(); ++d) {
    if (d != *axis) {
      out_shape.push_back(shape[d]);
    } else if (*keepdims) {
      out_shape.push_back(1);
    }
  }
  absl::StatusOr<Tensor> out = NewOutput(DType::kI64, out_shape);
  if (!out.ok()) return out.status();
  int64_t* o = out->mutable_data<int64_t>();
  absl::Status st = VisitNumeric(args, (*x)->dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = (*x)->data<T>();
    for (int64_t a = 0; a < outer; ++a) {
      for (int64_t b = 0; b < inner; ++b) {
        const T* base = in + a * n * inner + b;
        int64_t best = 0;
        for (int64_t k = 1; k < n; ++k) {
          const T v = base[k * inner];
          const T cur = base[best * inner];
          const bool better = is_max ? (v > cur || (*last && v == cur))
                                     : (v < cur || (*last && v == cur));
          if (better) best = k;
        }
        o[a * inner + b] = best;
      }
    }
    return absl::OkStatus();
  });
  if (!st.ok()) return st;
  return std::vector<Tensor>{*std::move(out)};
}


// CumSum along the axis given by a scalar input; `exclusive` shifts the sum
// by one element, `reverse` runs from the end.
KernelResult CumSum(const KernelArgs& args) {
  absl::StatusOr<const Tensor*> x = RequiredInput(args, 0);
  if (!x.ok()) return x.status();
  absl::StatusOr<const Tensor*> axis_input = RequiredInput(args, 1);
  if (!axis_input.ok()) return axis_input.status();
  absl::StatusOr<int64_t> axis_value = ToScalarInt64(**axis_input, "axis input");
  if (!axis_value.ok()) return axis_value.status();
  absl::StatusOr<int64_t> axis = NormalizeAxis(*axis_value, (*x)->rank());
  if (!axis.ok()) return axis.status();
  absl::StatusOr<int64_t> exclusive = args.attrs->GetInt("exclusive", 0);
  absl::StatusOr<int64_t> reverse = args.attrs->GetInt("reverse", 0);
  if (!exclusive.ok()) return exclusive.status();
  if (!reverse.ok()) return reverse.status();
  const std::vector<int64_t>& shape = (*x)->shape();
  const int64_t outer = Product(shape, 0, *axis);
  const int64_t n = shape[*axis];
  const int64_t inner = Product(shape, *axis + 1);
  absl::StatusOr<Tensor> out = NewOutput((*x)->dtype(), shape);
  if (!out.ok()) return out.status();
  absl::Status st = VisitNumeric(args, (*x)->dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;
    const T* in = (*x)->data<T>();
    T* o = out->mutable_data<T>();
    for (int64_t a = 0; a < outer; ++a) {
      for (int64_t b = 0; b < inner; ++b) {
        Acc sum = 0;
        for (int64_t step = 0; step < n; ++step) {
          const int64_t k = *reverse ? n - 1 - step : step;
          const int64_t at = (a * n + k) * inner + b;
          if (*exclusive) {
            o[at] = static_cast<T>(sum);
            sum += static_cast<Acc>(in[at]);
          } else {
            sum += static_cast<Acc>(in[at]);
            o[at] = static_cast<T>(sum);
          }
        }
      }
    }
    return absl::OkStatus();
  });
  if (!st.ok()) return st;
  return std::vector<Tensor>{*std::move(out)};
}

}  // namespace

void RegisterReduceKernels(KernelRegistry& registry) {
  for (const ReduceOp& op : kReduceOps) registry.Add(op.name, Reduce, HalfPrecision::kViaF32);
  registry.Add("ArgMax", ArgReduce, HalfPrecision::kViaF32);
  registry.Add("ArgMin", ArgReduce, HalfPrecision::kViaF32);
  registry.Add("CumSum", CumSum, HalfPrecision::kViaF32);
}

}  // namespace shapeshift::reference
