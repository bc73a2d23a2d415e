#include "codegen/kernel_library.h"

#include <cmath>
#include <limits>

namespace shapeshift::codegen {

Kernel SoftmaxKernel(float scale) {
  Kernel k;
  k.name = "softmax_masked";
  BufferRef x = k.AddInput("x");
  BufferRef mask = k.AddInput("mask");
  BufferRef y = k.AddOutput("y");
  SymExpr rows = k.AddDim("rows");
  SymExpr n = k.AddDim("n");
  SymExpr group = k.AddDim("group");
  SymExpr r = k.ParallelVar();
  SymExpr j = SymExpr::Symbol("j");
  k.parallel_extent = rows;
  Value logit = Load(x, r * n + j) * F32(scale) + Load(mask, FloorDiv(r, group) * n + j);
  Value m = Var("row_max", ScalarType::kF32);
  Value shifted_exp = Exp(logit - m);
  k.body = {
      Accumulator("row_max", F32(-std::numeric_limits<double>::infinity())),
      Loop("j", 0, n, {Accumulate("row_max", ReduceOp::kMax, logit)}),
      // exp once per element: kept in y, rescaled by the last loop.
      Accumulator("row_sum", F32(0)),
      Loop("j", 0, n,
           {Let("e", shifted_exp), Store(y, r * n + j, Var("e", ScalarType::kF32)),
            Accumulate("row_sum", ReduceOp::kSum, Var("e", ScalarType::kF32))}),
      Let("inv_sum", Unary(UnaryOp::kRecip, Var("row_sum", ScalarType::kF32))),
      Loop("j", 0, n, {Store(y, r * n + j, Load(y, r * n + j) * Var("inv_sum", ScalarType::kF32))}),
  };
  return k;
}

Kernel LayerNormKernel(float epsilon) {
  Kernel k;
  k.name = "layer_norm";
  BufferRef x = k.AddInput("x");
  BufferRef gamma = k.AddInput("gamma");
  BufferRef beta = k.AddInput("beta");
  BufferRef y = k.AddOutput("y");
  SymExpr rows = k.AddDim("rows");
  SymExpr n = k.AddDim("n");
  SymExpr r = k.ParallelVar();
  SymExpr j = SymExpr::Symbol("j");
  k.parallel_extent = rows;
  Value xv = Load(x, r * n + j);
  Value mean = Var("mean", ScalarType::kF32);
  Value centered = xv - mean;
  Value n_f32 = Cast(ScalarType::kF32, IndexValue(n));
  Value inv_n = Var("inv_n", ScalarType::kF32);
  // The mean sums x * (1/n), clamped to the row's [min, max], so that it
  // never overflows; x - mean and the sum of squares overflow as f32 must
  // (codegen/lower/lower_kernels.cc says why).
  auto var = [](const char* name) { return Var(name, ScalarType::kF32); };
  const double inf = std::numeric_limits<double>::infinity();
  k.body = {
      Let("inv_n", Unary(UnaryOp::kRecip, n_f32)),
      Accumulator("mean_sum", F32(0)),
      Accumulator("x_max", F32(-inf)),
      Accumulator("x_neg_min", F32(-inf)),
      Loop("j", 0, n,
           {Accumulate("mean_sum", ReduceOp::kSum, xv * inv_n), Accumulate("x_max", ReduceOp::kMax, xv),
            Accumulate("x_neg_min", ReduceOp::kMax, Unary(UnaryOp::kNeg, xv))}),
      Let("mean", Binary(BinaryOp::kMin, Max(var("mean_sum"), Unary(UnaryOp::kNeg, var("x_neg_min"))), var("x_max"))),
      Accumulator("sum_sq", F32(0)),
      Loop("j", 0, n, {Accumulate("sum_sq", ReduceOp::kSum, centered * centered)}),
      Let("inv_std", Unary(UnaryOp::kRsqrt, Var("sum_sq", ScalarType::kF32) * inv_n + F32(epsilon))),
      Loop("j", 0, n,
           {Store(y, r * n + j,
                  centered * Var("inv_std", ScalarType::kF32) * Load(gamma, j) + Load(beta, j))}),
  };
  return k;
}

Value Gelu(Value v, GeluForm form) {
  Value gate;
  if (form == GeluForm::kErf) {
    gate = F32(1) + Unary(UnaryOp::kErf, v * F32(M_SQRT1_2));
  } else {
    Value inner = F32(std::sqrt(2.0 / M_PI)) * (v + F32(0.044715) * v * v * v);
    gate = F32(1) + Unary(UnaryOp::kTanh, inner);
  }
  return F32(0.5) * v * gate;
}

Kernel BiasGeluKernel(GeluForm form) {
  Kernel k;
  k.name = form == GeluForm::kErf ? "bias_gelu_erf" : "bias_gelu_tanh";
  BufferRef x = k.AddInput("x");
  BufferRef bias = k.AddInput("bias");
  BufferRef y = k.AddOutput("y");
  SymExpr rows = k.AddDim("rows");
  SymExpr n = k.AddDim("n");
  SymExpr r = k.ParallelVar();
  SymExpr j = SymExpr::Symbol("j");
  k.parallel_extent = rows;
  Value v = Var("v", ScalarType::kF32);
  k.body = {Loop("j", 0, n, {Let("v", Load(x, r * n + j) + Load(bias, j)), Store(y, r * n + j, Gelu(v, form))})};
  return k;
}

Kernel BiasResidualKernel() {
  Kernel k;
  k.name = "bias_residual";
  BufferRef x = k.AddInput("x");
  BufferRef bias = k.AddInput("bias");
  BufferRef residual = k.AddInput("residual");
  BufferRef y = k.AddOutput("y");
  SymExpr rows = k.AddDim("rows");
  SymExpr n = k.AddDim("n");
  SymExpr r = k.ParallelVar();
  SymExpr j = SymExpr::Symbol("j");
  k.parallel_extent = rows;
  k.body = {Loop("j", 0, n, {Store(y, r * n + j, Load(x, r * n + j) + Load(bias, j) + Load(residual, r * n + j))})};
  return k;
}

Kernel Transpose0213Kernel() {
  Kernel k;
  k.name = "transpose_0213";
  BufferRef x = k.AddInput("x");
  BufferRef y = k.AddOutput("y");
  SymExpr a = k.AddDim("a");
  SymExpr b = k.AddDim("b");
  SymExpr c = k.AddDim("c");
  SymExpr d = k.AddDim("d");
  // One parallel iteration per output row (ia, ic, ib).
  SymExpr p = k.ParallelVar();
  k.parallel_extent = a * c * b;
  SymExpr ib = Mod(p, b);
  SymExpr ic = Mod(FloorDiv(p, b), c);
  SymExpr ia = FloorDiv(p, b * c);
  SymExpr l = SymExpr::Symbol("l");
  k.body = {Loop("l", 0, d, {Store(y, p * d + l, Load(x, ((ia * b + ib) * c + ic) * d + l))})};
  return k;
}

}  // namespace shapeshift::codegen
