// DeviceProgram at compile time: steps, the module, constants, the graph plan.
#include "runtime/device/device_program.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "codegen/cuda/gather_kernel.h"
#include "codegen/cuda/index_check_kernel.h"
#include "runtime/device/device_state.h"
#include "runtime/program_impl.h"

namespace shapeshift::runtime {
namespace {

namespace cuda = codegen::cuda;
namespace lower = codegen::lower;

constexpr int64_t kDeviceAlign = 256;
int64_t Align(int64_t bytes) { return (bytes + kDeviceAlign - 1) / kDeviceAlign * kDeviceAlign; }

}  // namespace

DeviceState::~DeviceState() {
  graphs.clear();  // graphs before the memory they point into
  if (api == nullptr) return;
  api->Free(arena);
  api->Free(params);
  api->Free(workspace);
  api->DestroyStream(stream);
}

absl::Status DeviceState::Init(int64_t param_words, size_t workspace_size) {
  SS_ASSIGN_OR_RETURN(s, api->CreateStream());
  stream = s;
  SS_ASSIGN_OR_RETURN(p, api->Allocate(static_cast<size_t>(std::max<int64_t>(param_words, 1)) * 8));
  params = p;
  host_params.assign(std::max<int64_t>(param_words, 1), 0);
  workspace_bytes = workspace_size;
  if (workspace_bytes > 0) {
    SS_ASSIGN_OR_RETURN(w, api->Allocate(workspace_bytes));
    workspace = w;
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> DeviceState::EnsureArena(size_t bytes) {
  if (bytes <= arena_capacity && arena != 0) return 0;
  // Grow geometrically, like the CPU arena: a rising request size settles.
  size_t capacity = std::max(bytes, arena_capacity + arena_capacity / 2);
  capacity = static_cast<size_t>(Align(static_cast<int64_t>(std::max<size_t>(capacity, 1))));
  // The stream may still read the old arena; wait before freeing it.
  if (absl::Status s = api->Synchronize(stream); !s.ok()) return s;
  api->Free(arena);
  arena = 0;
  arena_capacity = 0;
  SS_ASSIGN_OR_RETURN(a, api->Allocate(capacity));
  arena = a;
  arena_capacity = capacity;
  ++arena_generation;
  int64_t dropped = static_cast<int64_t>(graphs.size());
  graphs.clear();
  return dropped;
}

DeviceProgram::DeviceProgram(std::shared_ptr<cuda::DeviceApi> api, CudaOptions options)
    : api_(std::move(api)), options_(std::move(options)) {
  static std::atomic<uint64_t> next_id{1};
  id_ = next_id++;
}

DeviceProgram::~DeviceProgram() {
  module_.reset();
  gemms_.clear();
  if (api_ != nullptr) api_->Free(constants_);
}

absl::StatusOr<std::unique_ptr<DeviceProgram>> DeviceProgram::Create(const CompileOptions& options) {
  std::shared_ptr<cuda::DeviceApi> api = options.cuda.device;
  if (api == nullptr) {
    absl::StatusOr<std::shared_ptr<cuda::DeviceApi>> opened = cuda::OpenCudaDevice(options.cuda.ordinal);
    if (!opened.ok()) {
      return absl::Status(opened.status().code(),
                          absl::StrCat("--device cuda: ", opened.status().message(),
                                       " (nothing runs on the CPU instead; use --device cpu)"));
    }
    api = *std::move(opened);
  }
  return std::unique_ptr<DeviceProgram>(new DeviceProgram(std::move(api), options.cuda));
}

absl::StatusOr<int> DeviceProgram::AddKernel(const codegen::Kernel& kernel) {
  for (size_t i = 0; i < kernels_.size(); ++i) {
    if (codegen::StructurallyEqual(kernels_[i], kernel)) return static_cast<int>(i);
  }
  int index = static_cast<int>(kernels_.size());
  SS_ASSIGN_OR_RETURN(source, cuda::EmitCudaKernel(kernel, absl::StrCat("k", index, "_", kernel.name)));
  kernels_.push_back(kernel);
  sources_.push_back(std::move(source));
  return index;
}

absl::Status DeviceProgram::AddKernelStep(const codegen::Kernel& kernel, std::vector<int> buffers,
                                          const std::vector<SymExpr>& dim_values, const StepResolver& resolve) {
  SS_ASSIGN_OR_RETURN(index, AddKernel(kernel));
  KernelStep step;
  step.kernel = index;
  step.buffers = std::move(buffers);
  absl::flat_hash_map<std::string, SymExpr> model;  // kernel dim -> model expression
  for (size_t i = 0; i < dim_values.size(); ++i) {
    SS_ASSIGN_OR_RETURN(slot, resolve.slot(dim_values[i]));
    step.dim_slots.push_back(slot);
    model[kernel.dims[i]] = dim_values[i];
  }
  const cuda::CudaKernelSource& source = sources_[index];
  SS_ASSIGN_OR_RETURN(work, resolve.slot(source.work.Substitute(model)));
  SS_ASSIGN_OR_RETURN(row, resolve.slot(source.row_length.Substitute(model)));
  step.work_slot = work;
  step.row_slot = row;
  step.params = static_cast<int>(param_words_);
  param_words_ += static_cast<int64_t>(step.buffers.size() + step.dim_slots.size());
  steps_.push_back(std::move(step));
  return absl::OkStatus();
}

absl::Status DeviceProgram::Add(const lower::KernelCall& call, const StepResolver& resolve) {
  std::vector<int> buffers;
  for (const lower::GraphValue* v : call.buffers) {
    SS_ASSIGN_OR_RETURN(b, resolve.buffer(v));
    buffers.push_back(b);
  }
  return AddKernelStep(call.kernel, std::move(buffers), call.dim_values, resolve);
}

absl::Status DeviceProgram::Add(const lower::MatmulCall& call, const StepResolver& resolve) {
  cuda::GemmPlan plan = cuda::PlanGemm(call.config, options_.gelu_in_gemm, options_.allow_tf32);
  const std::string key = plan.op.Describe();
  GemmStep step;
  for (const auto& [have, gemm] : gemm_by_op_) {
    if (have == key) step.gemm = gemm;
  }
  if (step.gemm == nullptr) {
    SS_ASSIGN_OR_RETURN(created, api_->CreateGemm(plan.op));
    step.gemm = created.get();
    gemm_by_op_.push_back({key, created.get()});
    gemms_.push_back(std::move(created));
  }
  SS_ASSIGN_OR_RETURN(batch, resolve.slot(call.batch));
  SS_ASSIGN_OR_RETURN(m, resolve.slot(call.m));
  SS_ASSIGN_OR_RETURN(k, resolve.slot(call.k));
  SS_ASSIGN_OR_RETURN(n, resolve.slot(call.n));
  SS_ASSIGN_OR_RETURN(a, resolve.buffer(call.a));
  SS_ASSIGN_OR_RETURN(b, resolve.buffer(call.b));
  SS_ASSIGN_OR_RETURN(bias, resolve.buffer(call.bias));
  SS_ASSIGN_OR_RETURN(residual, resolve.buffer(call.residual));
  SS_ASSIGN_OR_RETURN(c, resolve.buffer(call.c));
  step.batch = batch, step.m = m, step.k = k, step.n = n;
  step.a = a, step.b = b, step.bias = bias, step.residual = residual, step.c = c;
  step.batched = plan.op.batched;
  step.m_expr = call.m, step.k_expr = call.k, step.n_expr = call.n, step.batch_expr = call.batch;
  if (plan.epilogue) step.epilogue = static_cast<int>(steps_.size()) + 1;
  steps_.push_back(step);
  if (!plan.epilogue) return absl::OkStatus();
  std::vector<int> buffers = {c};
  if (plan.epilogue_reads_residual) buffers.push_back(residual);
  return AddKernelStep(*plan.epilogue, std::move(buffers), {call.batch * call.m, call.n}, resolve);
}

absl::Status DeviceProgram::Add(const lower::GatherRowsCall& call, const StepResolver& resolve) {
  GatherStep step;
  SS_ASSIGN_OR_RETURN(table, resolve.buffer(call.table));
  SS_ASSIGN_OR_RETURN(indices, resolve.buffer(call.indices));
  SS_ASSIGN_OR_RETURN(output, resolve.buffer(call.output));
  SS_ASSIGN_OR_RETURN(count, resolve.slot(call.num_indices));
  step.table = table, step.indices = indices, step.output = output, step.count_slot = count;
  step.table_rows = call.table_rows;
  step.row_bytes = call.row_bytes;
  step.indices_i32 = call.indices->type().dtype == DType::kI32;
  step.node_name = call.node_name;
  step.params = static_cast<int>(param_words_);
  param_words_ += 8;  // 4 pointers, 4 dims
  step.status_word = status_words_++;
  steps_.push_back(std::move(step));
  has_gathers_ = true;
  return absl::OkStatus();
}

absl::Status DeviceProgram::Add(const lower::IndexCheckCall& call, const StepResolver& resolve) {
  if (call.dims.empty() || call.dims.size() != call.axes.size()) {
    return absl::InternalError(absl::StrCat("node '", call.node_name, "': an index check needs one axis per dim"));
  }
  IndexCheckStep step;
  SS_ASSIGN_OR_RETURN(indices, resolve.buffer(call.indices));
  SS_ASSIGN_OR_RETURN(count, resolve.slot(call.indices->type().NumElements()));
  step.indices = indices;
  step.count_slot = count;
  for (SymExpr d : call.dims) {
    SS_ASSIGN_OR_RETURN(slot, resolve.slot(d));
    step.dim_slots.push_back(slot);
  }
  step.axes = call.axes;
  step.indices_i32 = call.indices->type().dtype == DType::kI32;
  step.node_name = call.node_name;
  step.op_type = call.op_type;
  step.params = static_cast<int>(param_words_);
  param_words_ += 2 + cuda::kIndexCheckFixedDims + static_cast<int64_t>(step.dim_slots.size());  // 2 pointers, dims
  step.status_word = status_words_++;
  steps_.push_back(std::move(step));
  has_checks_ = true;
  return absl::OkStatus();
}

absl::Status DeviceProgram::Add(const lower::AttentionCall& call, const StepResolver& resolve) {
  if (call.head_dim > cuda::kAttentionMaxHeadDim || call.v_head_dim > cuda::kAttentionMaxHeadDim) {
    return absl::InternalError(absl::StrCat("node '", call.node_name, "': head dims ", call.head_dim, " and ",
                                            call.v_head_dim, " exceed the CUDA attention kernel's ",
                                            cuda::kAttentionMaxHeadDim, " (fusion should not have merged it)"));
  }
  AttentionStep step;
  for (auto [value, buffer] : {std::pair{call.q, &step.q}, std::pair{call.k, &step.k}, std::pair{call.v, &step.v},
                               std::pair{call.mask, &step.mask}, std::pair{call.out, &step.out}}) {
    SS_ASSIGN_OR_RETURN(b, resolve.buffer(value));
    *buffer = b;
  }
  for (auto [expr, slot] : {std::pair{call.batch, &step.batch}, std::pair{call.heads, &step.heads},
                            std::pair{call.kv_heads, &step.kv_heads}, std::pair{call.q_len, &step.q_len},
                            std::pair{call.kv_len, &step.kv_len}, std::pair{call.q_offset, &step.q_offset},
                            std::pair{call.k_offset, &step.k_offset}, std::pair{call.v_offset, &step.v_offset}}) {
    SS_ASSIGN_OR_RETURN(s, resolve.slot(expr));
    *slot = s;
  }
  for (auto [exprs, slots] : {std::pair{&call.q_strides, &step.q_strides}, std::pair{&call.k_strides, &step.k_strides},
                              std::pair{&call.v_strides, &step.v_strides},
                              std::pair{&call.out_strides, &step.out_strides},
                              std::pair{&call.mask_strides, &step.mask_strides}}) {
    for (size_t i = 0; i < 3; ++i) {
      SS_ASSIGN_OR_RETURN(s, resolve.slot((*exprs)[i]));
      (*slots)[i] = s;
    }
  }
  codegen::AttentionArgs& f = step.fixed;
  f.head_dim = call.head_dim;
  f.v_head_dim = call.v_head_dim;
  f.mask_col_stride = call.mask_col_stride;
  f.causal = call.causal;
  f.window = call.window;
  f.fill = call.fill;
  f.scale = call.scale;
  f.nan_to_zero = call.nan_to_zero;
  step.node_name = call.node_name;
  step.params = static_cast<int>(param_words_);
  param_words_ += 5 + cuda::kAttentionDimWords;
  steps_.push_back(std::move(step));
  has_attention_ = true;
  return absl::OkStatus();
}

absl::Status DeviceProgram::Finish(const Program::Impl& impl, const Graph& graph, const ShapeEnv& env,
                                   const passes::MemoryPlan& memory, const StepResolver& resolve) {
  // The status words follow the steps' parameters in the block.
  status_base_ = param_words_;
  param_words_ += status_words_;
  // 1. One module: every distinct kernel, and the gather kernel if used.
  std::string source = cuda::CudaPrelude();
  for (const cuda::CudaKernelSource& k : sources_) source += k.function;
  if (has_gathers_) source += cuda::GatherRowsKernel().function;
  if (has_checks_) source += cuda::IndexCheckKernel().function;
  if (has_attention_) source += cuda::AttentionKernel().function;
  SS_ASSIGN_OR_RETURN(module, api_->LoadModule(source, "program"));
  module_ = std::move(module);
  for (const cuda::CudaKernelSource& k : sources_) {
    SS_ASSIGN_OR_RETURN(fn, module_->Function(k.entry));
    functions_.push_back(fn);
  }
  if (has_gathers_) {
    SS_ASSIGN_OR_RETURN(fn, module_->Function(cuda::kGatherRowsEntry));
    gather_function_ = fn;
  }
  if (has_checks_) {
    SS_ASSIGN_OR_RETURN(fn, module_->Function(cuda::kIndexCheckEntry));
    check_function_ = fn;
  }
  if (has_attention_) {
    SS_ASSIGN_OR_RETURN(fn, module_->Function(cuda::kAttentionEntry));
    attention_function_ = fn;
  }
  // 2. Constants, once, in one allocation.
  constant_offset_.assign(impl.buffers.size(), -1);
  for (size_t b = 0; b < impl.buffers.size(); ++b) {
    if (impl.buffers[b].kind != BufferSource::Kind::kConstant) continue;
    constant_offset_[b] = constant_bytes_;
    constant_bytes_ += Align(static_cast<int64_t>(std::max<size_t>(impl.buffers[b].constant_bytes, 1)));
  }
  if (constant_bytes_ > 0) {
    SS_ASSIGN_OR_RETURN(block, api_->Allocate(static_cast<size_t>(constant_bytes_)));
    constants_ = block;
    SS_ASSIGN_OR_RETURN(stream, api_->CreateStream());
    absl::Status copied = absl::OkStatus();
    for (size_t b = 0; b < impl.buffers.size() && copied.ok(); ++b) {
      if (constant_offset_[b] < 0) continue;
      copied = api_->CopyToDevice(constants_ + constant_offset_[b], impl.buffers[b].constant,
                                  impl.buffers[b].constant_bytes, stream);
    }
    if (copied.ok()) copied = api_->Synchronize(stream);
    api_->DestroyStream(stream);
    if (!copied.ok()) return absl::Status(copied.code(), absl::StrCat("uploading the weights: ", copied.message()));
  }
  // 3. Staging of inputs (outputs use their shape slots).
  std::vector<PaddedSize> padded;
  for (const lower::GraphValue* in : graph.inputs()) {
    SS_ASSIGN_OR_RETURN(slot, resolve.slot(in->type().NumElements()));
    input_elements_slot_.push_back(slot);
    padded.push_back({absl::StrCat("input '", in->name(), "'"), in->type().NumElements()});
  }
  for (const lower::GraphValue* out : graph.outputs()) {
    padded.push_back({absl::StrCat("output '", out->name(), "'"), out->type().NumElements()});
  }
  // 4. CUDA graphs: every buffer and every padded GEMM dim must not shrink
  // as the bucketed symbol grows (cuda_graphs.h).
  for (const auto& [value, assignment] : memory.buffers) {
    if (assignment.storage == passes::BufferStorage::kArena) {
      padded.push_back({absl::StrCat("buffer '", value->name(), "'"), assignment.size_bytes});
    }
  }
  for (const SymExpr& slot_size : memory.slot_sizes) padded.push_back({"an arena slot", slot_size});
  for (const Step& s : steps_) {
    if (const auto* g = std::get_if<GemmStep>(&s)) {
      padded.push_back({"a GEMM's M", g->m_expr});
      padded.push_back({"a GEMM's batch", g->batch_expr});
    }
  }
  graph_plan_ = PlanCudaGraphs(env, impl.binder.symbol_names(), options_.graph_symbol, options_.graphs,
                               options_.learned_buckets, options_.capture_after, padded);
  for (Step& s : steps_) {
    auto* g = std::get_if<GemmStep>(&s);
    if (g == nullptr || !graph_plan_.enabled) continue;
    const std::string& sym = graph_plan_.symbol;
    g->graph_safe = !Mentions(g->k_expr, sym) && !Mentions(g->n_expr, sym) && (!g->batched || !Mentions(g->m_expr, sym));
  }
  return absl::OkStatus();
}

DeviceStats DeviceProgram::stats() const {
  DeviceStats s;
  s.device = api_->info().Describe();
  s.arch = module_ ? module_->arch() : "";
  s.kernels = static_cast<int64_t>(kernels_.size()) + (gather_function_ != nullptr ? 1 : 0) +
              (check_function_ != nullptr ? 1 : 0) + (attention_function_ != nullptr ? 1 : 0);
  s.gemm_configs = static_cast<int64_t>(gemms_.size());
  s.requests = requests_.load();
  s.direct_runs = direct_runs_.load();
  s.graph_captures = graph_captures_.load();
  s.graph_replays = graph_replays_.load();
  s.graph_invalidations = graph_invalidations_.load();
  s.host_to_device_copies = h2d_.load();
  s.device_to_host_copies = d2h_.load();
  s.constant_bytes = constant_bytes_;
  if (module_) s.ptxas = module_->reports();
  return s;
}

std::string DeviceProgram::Report() const {
  DeviceStats s = stats();
  std::string out = absl::StrCat("device: ", s.device, "; module ", s.arch, ", ", s.kernels, " kernels, ",
                                 s.gemm_configs, " cuBLASLt operations, ", s.constant_bytes, " bytes of weights\n");
  int64_t outside = 0, inside = 0;
  for (const Step& step : steps_) {
    if (const auto* g = std::get_if<GemmStep>(&step)) (g->graph_safe ? inside : outside)++;
  }
  if (!graph_plan_.enabled) {
    absl::StrAppend(&out, "CUDA graphs: none (", graph_plan_.disabled_reason, ")\n");
  } else {
    absl::StrAppend(&out, "CUDA graphs: bucketed by ", graph_plan_.symbol, " in ", graph_plan_.min, "..",
                    graph_plan_.max, " (", graph_plan_.buckets->options().kind == BucketKind::kLearned ? "learned"
                                                                                                     : "powers of two",
                    "), other symbols exact; captured after ", graph_plan_.capture_after, " requests of a key; ",
                    graph_plan_.proven_sizes, " sizes proven non-decreasing in ", graph_plan_.symbol, "; ", inside,
                    " GEMMs inside graphs (padded M or batch), ", outside, " between segments (",
                    graph_plan_.symbol, " in K or N)\n");
  }
  absl::StrAppend(&out, "requests ", s.requests, ": ", s.graph_replays, " graph replays, ", s.direct_runs,
                  " direct runs, ", s.graph_captures, " captures, ", s.graph_invalidations, " invalidations\n");
  absl::MutexLock lock(&events_mu_);
  for (const std::string& e : capture_events_) absl::StrAppend(&out, "  ", e, "\n");
  return out;
}

}  // namespace shapeshift::runtime
