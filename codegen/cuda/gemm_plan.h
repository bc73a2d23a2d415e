// How one matmul of the lowering (cpu::MatmulConfig semantics, the fusion
// plan's contract:
//   C = act(scale * (A·op(B)) + bias) + R
// ) runs on a GPU: one cuBLASLt call doing what it does exactly, then, only
// when needed, a generated epilogue kernel over C.
//
// Why a plan: cuBLASLt computes D = alpha·A·op(B) + beta·C, then its epilogue
// adds a per-column bias and may apply GELU — the tanh approximation only —
// before storing. So the scale is alpha and the bias is always cuBLASLt's;
// an erf GELU runs in the epilogue kernel; and a residual folds in as C
// (beta = 1) only when no activation follows it (the residual is added after
// the activation). The plan is plain data, so the same decision drives the
// real cuBLASLt call (driver_gemm.cc) and the host emulation in tests, and
// is itself tested everywhere.
#ifndef SHAPESHIFT_CODEGEN_CUDA_GEMM_PLAN_H_
#define SHAPESHIFT_CODEGEN_CUDA_GEMM_PLAN_H_

#include <optional>
#include <string>

#include "codegen/cpu/onednn_matmul.h"
#include "codegen/kernel_ir.h"

namespace shapeshift::codegen::cuda {

// The cuBLASLt-level operation (row-major operands; see DeviceGemm):
//   D = alpha · A·op(B) + (residual_as_c ? R : 0) [+ bias per column] [then tanh GELU]
struct GemmOp {
  bool batched = false;      // config.batch != 0: strided batches
  bool transpose_b = false;  // B stored [batch, N, K]
  float alpha = 1.0f;
  bool bias_epilogue = false;
  bool gelu_tanh_epilogue = false;
  bool residual_as_c = false;
  bool allow_tf32 = false;   // TF32 tensor cores (faster, ~1e-3 relative error)
  std::string Describe() const;  // e.g. "D = 0.125*A*B^T + R, epilogue bias"
};

struct GemmPlan {
  GemmOp op;
  // Runs on C in place after the GEMM when set. Buffers: (c, [residual]);
  // dims: (rows = batch * m, n).
  std::optional<Kernel> epilogue;
  bool epilogue_reads_residual = false;
};

// `gelu_tanh_in_gemm`: let cuBLASLt apply a tanh GELU (else the epilogue
// kernel does, with the kernel IR's formula).
GemmPlan PlanGemm(const cpu::MatmulConfig& config, bool gelu_tanh_in_gemm = true, bool allow_tf32 = false);

}  // namespace shapeshift::codegen::cuda

#endif  // SHAPESHIFT_CODEGEN_CUDA_GEMM_PLAN_H_
