// One-input elementwise ops. Floating-point math ops are evaluated in double
// and rounded once to the output type (a reference should be at least as
// accurate as what it checks); sign/abs-like ops also accept integers.
#include <algorithm>
#include <cmath>
#include <limits>

#include "graph/reference/kernel_util.h"

namespace shapeshift::reference {
namespace {

struct UnaryParams {
  double alpha = 0;
  double beta = 0;
  double gamma = 0;
};

using FloatFn = double (*)(double x, const UnaryParams& p);

double Softplus(double x) { return x > 30 ? x : std::log1p(std::exp(x)); }

struct FloatUnaryOp {
  const char* name;
  FloatFn fn;
  UnaryParams defaults;  // overridden by the attributes "alpha", "beta", "gamma"
};

const FloatUnaryOp kFloatUnaryOps[] = {
    {"Sqrt", [](double x, const UnaryParams&) { return std::sqrt(x); }, {}},
    {"Reciprocal", [](double x, const UnaryParams&) { return 1.0 / x; }, {}},
    {"Exp", [](double x, const UnaryParams&) { return std::exp(x); }, {}},
    {"Log", [](double x, const UnaryParams&) { return std::log(x); }, {}},
    {"Tanh", [](double x, const UnaryParams&) { return std::tanh(x); }, {}},
    {"Erf", [](double x, const UnaryParams&) { return std::erf(x); }, {}},
    {"Sigmoid", [](double x, const UnaryParams&) { return 1.0 / (1.0 + std::exp(-x)); }, {}},
    {"Floor", [](double x, const UnaryParams&) { return std::floor(x); }, {}},
    {"Ceil", [](double x, const UnaryParams&) { return std::ceil(x); }, {}},
    // Round half to even (the default floating-point rounding mode).
    {"Round", [](double x, const UnaryParams&) { return std::nearbyint(x); }, {}},
    {"Sin", [](double x, const UnaryParams&) { return std::sin(x); }, {}},
    {"Cos", [](double x, const UnaryParams&) { return std::cos(x); }, {}},
    {"Tan", [](double x, const UnaryParams&) { return std::tan(x); }, {}},
    {"Asin", [](double x, const UnaryParams&) { return std::asin(x); }, {}},
    {"Acos", [](double x, const UnaryParams&) { return std::acos(x); }, {}},
    {"Atan", [](double x, const UnaryParams&) { return std::atan(x); }, {}},
    {"Sinh", [](double x, const UnaryParams&) { return std::sinh(x); }, {}},
    {"Cosh", [](double x, const UnaryParams&) { return std::cosh(x); }, {}},
    {"Asinh", [](double x, const UnaryParams&) { return std::asinh(x); }, {}},
    {"Acosh", [](double x, const UnaryParams&) { return std::acosh(x); }, {}},
    {"Atanh", [](double x, const UnaryParams&) { return std::atanh(x); }, {}},
    {"Softplus", [](double x, const UnaryParams&) { return Softplus(x); }, {}},
    {"Softsign", [](double x, const UnaryParams&) { return x / (1.0 + std::fabs(x)); }, {}},
    {"Elu",
     [](double x, const UnaryParams& p) { return x >= 0 ? x : p.alpha * (std::exp(x) - 1.0); },
     {1.0, 0, 0}},
    {"Selu",
     [](double x, const UnaryParams& p) {
       return p.gamma * (x > 0 ? x : p.alpha * (std::exp(x) - 1.0));
     },
     {1.67326319217681884765625, 0, 1.05070102214813232421875}},
    {"LeakyRelu", [](double x, const UnaryParams& p) { return x >= 0 ? x : p.alpha * x; },
     {0.01, 0, 0}},
    {"HardSigmoid",
     [](double x, const UnaryParams& p) { return std::clamp(p.alpha * x + p.beta, 0.0, 1.0); },
     {0.2, 0.5, 0}},
    {"HardSwish",
     [](double x, const UnaryParams&) { return x * std::clamp(x / 6.0 + 0.5, 0.0, 1.0); }, {}},
    // max(0, x) + min(0, alpha * (exp(x / alpha) - 1)), written as a branch
    // so that NaN stays NaN (std::max/min would return the 0).
    {"Celu",
     [](double x, const UnaryParams& p) { return x > 0 ? x : p.alpha * (std::exp(x / p.alpha) - 1.0); },
     {1.0, 0, 0}},
    {"Mish", [](double x, const UnaryParams&) { return x * std::tanh(Softplus(x)); }, {}},
};

const FloatUnaryOp* FindFloatUnaryOp(const std::string& name) {
  for (const FloatUnaryOp& op : kFloatUnaryOps) {
    if (name == op.name) return &op;
  }
  return nullptr;
}

// Applies `fn` elementwise; Out may differ from In (e.g. IsNaN → bool).
template <typename In, typename Out, typename Fn>
absl::StatusOr<Tensor> Map(const Tensor& x, DType out_dtype, Fn fn) {
  absl::StatusOr<Tensor> out = NewOutput(out_dtype, x.shape());
  if (!out.ok()) return out.status();
  const In* in = x.data<In>();
  Out* o = out->mutable_data<Out>();
  for (int64_t i = 0; i < x.num_elements(); ++i) o[i] = fn(in[i]);
  return out;
}

KernelResult FloatUnary(const KernelArgs& args) {
  const FloatUnaryOp* op = FindFloatUnaryOp(args.op_type);
  if (op == nullptr) return absl::InternalError("not a float unary op");
  absl::StatusOr<const Tensor*> x = RequiredInput(args, 0);
  if (!x.ok()) return x.status();
  UnaryParams p = op->defaults;
  for (auto [attr, field] : {std::pair{"alpha", &p.alpha}, std::pair{"beta", &p.beta},
                             std::pair{"gamma", &p.gamma}}) {
    absl::StatusOr<float> v = args.attrs->GetFloat(attr, static_cast<float>(*field));
    if (!v.ok()) return v.status();
    if (args.attrs->Has(attr)) *field = *v;
  }
  absl::StatusOr<Tensor> out;
  absl::Status st = VisitFloat(args, (*x)->dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    out = Map<T, T>(**x, (*x)->dtype(),
                    [&](T v) { return static_cast<T>(op->fn(static_cast<double>(v), p)); });
    return out.status();
  });
  if (!st.ok()) return st;
  return std::vector<Tensor>{*std::move(out)};
}

// ONNX Gelu (opset 20): approximate "none" is x·Φ(x) via erf, "tanh" is the
// tanh approximation. The shape rule has already checked the attribute.
double GeluErf(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
double GeluTanh(double x) {
  const double kSqrt2OverPi = 0.7978845608028654;
  return 0.5 * x * (1.0 + std::tanh(kSqrt2OverPi * (x + 0.044715 * x * x * x)));
}

KernelResult Gelu(const KernelArgs& args) {
  absl::StatusOr<const Tensor*> x = RequiredInput(args, 0);
  if (!x.ok()) return x.status();
  absl::StatusOr<std::string> approximate = args.attrs->GetString("approximate", "none");
  if (!approximate.ok()) return approximate.status();
  if (*approximate != "none" && *approximate != "tanh") {
    return absl::InvalidArgumentError(absl::StrCat("Gelu approximate must be \"none\" or \"tanh\", not \"",
                                                   *approximate, "\""));
  }
  FloatFn fn = *approximate == "tanh" ? [](double v, const UnaryParams&) { return GeluTanh(v); }
                                      : [](double v, const UnaryParams&) { return GeluErf(v); };
  absl::StatusOr<Tensor> out;
  absl::Status st = VisitFloat(args, (*x)->dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    out = Map<T, T>(**x, (*x)->dtype(), [&](T v) { return static_cast<T>(fn(static_cast<double>(v), {})); });
    return out.status();
  });
  if (!st.ok()) return st;
  return std::vector<Tensor>{*std::move(out)};
}

// Ops defined for every numeric type; `fn` is a generic lambda.
template <typename Fn>
KernelResult NumericUnary(const KernelArgs& args, Fn fn) {
  absl::StatusOr<const Tensor*> x = RequiredInput(args, 0);
  if (!x.ok()) return x.status();
  absl::StatusOr<Tensor> out;
  absl::Status st = VisitNumeric(args, (*x)->dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    out = Map<T, T>(**x, (*x)->dtype(), [&](T v) { return static_cast<T>(fn(v)); });
    return out.status();
  });
  if (!st.ok()) return st;
  return std::vector<Tensor>{*std::move(out)};
}

KernelResult Neg(const KernelArgs& args) {
  return NumericUnary(args, [](auto v) { return -v; });
}

KernelResult Abs(const KernelArgs& args) {
  return NumericUnary(args, [](auto v) {
    using T = decltype(v);
    if constexpr (std::is_unsigned_v<T>) {
      return v;
    } else {
      return v < 0 ? static_cast<T>(-v) : v;
    }
  });
}

// NaN and -0 pass through unchanged, as in ONNX Runtime.
KernelResult Relu(const KernelArgs& args) {
  return NumericUnary(args, [](auto v) { return v < decltype(v){0} ? decltype(v){0} : v; });
}

KernelResult Sign(const KernelArgs& args) {
  return NumericUnary(args, [](auto v) {
    using T = decltype(v);
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(v)) return v;
    }
    return static_cast<T>(v > 0 ? 1 : (v < T{0} ? -1 : 0));
  });
}

KernelResult Not(const KernelArgs& args) {
  absl::StatusOr<const Tensor*> x = RequiredInput(args, 0);
  if (!x.ok()) return x.status();
  if ((*x)->dtype() != DType::kBool) return UnsupportedDType(args, (*x)->dtype());
  absl::StatusOr<Tensor> out =
      Map<uint8_t, uint8_t>(**x, DType::kBool, [](uint8_t v) -> uint8_t { return v ? 0 : 1; });
  if (!out.ok()) return out.status();
  return std::vector<Tensor>{*std::move(out)};
}

KernelResult IsNaN(const KernelArgs& args) {
  absl::StatusOr<const Tensor*> x = RequiredInput(args, 0);
  if (!x.ok()) return x.status();
  absl::StatusOr<Tensor> out;
  absl::Status st = VisitFloat(args, (*x)->dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    out = Map<T, uint8_t>(**x, DType::kBool, [](T v) -> uint8_t { return std::isnan(v); });
    return out.status();
  });
  if (!st.ok()) return st;
  return std::vector<Tensor>{*std::move(out)};
}

KernelResult IsInf(const KernelArgs& args) {
  absl::StatusOr<const Tensor*> x = RequiredInput(args, 0);
  if (!x.ok()) return x.status();
  absl::StatusOr<int64_t> negative = args.attrs->GetInt("detect_negative", 1);
  absl::StatusOr<int64_t> positive = args.attrs->GetInt("detect_positive", 1);
  if (!negative.ok()) return negative.status();
  if (!positive.ok()) return positive.status();
  absl::StatusOr<Tensor> out;
  absl::Status st = VisitFloat(args, (*x)->dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    out = Map<T, uint8_t>(**x, DType::kBool, [&](T v) -> uint8_t {
      return std::isinf(v) && ((v > 0 && *positive) || (v < 0 && *negative));
    });
    return out.status();
  });
  if (!st.ok()) return st;
  return std::vector<Tensor>{*std::move(out)};
}

// Clip: bounds are attributes before opset 11 and optional scalar inputs after.
KernelResult Clip(const KernelArgs& args) {
  absl::StatusOr<const Tensor*> x = RequiredInput(args, 0);
  if (!x.ok()) return x.status();
  const Tensor* min_input = OptionalInput(args, 1);
  const Tensor* max_input = OptionalInput(args, 2);
  for (const Tensor* bound : {min_input, max_input}) {
    if (bound != nullptr && (bound->dtype() != (*x)->dtype() || bound->num_elements() != 1)) {
      return Invalid("Clip bounds must be one-element tensors of the input's dtype, got ",
                     bound->DebugString());
    }
  }
  absl::StatusOr<Tensor> out;
  absl::Status st = VisitNumeric(args, (*x)->dtype(), [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    T lo = std::numeric_limits<T>::lowest();
    T hi = std::numeric_limits<T>::max();
    if (args.opset < 11) {
      for (auto [attr, bound] : {std::pair{"min", &lo}, std::pair{"max", &hi}}) {
        if (!args.attrs->Has(attr)) continue;
        absl::StatusOr<float> v = args.attrs->GetFloat(attr, 0.f);
        if (!v.ok()) return v.status();
        *bound = static_cast<T>(*v);
      }
    }
    if (min_input != nullptr) lo = min_input->data<T>()[0];
    if (max_input != nullptr) hi = max_input->data<T>()[0];
    // ONNX: with min > max every element becomes max. std::max(v, lo) is
    // `v < lo ? lo : v`: a NaN element stays NaN and a NaN bound is ignored,
    // as in ONNX Runtime.
    out = Map<T, T>(**x, (*x)->dtype(), [&](T v) { return std::min(std::max(v, lo), hi); });
    return out.status();
  });
  if (!st.ok()) return st;
  return std::vector<Tensor>{*std::move(out)};
}

}  // namespace

void RegisterElementwiseUnaryKernels(KernelRegistry& registry) {
  for (const FloatUnaryOp& op : kFloatUnaryOps) {
    registry.Add(op.name, FloatUnary, HalfPrecision::kViaF32);
  }
  registry.Add("Gelu", Gelu, HalfPrecision::kViaF32);
  registry.Add("Neg", Neg, HalfPrecision::kViaF32);
  registry.Add("Abs", Abs, HalfPrecision::kViaF32);
  registry.Add("Relu", Relu, HalfPrecision::kViaF32);
  registry.Add("Sign", Sign, HalfPrecision::kViaF32);
  registry.Add("Not", Not);
  registry.Add("IsNaN", IsNaN, HalfPrecision::kViaF32);
  registry.Add("IsInf", IsInf, HalfPrecision::kViaF32);
  registry.Add("Clip", Clip, HalfPrecision::kViaF32);
}

}  // namespace shapeshift::reference
