#include "codegen/lower/activation_math.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace shapeshift::codegen::lower {
namespace {

Value Lt(Value a, Value b) { return Compare(CompareOp::kLt, a, b); }
Value Gt(Value a, Value b) { return Compare(CompareOp::kGt, a, b); }
Value Ge(Value a, Value b) { return Compare(CompareOp::kGe, a, b); }

// clamp(v, 0, 1) as std::clamp computes it: NaN stays NaN.
Value ClampUnit(Value v) { return Select(Lt(v, F32(0)), F32(0), Select(Gt(v, F32(1)), F32(1), v)); }

// x > 30 ? x : log1p(exp(x)), the interpreter's Softplus.
Value Softplus(Value x) { return Select(Gt(x, F32(30)), x, Log1p(Exp(x))); }

}  // namespace

Value Expm1(Value x) {
  const Value small = x * (F32(1) + x * (F32(0.5) + x * F32(1.0 / 6.0)));
  return Select(Lt(Unary(UnaryOp::kAbs, x), F32(0.01)), small, Exp(x) - F32(1));
}

Value Log1p(Value y) {
  const Value u = F32(1) + y;
  const Value d = u - F32(1);
  return Select(Compare(CompareOp::kEq, d, F32(0)), y, Unary(UnaryOp::kLog, u) * (y / d));
}

bool IsActivation(absl::string_view op) {
  return op == "Elu" || op == "Selu" || op == "Celu" || op == "HardSigmoid" || op == "HardSwish" ||
         op == "Softplus" || op == "Softsign" || op == "Mish";
}

absl::StatusOr<Value> Activation(const Node& node, Value x) {
  const std::string& op = node.op_type();
  auto attr = [&](const char* name, double fallback) -> absl::StatusOr<Value> {
    absl::StatusOr<float> v = node.attrs().GetFloat(name, static_cast<float>(fallback));
    if (!v.ok()) return v.status();
    return F32(*v);
  };
  if (op == "Elu" || op == "Celu") {
    absl::StatusOr<Value> alpha = attr("alpha", 1.0);
    if (!alpha.ok()) return alpha.status();
    if (op == "Elu") return Select(Ge(x, F32(0)), x, *alpha * Expm1(x));
    return Select(Gt(x, F32(0)), x, *alpha * Expm1(x / *alpha));
  }
  if (op == "Selu") {
    absl::StatusOr<Value> alpha = attr("alpha", 1.67326319217681884765625);
    absl::StatusOr<Value> gamma = attr("gamma", 1.05070102214813232421875);
    if (!alpha.ok()) return alpha.status();
    if (!gamma.ok()) return gamma.status();
    return *gamma * Select(Gt(x, F32(0)), x, *alpha * Expm1(x));
  }
  if (op == "HardSigmoid") {
    absl::StatusOr<Value> alpha = attr("alpha", 0.2);
    absl::StatusOr<Value> beta = attr("beta", 0.5);
    if (!alpha.ok()) return alpha.status();
    if (!beta.ok()) return beta.status();
    return ClampUnit(*alpha * x + *beta);
  }
  if (op == "HardSwish") return x * ClampUnit(x / F32(6) + F32(0.5));
  if (op == "Softplus") return Softplus(x);
  if (op == "Softsign") return x / (F32(1) + Unary(UnaryOp::kAbs, x));
  if (op == "Mish") return x * Unary(UnaryOp::kTanh, Softplus(x));
  return absl::UnimplementedError(absl::StrCat("cannot lower node '", node.name(), "' (", op, "): not an activation"));
}

}  // namespace shapeshift::codegen::lower
