// Elementwise ops over two or more inputs with numpy (multidirectional)
// broadcasting: arithmetic, comparisons, logic, PRelu, the variadic
// Sum/Mean/Max/Min, and Where.
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "graph/reference/kernel_util.h"

namespace shapeshift::reference {
namespace {

// out[i] = fn(a[ia], b[ib]) over the broadcast shape of a and b.
template <typename A, typename B, typename Out, typename Fn>
absl::StatusOr<Tensor> Broadcast2(const Tensor& a, const Tensor& b, DType out_dtype, Fn fn) {
  absl::StatusOr<std::vector<int64_t>> shape = BroadcastShapes({a.shape(), b.shape()});
  if (!shape.ok()) return shape.status();
  absl::StatusOr<Tensor> out = NewOutput(out_dtype, *shape);
  if (!out.ok()) return out.status();
  const A* pa = a.data<A>();
  const B* pb = b.data<B>();
  Out* po = out->mutable_data<Out>();
  IndexWalker walk = IndexWalker::Broadcast(*shape, {a.shape(), b.shape()});
  for (int64_t i = 0; i < out->num_elements(); ++i, walk.Next()) {
    po[i] = fn(pa[walk.offset(0)], pb[walk.offset(1)]);
  }
  return out;
}

struct Operands {
  const Tensor* a;
  const Tensor* b;
};

absl::StatusOr<Operands> TwoInputs(const KernelArgs& args, bool same_dtype) {
  absl::StatusOr<const Tensor*> a = RequiredInput(args, 0);
  if (!a.ok()) return a.status();
  absl::StatusOr<const Tensor*> b = RequiredInput(args, 1);
  if (!b.ok()) return b.status();
  if (same_dtype) {
    absl::Status st = RequireSameDType(args, {*a, *b});
    if (!st.ok()) return st;
  }
  return Operands{*a, *b};
}

// Same-dtype op whose result has the operands' dtype. `fn(a, b)` returns the
// value or sets *error (integer division by zero).
template <typename Fn>
KernelResult Arithmetic(const KernelArgs& args, Fn fn) {
  absl::StatusOr<Operands> in = TwoInputs(args, /*same_dtype=*/true);
  if (!in.ok()) return in.status();
  absl::StatusOr<Tensor> out;
  bool division_by_zero = false;
  absl::Status st = VisitNumeric(args, in->a->dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    out = Broadcast2<T, T, T>(*in->a, *in->b, in->a->dtype(),
                              [&](T x, T y) { return static_cast<T>(fn(x, y, &division_by_zero)); });
    return out.status();
  });
  if (!st.ok()) return st;
  if (division_by_zero) return Invalid("integer division by zero");
  return std::vector<Tensor>{*std::move(out)};
}

KernelResult Add(const KernelArgs& args) {
  return Arithmetic(args, [](auto x, auto y, bool*) { return x + y; });
}
KernelResult Sub(const KernelArgs& args) {
  return Arithmetic(args, [](auto x, auto y, bool*) { return x - y; });
}
KernelResult Mul(const KernelArgs& args) {
  return Arithmetic(args, [](auto x, auto y, bool*) { return x * y; });
}
KernelResult Div(const KernelArgs& args) {
  return Arithmetic(args, [](auto x, auto y, bool* div0) {
    using T = decltype(x);
    if constexpr (std::is_integral_v<T>) {
      if (y == 0) {
        *div0 = true;
        return T{0};
      }
      // lowest / -1 overflows (and traps on x86): negate with wrap-around.
      if constexpr (std::is_signed_v<T>) {
        if (y == -1) return static_cast<T>(0 - static_cast<std::make_unsigned_t<T>>(x));
      }
    }
    return static_cast<T>(x / y);
  });
}

// Mod: fmod=1 is C fmod (sign of the dividend); fmod=0 is integer modulo
// with the sign of the divisor (Python), defined for integers only.
KernelResult Mod(const KernelArgs& args) {
  absl::StatusOr<int64_t> fmod = args.attrs->GetInt("fmod", 0);
  if (!fmod.ok()) return fmod.status();
  absl::StatusOr<Operands> in = TwoInputs(args, /*same_dtype=*/true);
  if (!in.ok()) return in.status();
  if (*fmod == 0 && IsFloat(in->a->dtype())) {
    return Invalid("Mod with fmod=0 is defined for integers only; ", DTypeName(in->a->dtype()),
                   " needs fmod=1");
  }
  const bool c_fmod = *fmod != 0;
  return Arithmetic(args, [c_fmod](auto x, auto y, bool* div0) {
    using T = decltype(x);
    if constexpr (std::is_floating_point_v<T>) {
      return std::fmod(x, y);
    } else {
      if (y == 0) {
        *div0 = true;
        return T{0};
      }
      if constexpr (std::is_signed_v<T>) {
        if (y == -1) return T{0};  // lowest % -1 traps on x86
      }
      T r = static_cast<T>(x % y);
      if (!c_fmod && r != 0 && ((r < 0) != (y < 0))) r = static_cast<T>(r + y);
      return r;
    }
  });
}

// Pow: the exponent may have a different numeric type; the result has the base's.
KernelResult Pow(const KernelArgs& args) {
  absl::StatusOr<Operands> in = TwoInputs(args, /*same_dtype=*/false);
  if (!in.ok()) return in.status();
  absl::StatusOr<Tensor> out;
  // An integer base can give a result its type cannot hold ((-1)^0.5 is NaN,
  // 10^30 overflows): converting that would be undefined behaviour, so it is
  // an error naming the node instead.
  bool unrepresentable = false;
  absl::Status st = VisitNumeric(args, in->a->dtype(), [&](auto base_tag) {
    using T = typename decltype(base_tag)::type;
    return VisitNumeric(args, in->b->dtype(), [&](auto exp_tag) {
      using E = typename decltype(exp_tag)::type;
      out = Broadcast2<T, E, T>(*in->a, *in->b, in->a->dtype(), [&](T x, E y) {
        const double r = std::pow(static_cast<double>(x), static_cast<double>(y));
        if constexpr (std::is_integral_v<T>) {
          // max + 1 is exact in double for every integer type (2^63 for
          // int64, where max itself rounds up to it); NaN fails both tests.
          const double lo = static_cast<double>(std::numeric_limits<T>::min());
          const double past_hi = static_cast<double>(std::numeric_limits<T>::max()) + 1.0;
          if (!(r >= lo && r < past_hi)) {
            unrepresentable = true;
            return T{0};
          }
        }
        return static_cast<T>(r);
      });
      return out.status();
    });
  });
  if (!st.ok()) return st;
  if (unrepresentable) {
    return Invalid("Pow result is not representable in ", DTypeName(in->a->dtype()),
                   " (NaN, infinite or out of range)");
  }
  return std::vector<Tensor>{*std::move(out)};
}

// Comparison producing bool; bool operands allowed when `allow_bool`.
template <typename Fn>
KernelResult Compare(const KernelArgs& args, Fn fn, bool allow_bool) {
  absl::StatusOr<Operands> in = TwoInputs(args, /*same_dtype=*/true);
  if (!in.ok()) return in.status();
  absl::StatusOr<Tensor> out;
  absl::Status st = VisitComputable(
      args, in->a->dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        out = Broadcast2<T, T, uint8_t>(*in->a, *in->b, DType::kBool,
                                        [&](T x, T y) -> uint8_t { return fn(x, y); });
        return out.status();
      },
      allow_bool);
  if (!st.ok()) return st;
  return std::vector<Tensor>{*std::move(out)};
}

KernelResult Equal(const KernelArgs& args) {
  return Compare(args, [](auto x, auto y) { return x == y; }, /*allow_bool=*/true);
}
KernelResult Less(const KernelArgs& args) {
  return Compare(args, [](auto x, auto y) { return x < y; }, false);
}
KernelResult LessOrEqual(const KernelArgs& args) {
  return Compare(args, [](auto x, auto y) { return x <= y; }, false);
}
KernelResult Greater(const KernelArgs& args) {
  return Compare(args, [](auto x, auto y) { return x > y; }, false);
}
KernelResult GreaterOrEqual(const KernelArgs& args) {
  return Compare(args, [](auto x, auto y) { return x >= y; }, false);
}

template <typename Fn>
KernelResult Logical(const KernelArgs& args, Fn fn) {
  absl::StatusOr<Operands> in = TwoInputs(args, /*same_dtype=*/true);
  if (!in.ok()) return in.status();
  if (in->a->dtype() != DType::kBool) return UnsupportedDType(args, in->a->dtype());
  absl::StatusOr<Tensor> out = Broadcast2<uint8_t, uint8_t, uint8_t>(
      *in->a, *in->b, DType::kBool, [&](uint8_t x, uint8_t y) -> uint8_t { return fn(x != 0, y != 0); });
  if (!out.ok()) return out.status();
  return std::vector<Tensor>{*std::move(out)};
}

KernelResult And(const KernelArgs& args) {
  return Logical(args, [](bool x, bool y) { return x && y; });
}
KernelResult Or(const KernelArgs& args) {
  return Logical(args, [](bool x, bool y) { return x || y; });
}
KernelResult Xor(const KernelArgs& args) {
  return Logical(args, [](bool x, bool y) { return x != y; });
}

KernelResult PRelu(const KernelArgs& args) {
  return Arithmetic(args, [](auto x, auto slope, bool*) { return x < 0 ? slope * x : x; });
}

// Sum/Mean/Max/Min over any number of inputs, folded left to right.
template <typename Fn>
KernelResult Variadic(const KernelArgs& args, Fn fn, bool mean) {
  if (args.inputs.empty()) return Invalid("needs at least one input");
  std::vector<const Tensor*> inputs;
  for (size_t i = 0; i < args.inputs.size(); ++i) {
    absl::StatusOr<const Tensor*> t = RequiredInput(args, static_cast<int>(i));
    if (!t.ok()) return t.status();
    inputs.push_back(*t);
  }
  absl::Status same = RequireSameDType(args, inputs);
  if (!same.ok()) return same;
  const DType dtype = inputs[0]->dtype();
  if (mean && !IsFloat(dtype)) return UnsupportedDType(args, dtype);
  absl::StatusOr<Tensor> acc = *inputs[0];
  absl::Status st = VisitNumeric(args, dtype, [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    for (size_t i = 1; i < inputs.size() && acc.ok(); ++i) {
      acc = Broadcast2<T, T, T>(*acc, *inputs[i], dtype,
                                [&](T x, T y) { return static_cast<T>(fn(x, y)); });
    }
    if (!acc.ok()) return acc.status();
    if (mean) {
      Tensor scaled = acc->Clone();
      T* p = scaled.mutable_data<T>();
      for (int64_t i = 0; i < scaled.num_elements(); ++i) {
        p[i] = static_cast<T>(p[i] / static_cast<T>(inputs.size()));
      }
      acc = std::move(scaled);
    }
    return absl::OkStatus();
  });
  if (!st.ok()) return st;
  return std::vector<Tensor>{*std::move(acc)};
}

KernelResult Sum(const KernelArgs& args) {
  return Variadic(args, [](auto x, auto y) { return x + y; }, /*mean=*/false);
}
KernelResult Mean(const KernelArgs& args) {
  return Variadic(args, [](auto x, auto y) { return x + y; }, /*mean=*/true);
}
// Max/Min propagate NaN like numpy's maximum/minimum.
KernelResult Max(const KernelArgs& args) {
  return Variadic(args, [](auto x, auto y) { return (x != x || x > y) ? x : y; }, false);
}
KernelResult Min(const KernelArgs& args) {
  return Variadic(args, [](auto x, auto y) { return (x != x || x < y) ? x : y; }, false);
}

// Where(cond, x, y): element bytes are copied, so any dtype works.
KernelResult Where(const KernelArgs& args) {
  std::vector<const Tensor*> in;
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<const Tensor*> t = RequiredInput(args, i);
    if (!t.ok()) return t.status();
    in.push_back(*t);
  }
  if (in[0]->dtype() != DType::kBool) {
    return Invalid("condition must be bool, got ", DTypeName(in[0]->dtype()));
  }
  absl::Status same = RequireSameDType(args, {in[1], in[2]});
  if (!same.ok()) return same;
  absl::StatusOr<std::vector<int64_t>> shape =
      BroadcastShapes({in[0]->shape(), in[1]->shape(), in[2]->shape()});
  if (!shape.ok()) return shape.status();
  absl::StatusOr<Tensor> out = NewOutput(in[1]->dtype(), *shape);
  if (!out.ok()) return out.status();
  const size_t size = DTypeSize(in[1]->dtype());
  const uint8_t* cond = in[0]->data<uint8_t>();
  const auto* x = static_cast<const std::byte*>(in[1]->raw());
  const auto* y = static_cast<const std::byte*>(in[2]->raw());
  auto* o = static_cast<std::byte*>(out->mutable_raw());
  IndexWalker walk = IndexWalker::Broadcast(*shape, {in[0]->shape(), in[1]->shape(), in[2]->shape()});
  for (int64_t i = 0; i < out->num_elements(); ++i, walk.Next()) {
    const std::byte* src = cond[walk.offset(0)] ? x + walk.offset(1) * size : y + walk.offset(2) * size;
    std::memcpy(o + i * size, src, size);
  }
  return std::vector<Tensor>{*std::move(out)};
}

}  // namespace

void RegisterElementwiseBinaryKernels(KernelRegistry& registry) {
  registry.Add("Add", Add, HalfPrecision::kViaF32);
  registry.Add("Sub", Sub, HalfPrecision::kViaF32);
  registry.Add("Mul", Mul, HalfPrecision::kViaF32);
  registry.Add("Div", Div, HalfPrecision::kViaF32);
  registry.Add("Mod", Mod, HalfPrecision::kViaF32);
  registry.Add("Pow", Pow, HalfPrecision::kViaF32);
  registry.Add("Equal", Equal, HalfPrecision::kViaF32);
  registry.Add("Less", Less, HalfPrecision::kViaF32);
  registry.Add("LessOrEqual", LessOrEqual, HalfPrecision::kViaF32);
  registry.Add("Greater", Greater, HalfPrecision::kViaF32);
  registry.Add("GreaterOrEqual", GreaterOrEqual, HalfPrecision::kViaF32);
  registry.Add("And", And);
  registry.Add("Or", Or);
  registry.Add("Xor", Xor);
  registry.Add("PRelu", PRelu, HalfPrecision::kViaF32);
  registry.Add("Sum", Sum, HalfPrecision::kViaF32);
  registry.Add("Mean", Mean, HalfPrecision::kViaF32);
  registry.Add("Max", Max, HalfPrecision::kViaF32);
  registry.Add("Min", Min, HalfPrecision::kViaF32);
  registry.Add("Where", Where);
}

}  // namespace shapeshift::reference
