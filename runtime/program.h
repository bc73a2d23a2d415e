// Program: one compiled model — the steps that compute it (generated kernels,
// oneDNN matmuls, embedding lookups), where every buffer lives, and the
// recipe that turns a request's input shapes into every size the steps need.
//
// Why this shape: a Program is compiled once and serves every input shape in
// the declared domain. Per request it only (1) binds the input dims to the
// model's symbols and checks them against the declared ranges, (2) evaluates
// the precompiled size tape (kernel dims, GEMM shapes, arena offsets, output
// shapes), (3) runs the steps on the caller's inputs, the constants, one
// arena and the output tensors. Nothing is compiled or created per request;
// the arena is reused (see ExecutionContext) so the only allocation per
// request is the returned output tensors.
//
// Thread-safety: a Program is immutable after Compile; Run may be called from
// several threads at once as long as each passes its own ExecutionContext.
#ifndef SHAPESHIFT_RUNTIME_PROGRAM_H_
#define SHAPESHIFT_RUNTIME_PROGRAM_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "graph/graph.h"
#include "graph/tensor.h"
#include "runtime/compile_options.h"
#include "runtime/execution_context.h"
#include "runtime/tensor_view.h"
#include "shapes/shape_env.h"

namespace shapeshift::runtime {

struct ProgramStats {
  double compile_ms = 0;      // passes + lowering + JIT + primitive creation
  int64_t kernels = 0;        // distinct compiled kernels (after dedup)
  int64_t kernel_calls = 0;   // kernel steps (one per fused group, or more)
  int64_t gemms = 0;          // distinct oneDNN matmul primitives
  int64_t gemm_calls = 0;     // matmul steps
  int64_t steps = 0;          // all steps, views excluded
  int64_t groups = 0;         // fusion groups in the plan
  // Each GEMM primitive is run once inside Compile on a small valid shape:
  // oneDNN generates its kernels (and OpenMP starts its threads) on the
  // first execute, which would otherwise land on the first request.
  int64_t gemms_warmed = 0;
  double warmup_ms = 0;       // part of compile_ms
};

class Program {
 public:
  ~Program();
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  // Optimizes `graph` in place (passes::RunPipeline), lowers every fusion
  // group, JIT-compiles the distinct kernels, creates the oneDNN primitives
  // and plans the per-request size evaluation. `graph` and `env` must
  // outlive the Program. Errors name the pass, group, node or input at fault.
  static absl::StatusOr<std::unique_ptr<Program>> Compile(Graph& graph, ShapeEnv& env,
                                                          const CompileOptions& options);

  // Runs one request. Inputs in graph-input order; an error (never a crash)
  // for a wrong count, dtype, rank, inconsistent or out-of-range dims, or bad
  // embedding ids. Outputs are freshly allocated owning tensors.
  absl::StatusOr<std::vector<Tensor>> Run(absl::Span<const TensorView> inputs, ExecutionContext& context) const;

  const ProgramStats& stats() const { return stats_; }
  // The optimized graph, the fusion plan and the memory plan, as text.
  const std::string& plan_text() const { return plan_text_; }

  struct Impl;

 private:
  explicit Program(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  ProgramStats stats_;
  std::string plan_text_;
};

}  // namespace shapeshift::runtime

#endif  // SHAPESHIFT_RUNTIME_PROGRAM_H_
