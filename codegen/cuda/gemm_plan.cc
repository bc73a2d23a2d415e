#include "codegen/cuda/gemm_plan.h"

#include "absl/strings/str_cat.h"
#include "codegen/kernel_library.h"

namespace shapeshift::codegen::cuda {

std::string GemmOp::Describe() const {
  std::string s = absl::StrCat("D = ", alpha == 1.0f ? "" : absl::StrCat(alpha, "*"), "A*B", transpose_b ? "^T" : "",
                               residual_as_c ? " + R" : "");
  if (bias_epilogue || gelu_tanh_epilogue) {
    absl::StrAppend(&s, ", epilogue ", bias_epilogue ? "bias" : "",
                    bias_epilogue && gelu_tanh_epilogue ? "+" : "", gelu_tanh_epilogue ? "gelu_tanh" : "");
  }
  if (batched) absl::StrAppend(&s, ", batched");
  if (allow_tf32) absl::StrAppend(&s, ", tf32");
  return s;
}

GemmPlan PlanGemm(const cpu::MatmulConfig& config, bool gelu_tanh_in_gemm, bool allow_tf32) {
  GemmPlan plan;
  GemmOp& op = plan.op;
  op.batched = config.batch != 0;
  op.transpose_b = config.transpose_b;
  op.allow_tf32 = allow_tf32;
  op.alpha = config.scale;
  op.bias_epilogue = config.bias;  // cuBLASLt adds it after alpha, as the contract does
  const cpu::MatmulActivation act = config.activation;
  bool residual_after = false;  // the epilogue kernel adds R
  std::optional<GeluForm> gelu_after;
  if (act == cpu::MatmulActivation::kNone) {
    op.residual_as_c = config.residual;
  } else {
    residual_after = config.residual;
    if (act == cpu::MatmulActivation::kGeluTanh && gelu_tanh_in_gemm) {
      op.gelu_tanh_epilogue = true;
    } else {
      gelu_after = act == cpu::MatmulActivation::kGeluErf ? GeluForm::kErf : GeluForm::kTanh;
    }
  }
  if (!residual_after && !gelu_after) return plan;
  Kernel k;
  k.name = "gemm_epilogue";
  BufferRef c = k.AddOutput("c");
  BufferRef residual;
  if (residual_after) residual = k.AddInput("residual");
  SymExpr rows = k.AddDim("rows");
  SymExpr n = k.AddDim("n");
  SymExpr r = k.ParallelVar();
  SymExpr j = SymExpr::Symbol("j");
  k.parallel_extent = rows;
  std::vector<Stmt> body = {Let("x", Load(c, r * n + j))};
  Value y = Var("x", ScalarType::kF32);
  if (gelu_after) y = Gelu(y, *gelu_after);
  if (residual_after) y = y + Load(residual, r * n + j);
  body.push_back(Store(c, r * n + j, y));
  k.body = {Loop("j", 0, n, std::move(body))};
  plan.epilogue = std::move(k);
  plan.epilogue_reads_residual = residual_after;
  return plan;
}

}  // namespace shapeshift::codegen::cuda
