// Program::Run: bind dims, evaluate sizes, run the steps (see program.h).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <utility>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "codegen/cpu/fused_attention.h"
#include "codegen/cpu/parallel_run.h"
#include "runtime/program_impl.h"
#include "runtime/step_profile.h"
#include "runtime/tuning/gemm_tuning.h"

namespace shapeshift::runtime {
namespace {

namespace cpu = codegen::cpu;

// Gather rows [begin, end) as a kernel for RunParallel.
// buffers: table, indices, output, the first bad position (atomic), the
// table's SpilledRange or null; dims: row bytes, rows, i32 indices.
void GatherRows(int64_t begin, int64_t end, void* const* buffers, const int64_t* dims) {
  const auto* table = static_cast<const std::byte*>(buffers[0]);
  auto* out = static_cast<std::byte*>(buffers[2]);
  auto* bad = static_cast<std::atomic<int64_t>*>(buffers[3]);
  const auto* file = static_cast<const SpilledRange*>(buffers[4]);
  int64_t row_bytes = dims[0], rows = dims[1];
  bool i32 = dims[2] != 0;
  for (int64_t r = begin; r < end; ++r) {
    int64_t id = i32 ? static_cast<const int32_t*>(buffers[1])[r] : static_cast<const int64_t*>(buffers[1])[r];
    if (id < 0) id += rows;
    if (id < 0 || id >= rows) {
      bad->store(r, std::memory_order_relaxed);
      continue;
    }
    // From the file where the table is spilled (the mapping's bytes, none
    // of its pages made resident); through the mapping should a read fail.
    if (file != nullptr && ReadSpilled(*file, id * row_bytes, out + r * row_bytes, row_bytes)) continue;
    std::memcpy(out + r * row_bytes, table + id * row_bytes, row_bytes);
  }
}

// Per KV pair of a request: the bound buffer's capacity, or -1 (plain).
using PairCapacities = std::vector<int64_t>;

// A KV Concat's copy of the past that has nothing to do: the past is
// already in the bound buffer, or the attention copies it.
bool Skipped(const Step& step, const PairCapacities& capacity) {
  const auto* k = std::get_if<KernelStep>(&step);
  if (k == nullptr || !k->kv_past) return false;
  return k->past_by_attention || (k->kv_pair >= 0 && capacity[k->kv_pair] >= 0);
}

absl::Status RunStep(const KernelStep& step, void* const* buffers, const int64_t* slots,
                     const PairCapacities& capacity, std::vector<void*>& call_buffers,
                     std::vector<int64_t>& call_dims) {
  const bool bound = step.kv_pair >= 0 && capacity[step.kv_pair] >= 0;
  for (size_t i = 0; i < step.buffers.size(); ++i) call_buffers[i] = buffers[step.buffers[i]];
  for (size_t i = 0; i < step.dim_slots.size(); ++i) call_dims[i] = slots[step.dim_slots[i]];
  if (bound) call_dims[step.kv_extent_dim] = capacity[step.kv_pair];
  if (slots[step.work_slot] < kSerialKernelElements) {
    step.kernel->fn(0, step.kernel->extent(call_dims.data()), call_buffers.data(), call_dims.data());
  } else {
    cpu::RunParallel(*step.kernel, call_buffers.data(), call_dims.data());
  }
  return absl::OkStatus();
}

// Which engine a GEMM step's request runs on: it depends on the row count.
enum class MatmulRoute { kSkinny, kPanels, kSmallRows, kOnednn };

MatmulRoute RouteOf(const MatmulStep& step, int64_t m) {
  if (step.skinny != nullptr && m >= step.skinny->options().min_rows && m <= step.skinny->options().max_rows) {
    return MatmulRoute::kSkinny;
  }
  // With panels every other row count reads them too (fewer rows than a
  // chunk run on the skinny GEMM), so the plain B is never read.
  if (step.panel_rows != nullptr) return MatmulRoute::kPanels;
  if (step.small_rows != nullptr && step.small_rows->Covers(m)) return MatmulRoute::kSmallRows;
  return MatmulRoute::kOnednn;
}

// The names ProgramStats::short_request_gemms uses (program_compile.cc).
std::string RouteName(const MatmulStep& step, MatmulRoute route) {
  switch (route) {
    case MatmulRoute::kSkinny: return absl::StrCat("skinny-", cpu::IsaName(step.skinny->isa()));
    case MatmulRoute::kPanels: return step.panel_rows->engine();
    case MatmulRoute::kSmallRows: return "onednn-small-rows";
    case MatmulRoute::kOnednn: break;
  }
  return LongRowsName(LongRows::kPlain);
}

absl::Status RunStep(const MatmulStep& step, void* const* buffers, const int64_t* slots,
                     const std::vector<KvPair>& pairs, const PairCapacities& capacity, int64_t& skinny_calls) {
  cpu::MatmulShape shape{slots[step.batch], slots[step.m], slots[step.k], slots[step.n]};
  if (step.b_kv_pair >= 0) {
    const int64_t bound = capacity[step.b_kv_pair];
    shape.b_batch_stride =
        bound >= 0 ? bound * slots[pairs[step.b_kv_pair].position_slot] : slots[step.b_stride_slot];
  }
  if (shape.batch == 0 || shape.m == 0 || shape.n == 0) return absl::OkStatus();  // empty result
  cpu::MatmulOperands ops;
  ops.a = static_cast<const float*>(buffers[step.a]);
  ops.b = static_cast<const float*>(buffers[step.b]);
  ops.bias = step.bias >= 0 ? static_cast<const float*>(buffers[step.bias]) : nullptr;
  ops.residual = step.residual >= 0 ? static_cast<const float*>(buffers[step.residual]) : nullptr;
  ops.c = static_cast<float*>(buffers[step.c]);
  switch (RouteOf(step, shape.m)) {
    case MatmulRoute::kSkinny:
      ops.b = step.packed_b.data();
      ++skinny_calls;
      return step.skinny->Execute(shape, ops);
    case MatmulRoute::kPanels:
      ops.b = step.packed_b.data();
      return step.panel_rows->Execute(shape, ops);
    case MatmulRoute::kSmallRows:
      ops.b = step.packed_b.data();
      return step.small_rows->Execute(shape, ops);
    case MatmulRoute::kOnednn: break;
  }
  return step.matmul->Execute(shape, ops);
}

absl::Status RunStep(const GatherStep& step, void* const* buffers, const int64_t* slots) {
  std::atomic<int64_t> bad{-1};
  const void* file = step.table_file ? &step.table_file : nullptr;
  void* args[5] = {buffers[step.table], buffers[step.indices], buffers[step.output], &bad, const_cast<void*>(file)};
  int64_t dims[3] = {step.row_bytes, step.table_rows, step.indices_i32 ? 1 : 0};
  // Like kernels, a small copy (a short request's embeddings) runs on this
  // thread: waking the pool costs more than the copy, a lot more under load.
  const int64_t rows = slots[step.count_slot];
  if (rows * step.row_bytes / static_cast<int64_t>(sizeof(float)) < kSerialKernelElements) {
    GatherRows(0, rows, args, dims);
  } else {
    cpu::RunParallel(&GatherRows, rows, args, dims);
  }
  if (int64_t r = bad.load(); r >= 0) {
    int64_t id = step.indices_i32 ? static_cast<const int32_t*>(buffers[step.indices])[r]
                                  : static_cast<const int64_t*>(buffers[step.indices])[r];
    return absl::InvalidArgumentError(absl::StrCat("node '", step.node_name, "': index ", id, " at position ", r,
                                                   " is outside the table's ", step.table_rows, " rows"));
  }
  return absl::OkStatus();
}

absl::Status RunStep(const AttentionStep& step, void* const* buffers, const int64_t* slots,
                     const PairCapacities& capacity) {
  cpu::AttentionArgs args;
  args.batch = slots[step.batch];
  args.heads = slots[step.heads];
  args.kv_heads = slots[step.kv_heads];
  args.q_len = slots[step.q_len];
  args.kv_len = slots[step.kv_len];
  args.head_dim = step.head_dim;
  args.v_head_dim = step.v_head_dim;
  auto operand = [&](int buffer, const std::array<int, 3>& strides) {
    cpu::AttentionOperand o;
    o.data = static_cast<float*>(buffers[buffer]);
    o.batch_stride = slots[strides[0]];
    o.head_stride = slots[strides[1]];
    o.row_stride = slots[strides[2]];
    return o;
  };
  args.q = operand(step.q, step.q_strides);
  args.k = operand(step.k, step.k_strides);
  args.v = operand(step.v, step.v_strides);
  args.q.data += slots[step.q_offset];
  args.k.data += slots[step.k_offset];
  args.v.data += slots[step.v_offset];
  // A bound present holds `capacity` positions per head.
  if (step.k_kv_pair >= 0 && capacity[step.k_kv_pair] >= 0) {
    args.k.head_stride = capacity[step.k_kv_pair] * args.head_dim;
    args.k.batch_stride = args.kv_heads * args.k.head_stride;
  }
  if (step.v_kv_pair >= 0 && capacity[step.v_kv_pair] >= 0) {
    args.v.head_stride = capacity[step.v_kv_pair] * args.v_head_dim;
    args.v.batch_stride = args.kv_heads * args.v.head_stride;
  }
  // Unbound, a present's past copied by the attention (its Concat's copy
  // skipped: KernelStep::past_by_attention).
  cpu::PastCopy past;
  bool copies = false;
  for (auto [source, pair, op] : {std::tuple{&step.k_past, step.k_kv_pair, &past.k},
                                  std::tuple{&step.v_past, step.v_kv_pair, &past.v}}) {
    if (source->buffer < 0 || capacity[pair] >= 0) continue;
    *op = operand(source->buffer, source->strides);
    past.rows = slots[source->rows];
    copies = true;
  }
  args.out = operand(step.out, step.out_strides);
  if (step.mask >= 0) {
    args.mask = operand(step.mask, step.mask_strides);
    args.mask_col_stride = step.mask_col_stride;
  }
  args.scale = step.scale;
  args.causal = step.causal;
  args.window = step.window;
  args.fill = step.fill;
  args.nan_to_zero = step.nan_to_zero;
  if (absl::Status s = cpu::RunFusedAttention(args, copies ? &past : nullptr); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("attention at node '", step.node_name, "': ", s.message()));
  }
  return absl::OkStatus();
}

int64_t NanosecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
}

// The row of the step profile (step_profile.h) a step's time goes to:
// steps that do the same thing share one, whichever layer they belong to.
std::pair<const char*, std::string> ProfileLabel(const Step& step, const int64_t* slots) {
  if (const auto* k = std::get_if<KernelStep>(&step)) return {"kernel", k->kernel->name};
  if (const auto* m = std::get_if<MatmulStep>(&step)) {
    return {"matmul", absl::StrCat(cpu::DescribeConfig(m->matmul->config()), " on ",
                                   RouteName(*m, RouteOf(*m, slots[m->m])))};
  }
  if (const auto* a = std::get_if<AttentionStep>(&step)) {
    return {"attention", absl::StrCat("head dim ", a->head_dim, a->causal ? ", causal" : "",
                                      a->mask >= 0 ? ", masked" : "", slots[a->kv_heads] != slots[a->heads] ? ", grouped" : "")};
  }
  if (const auto* c = std::get_if<IndexCheckStep>(&step)) return {"index check", c->op_type};
  const auto& g = std::get<GatherStep>(step);
  return {"gather", absl::StrCat(g.row_bytes, "-byte rows", g.table_file ? ", read from the weights file" : "")};
}

// One pass over the indices (small next to the data they address), before
// the kernel that reads through them.
absl::Status RunStep(const IndexCheckStep& step, void* const* buffers, const int64_t* slots) {
  const int64_t count = slots[step.count_slot];
  const size_t n = step.dim_slots.size();
  for (int64_t i = 0; i < count; ++i) {
    const int64_t id = step.indices_i32 ? static_cast<const int32_t*>(buffers[step.indices])[i]
                                        : static_cast<const int64_t*>(buffers[step.indices])[i];
    const int64_t dim = slots[step.dim_slots[i % n]];
    if (id < -dim || id >= dim) {
      return absl::InvalidArgumentError(absl::StrCat("node '", step.node_name, "' (", step.op_type, "): index ", id,
                                                     " at position ", i, " is out of range for axis ",
                                                     step.axes[i % n], " of size ", dim, " (valid: ", -dim, " to ",
                                                     dim - 1, ")"));
    }
  }
  return absl::OkStatus();
}

// The request's bindings, checked against the evaluated sizes: per pair
// the capacity (-1 unbound), per output whether it is bound. An error names
// the output and what is wrong; nothing has run yet.
absl::Status ResolveCaches(const Program::Impl& p, absl::Span<const TensorView> inputs,
                           absl::Span<const BoundCache> caches, const int64_t* slots, PairCapacities& capacity,
                           std::vector<const BoundCache*>& bound_output) {
  capacity.assign(p.kv_pairs.size(), -1);
  bound_output.assign(p.outputs.size(), nullptr);
  if (!caches.empty() && p.device != nullptr) {
    return absl::UnimplementedError("KV cache binding: a CUDA program does not bind caches");
  }
  for (const BoundCache& cache : caches) {
    auto out = std::find_if(p.outputs.begin(), p.outputs.end(),
                            [&](const OutputSpec& o) { return o.name == cache.output; });
    if (out == p.outputs.end()) {
      return absl::InvalidArgumentError(absl::StrCat("KV cache binding: the model has no output '", cache.output, "'"));
    }
    const int output = static_cast<int>(out - p.outputs.begin());
    auto pair = std::find_if(p.kv_pairs.begin(), p.kv_pairs.end(), [&](const KvPair& k) { return k.output == output; });
    if (pair == p.kv_pairs.end()) {
      return absl::InvalidArgumentError(absl::StrCat("KV cache binding: output '", cache.output,
                                                     "' is not a KV cache (no Concat of a graph input makes it)"));
    }
    if (!pair->why_not.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("KV cache binding: output '", cache.output, "' cannot be bound: ", pair->why_not));
    }
    if (bound_output[output] != nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("KV cache binding: output '", cache.output, "' is bound twice"));
    }
    // The present's dims with the capacity on the positions axis.
    int64_t elements = 1, positions = 0;
    for (size_t k = 0; k < out->shape_slots.size(); ++k) {
      const int64_t d = slots[out->shape_slots[k]];
      if (static_cast<int64_t>(k) == pair->axis) positions = d;
      elements *= static_cast<int64_t>(k) == pair->axis ? cache.capacity : d;
    }
    if (cache.capacity < positions) {
      return absl::OutOfRangeError(absl::StrCat("KV cache binding: output '", cache.output, "' needs ", positions,
                                                " positions but its buffer has capacity ", cache.capacity));
    }
    if (static_cast<int64_t>(cache.buffer.size()) < elements) {
      return absl::InvalidArgumentError(absl::StrCat("KV cache binding: output '", cache.output, "' needs a buffer of ",
                                                     elements, " floats for capacity ", cache.capacity, ", got ",
                                                     cache.buffer.size()));
    }
    const TensorView& past = inputs[pair->input];
    if (past.shape[pair->axis] > 0 && past.data != cache.buffer.data()) {
      return absl::InvalidArgumentError(absl::StrCat("KV cache binding: input '", p.binder.inputs()[pair->input].name,
                                                     "' must be a view of the buffer bound to '", cache.output,
                                                     "' (its first ", past.shape[pair->axis], " positions)"));
    }
    for (const BoundCache* other : bound_output) {
      if (other == nullptr) continue;
      const float* a = cache.buffer.data();
      const float* b = other->buffer.data();
      if (a < b + other->buffer.size() && b < a + cache.buffer.size()) {
        return absl::InvalidArgumentError(absl::StrCat("KV cache binding: the buffers of '", cache.output, "' and '",
                                                       other->output, "' overlap"));
      }
    }
    bound_output[output] = &cache;
    capacity[pair - p.kv_pairs.begin()] = cache.capacity;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<Tensor>> Program::Run(absl::Span<const TensorView> inputs, ExecutionContext& ctx,
                                                 absl::Span<const BoundCache> caches) const {
  const Impl& p = *impl_;
  const size_t bound = p.binder.symbols().size();
  ctx.slots_.resize(p.tape->num_slots());
  // 1. Bind symbols (InputBinder: count, dtype, rank, constant dims, ranges).
  if (absl::Status s = p.binder.Bind(inputs, absl::MakeSpan(ctx.slots_.data(), bound)); !s.ok()) return s;
  // 2. Guards recorded by specialized compile decisions.
  if (p.guards.has_value()) {
    GuardVerdict verdict = p.guards->Evaluate(absl::MakeConstSpan(ctx.slots_.data(), bound));
    if (!verdict.pass) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the request violates a guard of the compiled program: ",
          verdict.failed_atom < p.guard_texts.size() ? p.guard_texts[verdict.failed_atom] : "(bad slot count)"));
    }
  }
  return Execute(inputs, ctx, caches);
}

absl::StatusOr<std::vector<Tensor>> Program::RunBound(absl::Span<const TensorView> inputs,
                                                      absl::Span<const int64_t> symbol_values,
                                                      ExecutionContext& ctx,
                                                      absl::Span<const BoundCache> caches) const {
  const Impl& p = *impl_;
  if (inputs.size() != p.binder.inputs().size() || symbol_values.size() != p.binder.symbols().size()) {
    return absl::InternalError(absl::StrCat("RunBound: ", inputs.size(), " inputs and ", symbol_values.size(),
                                            " symbol values for a program of ", p.binder.inputs().size(),
                                            " inputs and ", p.binder.symbols().size(), " symbols"));
  }
  ctx.slots_.resize(p.tape->num_slots());
  std::copy(symbol_values.begin(), symbol_values.end(), ctx.slots_.begin());
  return Execute(inputs, ctx, caches);
}

std::vector<std::string> Program::bound_symbols() const { return impl_->binder.symbol_names(); }

absl::StatusOr<std::vector<Tensor>> Program::Execute(absl::Span<const TensorView> inputs, ExecutionContext& ctx,
                                                     absl::Span<const BoundCache> caches) const {
  const Impl& p = *impl_;
  int64_t* slots = ctx.slots_.data();
  if (p.device == nullptr) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i].space != MemorySpace::kHost) {
        return absl::InvalidArgumentError(absl::StrCat("input '", p.binder.inputs()[i].name,
                                                       "' is in CUDA device memory, but this program runs on the CPU"));
      }
    }
  }
  // 3. Every size the steps need; then the remaining input dims must agree.
  if (absl::Status s = p.tape->Evaluate(absl::MakeSpan(ctx.slots_)); !s.ok()) return s;
  for (const InputDimCheck& c : p.input_checks) {
    const int64_t given = inputs[c.input].shape[c.dim];
    if (slots[c.slot] != given) {
      const std::string value = absl::StrCat(slots[c.slot]);
      return absl::InvalidArgumentError(absl::StrCat("input '", p.binder.inputs()[c.input].name, "' dim ", c.dim,
                                                     " is ", given, ", but the model requires ",
                                                     c.expected == value ? value : absl::StrCat(c.expected, " = ", value)));
    }
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const bool empty = std::find(inputs[i].shape.begin(), inputs[i].shape.end(), 0) != inputs[i].shape.end();
    if (!empty && inputs[i].data == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("input '", p.binder.inputs()[i].name, "' has no data"));
    }
  }
  PairCapacities capacity;
  std::vector<const BoundCache*> bound_output;
  if (absl::Status s = ResolveCaches(p, inputs, caches, slots, capacity, bound_output); !s.ok()) return s;
  // On a device the steps, storage and copies are the device program's.
  if (p.device != nullptr) return p.device->Run(p, inputs, ctx.slots_, ctx);
  // 4. Storage: arena, outputs, then every buffer's address.
  int64_t arena_bytes = slots[p.arena_slot];
  std::byte* arena = ctx.Arena(static_cast<size_t>(std::max<int64_t>(arena_bytes, 1)));
  if (arena == nullptr) {
    return absl::ResourceExhaustedError(absl::StrCat("cannot allocate a ", arena_bytes, "-byte arena"));
  }
  // Every byte of every output is written below (by a step in place, or
  // copied in step 6), so recycled storage needs no zeroing.
  std::vector<Tensor> outputs;
  outputs.reserve(p.outputs.size());
  std::vector<int64_t> shape;
  size_t output_bytes = 0;
  int64_t written = 0;  // bytes this request writes into its outputs and bound caches
  for (size_t i = 0; i < p.outputs.size(); ++i) {
    const OutputSpec& spec = p.outputs[i];
    shape.clear();
    if (bound_output[i] != nullptr) {  // in the caller's buffer: an empty placeholder
      outputs.push_back(Tensor::FromVector(spec.dtype, {0}, std::vector<float>{}));
      continue;
    }
    for (int slot : spec.shape_slots) shape.push_back(slots[slot]);
    absl::StatusOr<Tensor> t =
        Tensor::Uninitialized(spec.dtype, shape, [&](size_t bytes) { return p.output_pool->Get(bytes); });
    if (!t.ok()) return absl::Status(t.status().code(), absl::StrCat("output '", spec.name, "': ", t.status().message()));
    output_bytes += t->byte_size();
    outputs.push_back(*std::move(t));
  }
  written += static_cast<int64_t>(output_bytes);
  // A bound present gets only its new positions.
  for (const KvPair& pair : p.kv_pairs) {
    if (capacity[&pair - p.kv_pairs.data()] < 0) continue;
    int64_t rows = 1;
    const OutputSpec& spec = p.outputs[pair.output];
    for (int64_t k = 0; k < pair.axis; ++k) rows *= slots[spec.shape_slots[k]];
    const int64_t fresh = slots[spec.shape_slots[pair.axis]] - inputs[pair.input].shape[pair.axis];
    written += rows * fresh * slots[pair.position_slot] * static_cast<int64_t>(sizeof(float));
  }
  ctx.output_bytes_written_ = written;
  p.output_pool->NoteRequestBytes(output_bytes);
  ctx.buffers_.resize(p.buffers.size());
  for (size_t b = 0; b < p.buffers.size(); ++b) {
    const BufferSource& src = p.buffers[b];
    switch (src.kind) {
      case BufferSource::Kind::kInput: ctx.buffers_[b] = const_cast<void*>(inputs[src.index].data); break;
      case BufferSource::Kind::kConstant: ctx.buffers_[b] = const_cast<void*>(src.constant); break;
      case BufferSource::Kind::kArena: ctx.buffers_[b] = arena + slots[src.offset_slot]; break;
      case BufferSource::Kind::kOutput:
        ctx.buffers_[b] = bound_output[src.index] != nullptr ? bound_output[src.index]->buffer.data()
                                                             : outputs[src.index].mutable_raw();
        break;
    }
  }
  // 5. The steps, in plan order.
  ctx.call_buffers_.resize(p.max_call_buffers);
  ctx.call_dims_.resize(p.max_call_dims);
  void* const* buffers = ctx.buffers_.data();
  StepProfile* const profile = ctx.step_profile_.get();
  const auto request_start = profile != nullptr ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  for (const Step& step : p.steps) {
    if (Skipped(step, capacity)) continue;
    const auto step_start = profile != nullptr ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    absl::Status s;
    if (const auto* k = std::get_if<KernelStep>(&step)) {
      s = RunStep(*k, buffers, slots, capacity, ctx.call_buffers_, ctx.call_dims_);
    } else if (const auto* m = std::get_if<MatmulStep>(&step)) {
      s = RunStep(*m, buffers, slots, p.kv_pairs, capacity, ctx.skinny_gemm_calls_);
    } else if (const auto* c = std::get_if<IndexCheckStep>(&step)) {
      s = RunStep(*c, buffers, slots);
    } else if (const auto* a = std::get_if<AttentionStep>(&step)) {
      s = RunStep(*a, buffers, slots, capacity);
    } else {
      s = RunStep(std::get<GatherStep>(step), buffers, slots);
    }
    if (!s.ok()) return s;
    if (profile != nullptr) {
      const auto [kind, label] = ProfileLabel(step, slots);
      profile->Add(kind, label, NanosecondsSince(step_start));
    }
  }
  // 6. Outputs that live elsewhere (an input, a constant, another output).
  for (size_t i = 0; i < p.outputs.size(); ++i) {
    if (p.outputs[i].in_place || bound_output[i] != nullptr) continue;
    if (outputs[i].byte_size() > 0) {
      std::memcpy(outputs[i].mutable_raw(), buffers[p.outputs[i].buffer], outputs[i].byte_size());
    }
  }
  if (profile != nullptr) profile->AddRequest(NanosecondsSince(request_start));
  return outputs;
}

std::string Program::device_report() const { return impl_->device ? impl_->device->Report() : ""; }
const CudaGraphPlan* Program::cuda_graph_plan() const {
  return impl_->device ? &impl_->device->graph_plan() : nullptr;
}
std::optional<DeviceStats> Program::device_stats() const {
  if (impl_->device == nullptr) return std::nullopt;
  return impl_->device->stats();
}

}  // namespace shapeshift::runtime
