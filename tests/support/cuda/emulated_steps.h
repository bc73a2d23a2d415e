// Runs lowered steps (codegen/lower/lowered_step.h) the way a GPU would —
// generated kernels as their emitted CUDA C under the host emulation,
// matmuls as their GemmPlan (the cuBLASLt-level operation, then the
// generated epilogue kernel), embedding lookups as the CUDA gather kernel,
// index checks as the device program's check kernel, fused attentions as
// its attention kernel —
// on host tensors, so lowering tests can compare the CUDA meaning of every
// group with the interpreter.
#ifndef SHAPESHIFT_TESTS_SUPPORT_CUDA_EMULATED_STEPS_H_
#define SHAPESHIFT_TESTS_SUPPORT_CUDA_EMULATED_STEPS_H_

#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "codegen/attention_args.h"
#include "codegen/cuda/cuda_emitter.h"
#include "codegen/lower/lowered_step.h"
#include "graph/graph.h"
#include "graph/tensor.h"

namespace shapeshift::codegen::cuda::testing {

struct EmulatedRunOptions {
  bool reverse = false;  // blocks and threads in decreasing order
  int block_override = 0;  // >0: this block size for every launch (a power of two <= kMaxBlockThreads)
};

// `inputs` in graph-input order; returns the graph's outputs.
absl::StatusOr<std::vector<Tensor>> RunStepsEmulated(const Graph& graph, const std::vector<lower::LoweredStep>& steps,
                                                     const std::vector<Tensor>& inputs,
                                                     const EmulatedRunOptions& options = {});

// An AttentionCall's arguments: `data` gives each operand's floats, `eval`
// each size and stride (the CPU core and the CUDA kernel take the same).
AttentionArgs AttentionArgsFor(const lower::AttentionCall& call,
                               const std::function<float*(const lower::GraphValue*)>& data,
                               const std::function<int64_t(SymExpr)>& eval);

// One kernel: emits, compiles (cached), chooses the launch from `dims` and
// runs it on host buffers.
absl::Status RunKernelEmulated(const Kernel& kernel, const std::vector<void*>& buffers,
                               const std::vector<int64_t>& dims, const EmulatedRunOptions& options = {});

}  // namespace shapeshift::codegen::cuda::testing

#endif  // SHAPESHIFT_TESTS_SUPPORT_CUDA_EMULATED_STEPS_H_
