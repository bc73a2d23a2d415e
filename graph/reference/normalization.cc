// Softmax, LogSoftmax, CausalSoftmax, LayerNormalization and RMSNormalization, computed in double.
//
// Opset difference that changes results, not just syntax: before opset 13
// Softmax/LogSoftmax flatten the input to 2-D at `axis` (default 1) and
// normalize each row over ALL trailing dims; from 13 on they normalize over
// the single dim `axis` (default -1).
#include <cmath>
#include <limits>
#include <vector>

#include "graph/reference/kernel_util.h"

namespace shapeshift::reference {
namespace {

// (Log)softmax of each of the outer * inner lines of n elements, element k
// of line (a, b) at a * n * inner + b + k * inner.
template <typename T>
void SoftmaxLines(const T* in, T* o, int64_t outer, int64_t n, int64_t inner, bool log) {
  for (int64_t a = 0; a < outer; ++a) {
    for (int64_t b = 0; b < inner; ++b) {
      const int64_t base = a * n * inner + b;
      double max = -std::numeric_limits<double>::infinity();
      for (int64_t k = 0; k < n; ++k) max = std::max(max, static_cast<double>(in[base + k * inner]));
      double sum = 0;
      for (int64_t k = 0; k < n; ++k) sum += std::exp(in[base + k * inner] - max);
      for (int64_t k = 0; k < n; ++k) {
        const double shifted = in[base + k * inner] - max;
        o[base + k * inner] = static_cast<T>(log ? shifted - std::log(sum) : std::exp(shifted) / sum);
      }
    }
  }
}

KernelResult SoftmaxFamily(const KernelArgs& args) {
  const bool log = args.op_type == "LogSoftmax";
  const bool coerce_2d = args.opset < 13;
  absl::StatusOr<const Tensor*> x = RequiredInput(args, 0);
  if (!x.ok()) return x.status();
  absl::StatusOr<int64_t> axis_attr = args.attrs->GetInt("axis", coerce_2d ? 1 : -1);
  if (!axis_attr.ok()) return axis_attr.status();
  const int64_t rank = (*x)->rank();
  if (rank == 0) return Invalid(args.op_type, " needs rank >= 1");
  absl::StatusOr<int64_t> axis = NormalizeAxis(*axis_attr, rank);
  if (!axis.ok()) return axis.status();
  const std::vector<int64_t>& shape = (*x)->shape();
  const int64_t outer = Product(shape, 0, *axis);
  const int64_t n = coerce_2d ? Product(shape, *axis) : shape[*axis];
  const int64_t inner = coerce_2d ? 1 : Product(shape, *axis + 1);
  absl::StatusOr<Tensor> out = NewOutput((*x)->dtype(), shape);
  if (!out.ok()) return out.status();
  absl::Status st = VisitFloat(args, (*x)->dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    SoftmaxLines((*x)->data<T>(), out->mutable_data<T>(), outer, n, inner, log);
    return absl::OkStatus();
  });
  if (!st.ok()) return st;
  return std::vector<Tensor>{*std::move(out)};
}

// CausalSoftmax(X[, M]) {window = 0, fill} (shapeshift's op, not ONNX's):
// with S, T X's last two dims and off = T - S (the keys before the first
// query: a KV cache's past), key j is allowed for query i when
// j <= i + off and, for window > 0, j > i + off - window. Each element is
// V = X + (allowed ? M : fill) (M broadcast; absent: 0), rounded once in
// the element type as the decomposed Add of a Where is — or, with a bool M
// (masked_fill's form), V = (allowed and M) ? X : fill, no arithmetic — and
// the result is Softmax's over the last axis of V: bit for bit the graph
// `causal-mask-recognition` rewrites, fully masked rows included. With
// keep_fill, X in both is first keep ? X : keep_fill (keep: the same
// predicate with keep_window; GPT-Neo's Where over a slice of its causal
// `bias` table), exactly as the decomposed Where.
// Not kViaF32: the decomposed graph on f16 would round V to f16 first.
KernelResult CausalSoftmax(const KernelArgs& args) {
  absl::StatusOr<const Tensor*> x = RequiredInput(args, 0);
  if (!x.ok()) return x.status();
  const Tensor* m = OptionalInput(args, 1);
  absl::StatusOr<int64_t> window = args.attrs->GetInt("window", 0);
  if (!window.ok()) return window.status();
  if (!args.attrs->Has("fill")) return Invalid("CausalSoftmax needs the attribute fill");
  absl::StatusOr<float> fill = args.attrs->GetFloat("fill", 0);
  if (!fill.ok()) return fill.status();
  absl::StatusOr<int64_t> keep_window = args.attrs->GetInt("keep_window", 0);
  if (!keep_window.ok()) return keep_window.status();
  const bool keep_stage = args.attrs->Has("keep_fill");
  absl::StatusOr<float> keep_fill = args.attrs->GetFloat("keep_fill", 0);
  if (!keep_fill.ok()) return keep_fill.status();
  const std::vector<int64_t>& shape = (*x)->shape();
  if (shape.size() < 2) return Invalid("CausalSoftmax needs rank >= 2, got ", ShapeToString(shape));
  const bool select = m != nullptr && m->dtype() == DType::kBool;
  if (m != nullptr) {
    if (!select) {
      if (absl::Status same = RequireSameDType(args, {*x, m}); !same.ok()) return same;
    }
    absl::StatusOr<std::vector<int64_t>> b = BroadcastShapes({shape, m->shape()});
    if (!b.ok() || *b != shape) {
      return Invalid("M ", ShapeToString(m->shape()), " does not broadcast to X ", ShapeToString(shape));
    }
  }
  absl::StatusOr<Tensor> out = NewOutput((*x)->dtype(), shape);
  if (!out.ok()) return out.status();
  const int64_t s = shape[shape.size() - 2];
  const int64_t t = shape.back();
  const int64_t off = t - s;
  absl::Status st = VisitFloat(args, (*x)->dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = (*x)->data<T>();
    std::vector<T> v(static_cast<size_t>(out->num_elements()));
    IndexWalker walk = IndexWalker::Broadcast(shape, {m ? m->shape() : std::vector<int64_t>{}});
    for (int64_t e = 0; e < out->num_elements(); ++e, walk.Next()) {
      const int64_t i = (e / t) % s;
      const int64_t j = e % t;
      const bool allowed = j <= i + off && (*window == 0 || j > i + off - *window);
      const bool kept = !keep_stage || (j <= i + off && (*keep_window == 0 || j > i + off - *keep_window));
      const T xe = kept ? in[e] : static_cast<T>(*keep_fill);
      if (select) {
        v[e] = allowed && m->data<uint8_t>()[walk.offset(0)] != 0 ? xe : static_cast<T>(*fill);
        continue;
      }
      const T add = !allowed ? static_cast<T>(*fill) : m ? m->data<T>()[walk.offset(0)] : T(0);
      v[e] = static_cast<T>(xe + add);
    }
    SoftmaxLines(v.data(), out->mutable_data<T>(), out->num_elements() / std::max<int64_t>(t, 1), t, 1, false);
    return absl::OkStatus();
  });
  if (!st.ok()) return st;
  return std::vector<Tensor>{*std::move(out)};
}

// The attributes LayerNormalization and RMSNormalization share: axis
// (default -1, not yet normalized), epsilon (1e-5) and stash_type (f32 or
// f64; the statistics' type).
struct NormAttrs {
  int64_t axis = -1;
  float epsilon = 1e-5f;
  DType stash = DType::kF32;
};

absl::StatusOr<NormAttrs> ReadNormAttrs(const KernelArgs& args) {
  absl::StatusOr<int64_t> axis = args.attrs->GetInt("axis", -1);
  absl::StatusOr<float> epsilon = args.attrs->GetFloat("epsilon", 1e-5f);
  absl::StatusOr<int64_t> stash_type = args.attrs->GetInt("stash_type", 1);
  if (!axis.ok()) return axis.status();
  if (!epsilon.ok()) return epsilon.status();
  if (!stash_type.ok()) return stash_type.status();
  std::optional<DType> stash = DTypeFromOnnx(static_cast<int>(*stash_type));
  if (!stash || !IsFloat(*stash) || *stash == DType::kF16 || *stash == DType::kBF16) {
    return Unsupported(absl::StrCat(args.op_type, " stash_type ", *stash_type));
  }
  return NormAttrs{*axis, *epsilon, *stash};
}

// LayerNormalization over dims [axis, rank): Y = (X - mean) * invstd *
// Scale + B, with Scale and B broadcast to the normalized shape. Also
// returns Mean and InvStdDev (shape X[:axis] + 1s, f32 for stash_type 1).
//
// Range semantics (f32 inputs): computed in double, but where an f32
// computation must overflow the result overflows here too, so the oracle
// and the compiled kernel agree, and both agree with ONNX Runtime's
// vectorized CPU kernel (the one it runs for rows of 8 or more):
//  - the mean never overflows (|mean| <= max |x|): a row of FLT_MAX has
//    mean FLT_MAX and Y = B;
//  - x - mean beyond the f32 range is +-inf, and so is a sum of squares
//    (x - mean)^2 beyond it: the variance is +inf, InvStdDev 0, and Y is B
//    where x - mean is finite and NaN where it is infinite;
//  - NaN or +-Inf anywhere in a row makes the whole row NaN.
// ONNX Runtime's scalar loop for rows shorter than 8 (Welford's update)
// overflows differently: [-0, 3e38, -3e38, 1e-45] is NaN there and B here
// (and in ORT's kernel for the same values in a row of 8).
KernelResult LayerNormalization(const KernelArgs& args) {
  absl::StatusOr<const Tensor*> x = RequiredInput(args, 0);
  if (!x.ok()) return x.status();
  absl::StatusOr<const Tensor*> scale = RequiredInput(args, 1);
  if (!scale.ok()) return scale.status();
  const Tensor* bias = OptionalInput(args, 2);
  absl::StatusOr<NormAttrs> attrs = ReadNormAttrs(args);
  if (!attrs.ok()) return attrs.status();
  const int64_t axis_attr = attrs->axis;
  const float epsilon = attrs->epsilon;
  const DType stash = attrs->stash;
  std::vector<const Tensor*> same = {*x, *scale};
  if (bias != nullptr) same.push_back(bias);
  absl::Status same_dtype = RequireSameDType(args, same);
  if (!same_dtype.ok()) return same_dtype;
  absl::StatusOr<int64_t> axis = NormalizeAxis(axis_attr, (*x)->rank());
  if (!axis.ok()) return axis.status();
  const std::vector<int64_t>& shape = (*x)->shape();
  const std::vector<int64_t> norm_shape(shape.begin() + *axis, shape.end());
  for (const Tensor* p : {*scale, bias}) {
    if (p == nullptr) continue;
    absl::StatusOr<std::vector<int64_t>> b = BroadcastShapes({p->shape(), norm_shape});
    if (!b.ok() || *b != norm_shape) {
      return Invalid("Scale/B ", ShapeToString(p->shape()), " does not broadcast to ",
                     ShapeToString(norm_shape));
    }
  }
  std::vector<int64_t> stat_shape(shape.begin(), shape.begin() + *axis);
  stat_shape.resize(shape.size(), 1);
  const int64_t outer = Product(shape, 0, *axis);
  const int64_t n = Product(shape, *axis);
  absl::StatusOr<Tensor> y = NewOutput((*x)->dtype(), shape);
  absl::StatusOr<Tensor> mean_out = NewOutput(stash, stat_shape);
  absl::StatusOr<Tensor> inv_out = NewOutput(stash, stat_shape);
  for (const auto* t : {&y, &mean_out, &inv_out}) {
    if (!t->ok()) return t->status();
  }
  const std::vector<int64_t> no_shape;
  absl::Status st = VisitFloat(args, (*x)->dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    // The largest finite value of the element type: past it, T overflows.
    const double range = std::numeric_limits<T>::max();
    auto in_range = [range](double v) {
      return std::abs(v) > range ? std::copysign(std::numeric_limits<double>::infinity(), v) : v;
    };
    const T* in = (*x)->data<T>();
    const T* s = (*scale)->data<T>();
    const T* bptr = bias != nullptr ? bias->data<T>() : nullptr;
    T* o = y->mutable_data<T>();
    std::vector<double> centered(n);
    for (int64_t a = 0; a < outer; ++a) {
      const T* row = in + a * n;
      double mean = 0;
      for (int64_t k = 0; k < n; ++k) mean += row[k];
      mean /= static_cast<double>(n);
      double sum_sq = 0;
      for (int64_t k = 0; k < n; ++k) {
        centered[k] = in_range(row[k] - mean);
        sum_sq += centered[k] * centered[k];
      }
      const double var = in_range(sum_sq) / static_cast<double>(n);
      const double inv_std = 1.0 / std::sqrt(var + static_cast<double>(epsilon));
      IndexWalker walk = IndexWalker::Broadcast(
          norm_shape, {(*scale)->shape(), bias != nullptr ? bias->shape() : no_shape});
      for (int64_t k = 0; k < n; ++k, walk.Next()) {
        double v = centered[k] * inv_std * static_cast<double>(s[walk.offset(0)]);
        if (bptr != nullptr) v += static_cast<double>(bptr[walk.offset(1)]);
        o[a * n + k] = static_cast<T>(v);
      }
      if (stash == DType::kF32) {
        mean_out->mutable_data<float>()[a] = static_cast<float>(mean);
        inv_out->mutable_data<float>()[a] = static_cast<float>(inv_std);
      } else {
        mean_out->mutable_data<double>()[a] = mean;
        inv_out->mutable_data<double>()[a] = inv_std;
      }
    }
    return absl::OkStatus();
  });
  if (!st.ok()) return st;
  return std::vector<Tensor>{*std::move(y), *std::move(mean_out), *std::move(inv_out)};
}

// RMSNormalization (opset 23) over dims [axis, rank): Y = X / sqrt(mean(X^2)
// + epsilon) * Scale, Scale broadcast to the normalized shape. Range
// semantics as LayerNormalization's: a sum of squares beyond the element
// type's range is +inf, so the row is 0 where x is finite (x * 0) and NaN
// where it is infinite — what the decomposed form (Pow, ReduceMean, Sqrt,
// Reciprocal, Mul) computes in f32 too.
KernelResult RMSNormalization(const KernelArgs& args) {
  absl::StatusOr<const Tensor*> x = RequiredInput(args, 0);
  if (!x.ok()) return x.status();
  absl::StatusOr<const Tensor*> scale = RequiredInput(args, 1);
  if (!scale.ok()) return scale.status();
  absl::StatusOr<NormAttrs> attrs = ReadNormAttrs(args);
  if (!attrs.ok()) return attrs.status();
  const int64_t axis_attr = attrs->axis;
  const float epsilon = attrs->epsilon;  // stash_type is checked by ReadNormAttrs; the sums are in double
  absl::Status same_dtype = RequireSameDType(args, {*x, *scale});
  if (!same_dtype.ok()) return same_dtype;
  absl::StatusOr<int64_t> axis = NormalizeAxis(axis_attr, (*x)->rank());
  if (!axis.ok()) return axis.status();
  const std::vector<int64_t>& shape = (*x)->shape();
  const std::vector<int64_t> norm_shape(shape.begin() + *axis, shape.end());
  absl::StatusOr<std::vector<int64_t>> b = BroadcastShapes({(*scale)->shape(), norm_shape});
  if (!b.ok() || *b != norm_shape) {
    return Invalid("Scale ", ShapeToString((*scale)->shape()), " does not broadcast to ", ShapeToString(norm_shape));
  }
  const int64_t outer = Product(shape, 0, *axis);
  const int64_t n = Product(shape, *axis);
  absl::StatusOr<Tensor> y = NewOutput((*x)->dtype(), shape);
  if (!y.ok()) return y.status();
  absl::Status st = VisitFloat(args, (*x)->dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const double range = std::numeric_limits<T>::max();
    const T* in = (*x)->data<T>();
    const T* s = (*scale)->data<T>();
    T* o = y->mutable_data<T>();
    for (int64_t a = 0; a < outer; ++a) {
      const T* row = in + a * n;
      double sum_sq = 0;
      for (int64_t k = 0; k < n; ++k) sum_sq += static_cast<double>(row[k]) * static_cast<double>(row[k]);
      if (sum_sq > range) sum_sq = std::numeric_limits<double>::infinity();
      const double inv_rms = 1.0 / std::sqrt(sum_sq / static_cast<double>(n) + static_cast<double>(epsilon));
      IndexWalker walk = IndexWalker::Broadcast(norm_shape, {(*scale)->shape()});
      for (int64_t k = 0; k < n; ++k, walk.Next()) {
        o[a * n + k] = static_cast<T>(static_cast<double>(row[k]) * inv_rms * static_cast<double>(s[walk.offset(0)]));
      }
    }
    return absl::OkStatus();
  });
  if (!st.ok()) return st;
  return std::vector<Tensor>{*std::move(y)};
}

}  // namespace

void RegisterNormalizationKernels(KernelRegistry& registry) {
  registry.Add("Softmax", SoftmaxFamily, HalfPrecision::kViaF32);
  registry.Add("LogSoftmax", SoftmaxFamily, HalfPrecision::kViaF32);
  registry.Add("CausalSoftmax", CausalSoftmax);
  registry.Add("LayerNormalization", LayerNormalization);
  registry.Add("RMSNormalization", RMSNormalization);
}

}  // namespace shapeshift::reference
