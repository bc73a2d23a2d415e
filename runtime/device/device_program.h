// DeviceProgram: the device half of a Program compiled for Device::kCuda —
// the same lowered steps as on the CPU, run on a codegen::cuda::DeviceApi:
// generated kernels in one NVRTC module, GEMMs on cuBLASLt (with the
// planned epilogue kernel when cuBLASLt cannot do the epilogue exactly), the
// gather kernel; one device arena per execution context sized from the
// symbolic memory plan; a stream per execution context; host<->device
// copies only at the edges (inputs in, outputs out; none for inputs the
// caller passes as device buffers); and CUDA graphs per bucket
// (cuda_graphs.h).
//
// Why a half and not a second Program: binding input dims to symbols,
// declared ranges, guards, the size tape and the buffer plan are the CPU
// Program's own code (program_compile.cc / program_run.cc), so dims and
// guards are exactly those of the CPU; only the steps and the storage differ.
//
// Per request (Run): placement sizes (the actual ones, or the bucket's
// upper bound when a graph serves the request) give the arena layout; one
// parameter block (each kernel's pointer and dims arrays, the gather status
// words) is copied to the device, inputs follow, the steps or the graph's
// segments are enqueued on the context's stream, outputs are copied back and
// the stream is synchronized once.
#ifndef SHAPESHIFT_RUNTIME_DEVICE_DEVICE_PROGRAM_H_
#define SHAPESHIFT_RUNTIME_DEVICE_DEVICE_PROGRAM_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "codegen/cuda/attention_kernel.h"
#include "codegen/cuda/cuda_emitter.h"
#include "codegen/cuda/device_api.h"
#include "codegen/cuda/gemm_plan.h"
#include "codegen/lower/lowered_step.h"
#include "graph/tensor.h"
#include "passes/memory_plan.h"
#include "runtime/compile_options.h"
#include "runtime/device/cuda_graphs.h"
#include "runtime/device/device_stats.h"
#include "runtime/execution_context.h"
#include "runtime/program.h"
#include "runtime/tensor_view.h"
#include "shapes/shape_env.h"

namespace shapeshift::runtime {

// How the ProgramBuilder's tape slots and buffers are reached from here.
struct StepResolver {
  std::function<absl::StatusOr<int>(SymExpr)> slot;
  std::function<absl::StatusOr<int>(const codegen::lower::GraphValue*)> buffer;
};

class DeviceProgram {
 public:
  // Opens the device (options.cuda.device, or the GPU): without one, an
  // Unavailable error naming what is missing.
  static absl::StatusOr<std::unique_ptr<DeviceProgram>> Create(const CompileOptions& options);
  ~DeviceProgram();
  DeviceProgram(const DeviceProgram&) = delete;
  DeviceProgram& operator=(const DeviceProgram&) = delete;

  // Compile time, in plan order (program_compile.cc).
  absl::Status Add(const codegen::lower::KernelCall& call, const StepResolver& resolve);
  absl::Status Add(const codegen::lower::MatmulCall& call, const StepResolver& resolve);
  absl::Status Add(const codegen::lower::GatherRowsCall& call, const StepResolver& resolve);
  // The index check as a kernel (codegen/cuda/index_check_kernel.h): the
  // indices are in device memory; a bad one fails the request, after the
  // outputs are read back, naming the node, the index and its axis.
  absl::Status Add(const codegen::lower::IndexCheckCall& call, const StepResolver& resolve);
  // The fused attention kernel (codegen/cuda/attention_kernel.h), its sizes
  // and strides read per request like every other kernel's dims.
  absl::Status Add(const codegen::lower::AttentionCall& call, const StepResolver& resolve);
  // After every step: loads the module, uploads the constants, plans the
  // staging of inputs/outputs and the CUDA graphs.
  absl::Status Finish(const Program::Impl& impl, const Graph& graph, const ShapeEnv& env,
                      const passes::MemoryPlan& memory, const StepResolver& resolve);

  // One request whose dims Program::Run has bound and checked and whose
  // sizes `slots` holds (the evaluated tape).
  absl::StatusOr<std::vector<Tensor>> Run(const Program::Impl& impl, absl::Span<const TensorView> inputs,
                                          absl::Span<const int64_t> slots, ExecutionContext& ctx) const;

  DeviceStats stats() const;
  // The graph plan and every captured graph, as text (`explain`, `run`).
  std::string Report() const;
  const CudaGraphPlan& graph_plan() const { return graph_plan_; }

 private:
  struct KernelStep {
    int kernel = -1;             // into kernels_
    std::vector<int> buffers;    // into Impl::buffers
    std::vector<int> dim_slots;
    int work_slot = -1, row_slot = -1;
    int params = -1;             // first word in the parameter block
  };
  struct GemmStep {
    codegen::cuda::DeviceGemm* gemm = nullptr;
    int batch = -1, m = -1, k = -1, n = -1;  // slots
    int a = -1, b = -1, bias = -1, residual = -1, c = -1;  // buffers
    int epilogue = -1;           // index of the KernelStep that follows (in steps_), or -1
    bool batched = false;
    SymExpr batch_expr, m_expr, k_expr, n_expr;  // model space, for the graph plan
    bool graph_safe = false;     // set by Finish: padding the graph symbol leaves it exact
  };
  struct GatherStep {
    int table = -1, indices = -1, output = -1;
    int count_slot = -1;
    int64_t table_rows = 0, row_bytes = 0;
    bool indices_i32 = false;
    std::string node_name;
    int params = -1;
    int status_word = -1;        // index into the status words
  };
  struct IndexCheckStep {
    int indices = -1;            // buffer
    int count_slot = -1;
    std::vector<int> dim_slots;  // axis sizes, cycled over the indices
    std::vector<int64_t> axes;   // for the message
    bool indices_i32 = false;
    std::string node_name, op_type;
    int params = -1;
    int status_word = -1;
  };
  struct AttentionStep {
    int q = -1, k = -1, v = -1, mask = -1, out = -1;  // buffers; mask -1 absent
    int batch = -1, heads = -1, kv_heads = -1, q_len = -1, kv_len = -1;  // slots
    std::array<int, 3> q_strides{}, k_strides{}, v_strides{}, out_strides{}, mask_strides{};  // slots
    int q_offset = -1, k_offset = -1, v_offset = -1;  // slots: elements into q's, k's and v's buffers
    codegen::AttentionArgs fixed;  // head dims, mask column stride, flags, scale, fill
    std::string node_name;
    int params = -1;  // 5 pointers, then codegen::cuda::kAttentionDimWords dims
  };
  using Step = std::variant<KernelStep, GemmStep, GatherStep, IndexCheckStep, AttentionStep>;
  friend class DeviceRun;

  DeviceProgram(std::shared_ptr<codegen::cuda::DeviceApi> api, CudaOptions options);
  absl::StatusOr<int> AddKernel(const codegen::Kernel& kernel);
  absl::Status AddKernelStep(const codegen::Kernel& kernel, std::vector<int> buffers,
                             const std::vector<SymExpr>& dim_values, const StepResolver& resolve);

  std::shared_ptr<codegen::cuda::DeviceApi> api_;
  CudaOptions options_;
  // Identifies this program's state in an ExecutionContext (an address
  // could be reused by a later program).
  uint64_t id_;
  std::vector<codegen::Kernel> kernels_;
  std::vector<codegen::cuda::CudaKernelSource> sources_;
  std::unique_ptr<codegen::cuda::DeviceModule> module_;
  std::vector<const void*> functions_;  // per kernel
  const void* gather_function_ = nullptr;
  const void* check_function_ = nullptr;
  const void* attention_function_ = nullptr;
  bool has_gathers_ = false, has_checks_ = false, has_attention_ = false;
  std::vector<std::unique_ptr<codegen::cuda::DeviceGemm>> gemms_;
  std::vector<std::pair<std::string, codegen::cuda::DeviceGemm*>> gemm_by_op_;
  std::vector<Step> steps_;
  int64_t param_words_ = 0;
  int status_words_ = 0;  // one per gather and per index check
  int64_t status_base_ = 0;  // first status word in the parameter block
  // Constants on the device: one allocation, an offset per buffer (-1: none).
  codegen::cuda::DevicePtr constants_ = 0;
  std::vector<int64_t> constant_offset_;
  int64_t constant_bytes_ = 0;
  std::vector<int> input_elements_slot_;  // per graph input
  CudaGraphPlan graph_plan_;

  mutable std::atomic<int64_t> requests_{0}, direct_runs_{0}, graph_captures_{0}, graph_replays_{0};
  mutable std::atomic<int64_t> graph_invalidations_{0}, h2d_{0}, d2h_{0};
  mutable absl::Mutex events_mu_;
  mutable std::vector<std::string> capture_events_ ABSL_GUARDED_BY(events_mu_);
};

}  // namespace shapeshift::runtime

#endif  // SHAPESHIFT_RUNTIME_DEVICE_DEVICE_PROGRAM_H_
