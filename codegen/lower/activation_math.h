// Kernel-IR expressions for ONNX's parameterized activations that no single
// IR op computes: Elu, Selu, Celu, HardSigmoid, HardSwish, Softplus,
// Softsign and Mish, with ONNX's definitions and the reference
// interpreter's special values (graph/reference/elementwise_unary.cc): NaN
// stays NaN through every branch (a compare with NaN is false, so each
// Select takes the arm that computes with x), Softplus(x) = x past 30 and
// log1p(exp(x)) below, HardSwish(-inf) = -inf * 0 = NaN. ONNX Runtime's
// outputs for special values are the second oracle
// (tests/data/special_values/).
#ifndef SHAPESHIFT_CODEGEN_LOWER_ACTIVATION_MATH_H_
#define SHAPESHIFT_CODEGEN_LOWER_ACTIVATION_MATH_H_

#include "absl/status/statusor.h"
#include "codegen/kernel_ir.h"
#include "graph/graph.h"

namespace shapeshift::codegen::lower {

// True for the ops Activation computes.
bool IsActivation(absl::string_view op);

// The activation `node` computes of the f32 value x, its alpha/beta/gamma
// from the node's attributes (ONNX's defaults, rounded to f32 as the
// interpreter reads them).
absl::StatusOr<Value> Activation(const Node& node, Value x);

// exp(x) - 1 without the cancellation near 0 (a cubic below |x| = 0.01,
// relative error < 1e-7 there), and log(1 + y) for y >= 0 (Goldberg's
// log(u) * y / (u - 1), u = 1 + y: exact where 1 + y rounds to 1).
Value Expm1(Value x);
Value Log1p(Value y);

}  // namespace shapeshift::codegen::lower

#endif  // SHAPESHIFT_CODEGEN_LOWER_ACTIVATION_MATH_H_
