#include "tests/support/cuda/emulated_steps.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "codegen/cuda/attention_kernel.h"
#include "codegen/cuda/gather_kernel.h"
#include "codegen/cuda/index_check_kernel.h"
#include "codegen/cuda/gemm_plan.h"
#include "graph/interpreter.h"
#include "tests/support/cuda/emulated_device.h"
#include "tests/support/cuda/host_module.h"

namespace shapeshift::codegen::cuda::testing {
namespace {

absl::StatusOr<int64_t> Eval(SymExpr e, const Kernel& k, const std::vector<int64_t>& dims) {
  Assignment a;
  for (size_t i = 0; i < k.dims.size(); ++i) a[k.dims[i]] = dims[i];
  return e.Evaluate(a);
}

absl::Status Run(const CudaKernelSource& source, int64_t work, int64_t row_length, const std::vector<void*>& buffers,
                 const std::vector<int64_t>& dims, const EmulatedRunOptions& options) {
  absl::StatusOr<std::shared_ptr<const HostModule>> module = HostModule::Compile(CudaPrelude() + source.function);
  if (!module.ok()) return module.status();
  absl::StatusOr<void*> entry = (*module)->Entry(source.entry);
  if (!entry.ok()) return entry.status();
  LaunchShape shape = ChooseLaunch(source.mapping, work, row_length);
  if (options.block_override > 0) {
    shape.block = options.block_override;
    if (source.mapping != ThreadMapping::kBlockPerRow) {
      shape.grid = static_cast<uint32_t>(std::clamp<int64_t>((work + shape.block - 1) / shape.block, 1, kMaxGridBlocks));
    }
  }
  std::vector<long long> d(dims.begin(), dims.end());
  return (*module)->Launch(*entry, shape, options.reverse, buffers.data(), d.data());
}

}  // namespace

AttentionArgs AttentionArgsFor(const lower::AttentionCall& call,
                               const std::function<float*(const lower::GraphValue*)>& data,
                               const std::function<int64_t(SymExpr)>& eval) {
  AttentionArgs args;
  args.batch = eval(call.batch), args.heads = eval(call.heads), args.kv_heads = eval(call.kv_heads);
  args.q_len = eval(call.q_len), args.kv_len = eval(call.kv_len);
  args.head_dim = call.head_dim, args.v_head_dim = call.v_head_dim;
  auto operand = [&](const lower::GraphValue* v, const std::array<SymExpr, 3>& strides) {
    return AttentionOperand{data(v), eval(strides[0]), eval(strides[1]), eval(strides[2])};
  };
  args.q = operand(call.q, call.q_strides);
  args.k = operand(call.k, call.k_strides);
  args.v = operand(call.v, call.v_strides);
  args.out = operand(call.out, call.out_strides);
  if (call.mask != nullptr) args.mask = operand(call.mask, call.mask_strides);
  args.mask_col_stride = call.mask_col_stride;
  args.causal = call.causal, args.window = call.window, args.fill = call.fill, args.scale = call.scale;
  args.nan_to_zero = call.nan_to_zero;
  return args;
}

absl::Status RunKernelEmulated(const Kernel& kernel, const std::vector<void*>& buffers,
                               const std::vector<int64_t>& dims, const EmulatedRunOptions& options) {
  absl::StatusOr<CudaKernelSource> source = EmitCudaKernel(kernel, "k_" + kernel.name);
  if (!source.ok()) return source.status();
  absl::StatusOr<int64_t> work = Eval(source->work, kernel, dims);
  absl::StatusOr<int64_t> row = Eval(source->row_length, kernel, dims);
  if (!work.ok()) return work.status();
  if (!row.ok()) return row.status();
  return Run(*source, *work, *row, buffers, dims, options);
}

absl::StatusOr<std::vector<Tensor>> RunStepsEmulated(const Graph& graph, const std::vector<lower::LoweredStep>& steps,
                                                     const std::vector<Tensor>& inputs,
                                                     const EmulatedRunOptions& options) {
  absl::StatusOr<Assignment> bound = BindInputSymbols(graph, inputs);
  if (!bound.ok()) return bound.status();
  std::map<const lower::GraphValue*, Tensor> store;
  for (size_t i = 0; i < inputs.size(); ++i) store[graph.inputs()[i]] = inputs[i];
  auto tensor = [&](const lower::GraphValue* v) -> Tensor& {
    if (auto it = store.find(v); it != store.end()) return it->second;
    if (v->is_constant()) return store[v] = *v->constant();
    std::vector<int64_t> shape = v->type().Evaluate(*bound).value();
    return store[v] = Tensor::Zeros(v->type().dtype, shape).value();
  };
  auto eval = [&](SymExpr e) { return e.Evaluate(*bound).value(); };
  for (const lower::LoweredStep& step : steps) {
    if (const auto* k = std::get_if<lower::KernelCall>(&step)) {
      std::vector<void*> ptrs;
      for (const lower::GraphValue* v : k->buffers) ptrs.push_back(tensor(v).mutable_raw());
      std::vector<int64_t> dims;
      for (SymExpr e : k->dim_values) dims.push_back(eval(e));
      if (absl::Status s = RunKernelEmulated(k->kernel, ptrs, dims, options); !s.ok()) return s;
    } else if (const auto* m = std::get_if<lower::MatmulCall>(&step)) {
      GemmPlan plan = PlanGemm(m->config);
      GemmShape shape{eval(m->batch), eval(m->m), eval(m->k), eval(m->n)};
      GemmOperands ops;
      ops.a = reinterpret_cast<DevicePtr>(tensor(m->a).raw());
      ops.b = reinterpret_cast<DevicePtr>(tensor(m->b).raw());
      if (m->bias) ops.bias = reinterpret_cast<DevicePtr>(tensor(m->bias).raw());
      if (m->residual) ops.residual = reinterpret_cast<DevicePtr>(tensor(m->residual).raw());
      ops.d = reinterpret_cast<DevicePtr>(tensor(m->c).mutable_raw());
      RunGemmOpOnHost(plan.op, shape, ops);
      if (plan.epilogue) {
        std::vector<void*> ptrs = {reinterpret_cast<void*>(ops.d)};
        if (plan.epilogue_reads_residual) ptrs.push_back(reinterpret_cast<void*>(ops.residual));
        int64_t rows = (plan.op.batched ? shape.batch : 1) * shape.m;
        if (absl::Status s = RunKernelEmulated(*plan.epilogue, ptrs, {rows, shape.n}, options); !s.ok()) return s;
      }
    } else if (const auto* a = std::get_if<lower::AliasCall>(&step)) {
      store[a->alias] = tensor(a->source).Reshaped(a->alias->type().Evaluate(*bound).value()).value();
    } else if (const auto* c = std::get_if<lower::IndexCheckCall>(&step)) {
      // The device program's check kernel (index_check_kernel.h).
      int64_t status = kIndexCheckPassed;
      const Tensor& ids = tensor(c->indices);
      std::vector<void*> ptrs = {const_cast<void*>(ids.raw()), &status};
      std::vector<int64_t> dims = {ids.num_elements(), ids.dtype() == DType::kI32 ? 1 : 0,
                                   static_cast<int64_t>(c->dims.size())};
      for (SymExpr d : c->dims) dims.push_back(eval(d));
      if (absl::Status s = Run(IndexCheckKernel(), ids.num_elements(), 1, ptrs, dims, options); !s.ok()) return s;
      if (status != kIndexCheckPassed) {
        return absl::InvalidArgumentError(absl::StrCat("node '", c->node_name, "' (", c->op_type, "): index ",
                                                       ids.GetAsInt64(status), " at position ", status,
                                                       " is out of range"));
      }
    } else if (const auto* a = std::get_if<lower::AttentionCall>(&step)) {
      // The device program's fused attention kernel (attention_kernel.h).
      const AttentionArgs args = AttentionArgsFor(
          *a, [&](const lower::GraphValue* v) { return tensor(v).mutable_data<float>(); }, eval);
      if (absl::Status s = CheckCudaAttention(args); !s.ok()) return s;
      const std::array<float*, 5> buffers = AttentionBuffers(args);
      const std::array<long long, kAttentionDimWords> words = AttentionDimWords(args);
      if (absl::Status s = Run(AttentionKernel(), AttentionItems(args), kAttentionThreads,
                               std::vector<void*>(buffers.begin(), buffers.end()),
                               std::vector<int64_t>(words.begin(), words.end()), options);
          !s.ok()) {
        return s;
      }
    } else {
      const auto& g = std::get<lower::GatherRowsCall>(step);
      int64_t status = kGatherNoBadIndex;
      std::vector<void*> ptrs = {const_cast<void*>(tensor(g.table).raw()), const_cast<void*>(tensor(g.indices).raw()),
                                 tensor(g.output).mutable_raw(), &status};
      int64_t count = eval(g.num_indices);
      std::vector<int64_t> dims = {count, g.row_bytes, g.table_rows,
                                   g.indices->type().dtype == DType::kI32 ? 1 : 0};
      if (absl::Status s = Run(GatherRowsKernel(), count * GatherWordsPerRow(g.row_bytes), 1, ptrs, dims, options);
          !s.ok()) {
        return s;
      }
      if (status != kGatherNoBadIndex) {
        return absl::InvalidArgumentError(
            absl::StrCat("node '", g.node_name, "': bad index at position ", status));
      }
    }
  }
  std::vector<Tensor> outs;
  for (const lower::GraphValue* v : graph.outputs()) outs.push_back(tensor(v));
  return outs;
}

}  // namespace shapeshift::codegen::cuda::testing
