// DeviceProgram::Run: placement, the parameter block, copies at the edges,
// the steps or the bucket's graph segments (see device_program.h and
// cuda_graphs.h).
#include <algorithm>
#include <cstring>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "codegen/cuda/gather_kernel.h"
#include "codegen/cuda/index_check_kernel.h"
#include "runtime/device/device_program.h"
#include "runtime/device/device_state.h"
#include "runtime/program_impl.h"

namespace shapeshift::runtime {

namespace cuda = codegen::cuda;

class DeviceRun {
 public:
  DeviceRun(const DeviceProgram& program, const Program::Impl& impl, absl::Span<const TensorView> inputs,
            absl::Span<const int64_t> slots, ExecutionContext& ctx)
      : dp_(program), impl_(impl), inputs_(inputs), actual_(slots), ctx_(ctx) {}

  absl::StatusOr<std::vector<Tensor>> Execute();

 private:
  using Step = DeviceProgram::Step;

  absl::StatusOr<DeviceState*> State();
  // Which graph key serves this request; false: run directly.
  bool ChooseGraph(DeviceState& state);
  absl::Status Place(DeviceState& state);
  void FillParameters(DeviceState& state);
  absl::Status CopyInputs(DeviceState& state);
  // Enqueues step `i`; `graph` selects the placement sizes (grids and
  // graph-safe GEMM shapes) instead of the actual ones.
  absl::Status Enqueue(DeviceState& state, size_t i, bool graph);
  absl::Status RunGraph(DeviceState& state);
  absl::StatusOr<std::vector<Tensor>> CopyOutputs(DeviceState& state);
  // Element `position` of index buffer `buffer` (after the stream is
  // synchronized), for an error message: read on the host when the caller
  // passed it there, else copied back from the device.
  absl::StatusOr<int64_t> IndexAt(DeviceState& state, int buffer, bool i32, int64_t position);

  // An attention's operands (device addresses), sizes and strides, actual
  // or (graph) placed.
  codegen::AttentionArgs ArgsOf(const DeviceProgram::AttentionStep& a, bool placed) const;

  int64_t Placed(int slot) const { return placement_[slot]; }
  int64_t Actual(int slot) const { return actual_[slot]; }

  const DeviceProgram& dp_;
  const Program::Impl& impl_;
  absl::Span<const TensorView> inputs_;
  absl::Span<const int64_t> actual_;
  ExecutionContext& ctx_;
  absl::Span<const int64_t> placement_;   // actual_, or the bucket's upper bound
  std::vector<cuda::DevicePtr> address_;  // per Impl::buffers entry
  std::vector<int64_t> input_offset_, output_offset_;
  bool graph_ = false;
  Bucket bucket_;
  std::string key_;
};

absl::StatusOr<DeviceState*> DeviceRun::State() {
  auto* state = dynamic_cast<DeviceState*>(ctx_.device_state());
  if (state == nullptr || state->owner != dp_.id_) {
    auto fresh = std::make_unique<DeviceState>(dp_.api_, dp_.id_);
    if (absl::Status s = fresh->Init(dp_.param_words_, dp_.api_->gemm_workspace_bytes()); !s.ok()) return s;
    state = fresh.get();
    ctx_.set_device_state(std::move(fresh));
  }
  return state;
}

bool DeviceRun::ChooseGraph(DeviceState& state) {
  const CudaGraphPlan& plan = dp_.graph_plan_;
  if (!plan.enabled) return false;
  int64_t value = actual_[plan.symbol_slot];
  plan.buckets->Observe(plan.symbol_slot, value);
  bucket_ = plan.BucketOf(value);
  key_ = absl::StrCat(bucket_.lo, "..", bucket_.hi);
  for (size_t s = 0; s < impl_.binder.symbols().size(); ++s) {
    if (static_cast<int>(s) == plan.symbol_slot) continue;
    absl::StrAppend(&key_, " ", impl_.binder.symbols()[s].name, "=", actual_[s]);
  }
  int64_t seen = ++state.sightings[key_];
  return state.graphs.contains(key_) || seen >= plan.capture_after;
}

absl::Status DeviceRun::Place(DeviceState& state) {
  placement_ = actual_;
  if (graph_) {
    state.placement.assign(actual_.begin(), actual_.end());
    state.placement[dp_.graph_plan_.symbol_slot] = bucket_.hi;
    if (absl::Status s = impl_.tape->Evaluate(absl::MakeSpan(state.placement)); !s.ok()) return s;
    placement_ = state.placement;
  }
  // [plan arena | staged inputs | outputs], each region 256-byte aligned.
  auto align = [](int64_t b) { return (b + 255) / 256 * 256; };
  int64_t end = align(std::max<int64_t>(Placed(impl_.arena_slot), 0));
  for (size_t i = 0; i < impl_.binder.inputs().size(); ++i) {
    input_offset_.push_back(end);
    end += align(Placed(dp_.input_elements_slot_[i]) * static_cast<int64_t>(DTypeSize(impl_.binder.inputs()[i].dtype)));
  }
  for (const OutputSpec& out : impl_.outputs) {
    int64_t elements = 1;
    for (int slot : out.shape_slots) elements *= Placed(slot);
    output_offset_.push_back(end);
    end += align(elements * static_cast<int64_t>(DTypeSize(out.dtype)));
  }
  absl::StatusOr<int64_t> dropped = state.EnsureArena(static_cast<size_t>(std::max<int64_t>(end, 1)));
  if (!dropped.ok()) {
    return absl::Status(dropped.status().code(),
                        absl::StrCat("device arena of ", end, " bytes: ", dropped.status().message()));
  }
  dp_.graph_invalidations_ += *dropped;
  address_.resize(impl_.buffers.size());
  for (size_t b = 0; b < impl_.buffers.size(); ++b) {
    const BufferSource& src = impl_.buffers[b];
    switch (src.kind) {
      case BufferSource::Kind::kInput: {
        const TensorView& in = inputs_[src.index];
        // A caller's device buffer is used in place, except by a graph (its
        // address is frozen in the graph's GEMMs).
        address_[b] = in.space == MemorySpace::kCuda && !graph_ ? reinterpret_cast<cuda::DevicePtr>(in.data)
                                                                : state.arena + input_offset_[src.index];
        break;
      }
      case BufferSource::Kind::kConstant: address_[b] = dp_.constants_ + dp_.constant_offset_[b]; break;
      case BufferSource::Kind::kArena: address_[b] = state.arena + Placed(src.offset_slot); break;
      case BufferSource::Kind::kOutput: address_[b] = state.arena + output_offset_[src.index]; break;
    }
  }
  return absl::OkStatus();
}

codegen::AttentionArgs DeviceRun::ArgsOf(const DeviceProgram::AttentionStep& a, bool placed) const {
  auto size = [&](int slot) { return placed ? Placed(slot) : Actual(slot); };
  codegen::AttentionArgs args = a.fixed;
  args.batch = size(a.batch);
  args.heads = size(a.heads);
  args.kv_heads = size(a.kv_heads);
  args.q_len = size(a.q_len);
  args.kv_len = size(a.kv_len);
  for (auto [buffer, slots, operand] :
       {std::tuple{a.q, &a.q_strides, &args.q}, std::tuple{a.k, &a.k_strides, &args.k},
        std::tuple{a.v, &a.v_strides, &args.v}, std::tuple{a.out, &a.out_strides, &args.out},
        std::tuple{a.mask, &a.mask_strides, &args.mask}}) {
    if (buffer < 0) continue;  // no mask
    operand->data = reinterpret_cast<float*>(address_[buffer]);
    operand->batch_stride = size((*slots)[0]);
    operand->head_stride = size((*slots)[1]);
    operand->row_stride = size((*slots)[2]);
  }
  // Offsets are constants (a slice's start: passes/internal/attention_groups.cc), placed or not.
  args.q.data += Actual(a.q_offset);
  args.k.data += Actual(a.k_offset);
  args.v.data += Actual(a.v_offset);
  return args;
}

void DeviceRun::FillParameters(DeviceState& state) {
  uint64_t* words = state.host_params.data();
  for (const Step& step : dp_.steps_) {
    if (const auto* k = std::get_if<DeviceProgram::KernelStep>(&step)) {
      uint64_t* w = words + k->params;
      for (int b : k->buffers) *w++ = address_[b];
      for (int slot : k->dim_slots) *w++ = static_cast<uint64_t>(Actual(slot));
    } else if (const auto* g = std::get_if<DeviceProgram::GatherStep>(&step)) {
      uint64_t* w = words + g->params;
      w[0] = address_[g->table];
      w[1] = address_[g->indices];
      w[2] = address_[g->output];
      w[3] = state.params + 8 * static_cast<uint64_t>(dp_.status_base_ + g->status_word);
      w[4] = static_cast<uint64_t>(Actual(g->count_slot));
      w[5] = static_cast<uint64_t>(g->row_bytes);
      w[6] = static_cast<uint64_t>(g->table_rows);
      w[7] = g->indices_i32 ? 1 : 0;
    } else if (const auto* c = std::get_if<DeviceProgram::IndexCheckStep>(&step)) {
      uint64_t* w = words + c->params;
      *w++ = address_[c->indices];
      *w++ = state.params + 8 * static_cast<uint64_t>(dp_.status_base_ + c->status_word);
      *w++ = static_cast<uint64_t>(Actual(c->count_slot));
      *w++ = c->indices_i32 ? 1 : 0;
      *w++ = c->dim_slots.size();
      for (int slot : c->dim_slots) *w++ = static_cast<uint64_t>(Actual(slot));
    } else if (const auto* a = std::get_if<DeviceProgram::AttentionStep>(&step)) {
      uint64_t* w = words + a->params;
      const codegen::AttentionArgs args = ArgsOf(*a, /*placed=*/false);
      for (float* buffer : cuda::AttentionBuffers(args)) *w++ = reinterpret_cast<uint64_t>(buffer);
      for (long long word : cuda::AttentionDimWords(args)) *w++ = static_cast<uint64_t>(word);
    }
  }
  for (int i = 0; i < dp_.status_words_; ++i) words[dp_.status_base_ + i] = cuda::kGatherNoBadIndex;
}

absl::Status DeviceRun::CopyInputs(DeviceState& state) {
  cuda::DeviceApi& api = *dp_.api_;
  if (absl::Status s = api.CopyToDevice(state.params, state.host_params.data(), state.host_params.size() * 8,
                                        state.stream);
      !s.ok()) {
    return s;
  }
  ++dp_.h2d_;
  for (size_t b = 0; b < impl_.buffers.size(); ++b) {
    const BufferSource& src = impl_.buffers[b];
    if (src.kind != BufferSource::Kind::kInput) continue;
    const TensorView& in = inputs_[src.index];
    int64_t elements = 1;
    for (int64_t d : in.shape) elements *= d;
    size_t bytes = static_cast<size_t>(elements) * DTypeSize(in.dtype);
    if (bytes == 0) continue;
    cuda::DevicePtr dst = state.arena + input_offset_[src.index];
    if (in.space == MemorySpace::kCuda) {
      if (address_[b] == dst) {  // staged for a graph: device to device
        if (absl::Status s = api.CopyOnDevice(dst, reinterpret_cast<cuda::DevicePtr>(in.data), bytes, state.stream);
            !s.ok()) {
          return s;
        }
      }
      continue;
    }
    if (absl::Status s = api.CopyToDevice(dst, in.data, bytes, state.stream); !s.ok()) return s;
    ++dp_.h2d_;
  }
  return absl::OkStatus();
}

absl::Status DeviceRun::Enqueue(DeviceState& state, size_t i, bool graph) {
  cuda::DeviceApi& api = *dp_.api_;
  const Step& step = dp_.steps_[i];
  auto size = [&](int slot) { return graph ? Placed(slot) : Actual(slot); };
  if (const auto* k = std::get_if<DeviceProgram::KernelStep>(&step)) {
    cuda::LaunchShape shape = cuda::ChooseLaunch(dp_.sources_[k->kernel].mapping, size(k->work_slot), size(k->row_slot));
    cuda::DevicePtr params = state.params + 8 * static_cast<uint64_t>(k->params);
    return api.Launch(*dp_.module_, dp_.functions_[k->kernel], shape, state.stream, params,
                      params + 8 * static_cast<uint64_t>(k->buffers.size()));
  }
  if (const auto* g = std::get_if<DeviceProgram::GemmStep>(&step)) {
    bool padded = graph && g->graph_safe;
    auto dim = [&](int slot) { return padded ? Placed(slot) : Actual(slot); };
    cuda::GemmShape shape{dim(g->batch), dim(g->m), dim(g->k), dim(g->n)};
    cuda::GemmOperands ops;
    ops.a = address_[g->a];
    ops.b = address_[g->b];
    ops.bias = g->bias >= 0 ? address_[g->bias] : 0;
    ops.residual = g->residual >= 0 ? address_[g->residual] : 0;
    ops.d = address_[g->c];
    return g->gemm->Run(shape, ops, state.stream, state.workspace, state.workspace_bytes);
  }
  if (const auto* c = std::get_if<DeviceProgram::IndexCheckStep>(&step)) {
    cuda::DevicePtr params = state.params + 8 * static_cast<uint64_t>(c->params);
    return api.Launch(*dp_.module_, dp_.check_function_,
                      cuda::ChooseLaunch(cuda::ThreadMapping::kFlat, size(c->count_slot), 1), state.stream, params,
                      params + 16);
  }
  if (const auto* a = std::get_if<DeviceProgram::AttentionStep>(&step)) {
    // The request's sizes, checked as the CPU core checks them; the grid
    // from the placed ones (grid-stride covers the actual items).
    if (absl::Status s = cuda::CheckCudaAttention(ArgsOf(*a, /*placed=*/false)); !s.ok()) {
      return absl::Status(s.code(), absl::StrCat("attention at node '", a->node_name, "': ", s.message()));
    }
    cuda::DevicePtr params = state.params + 8 * static_cast<uint64_t>(a->params);
    const int64_t items = cuda::AttentionItems(ArgsOf(*a, graph));
    return api.Launch(*dp_.module_, dp_.attention_function_,
                      cuda::ChooseLaunch(cuda::ThreadMapping::kBlockPerRow, items, cuda::kAttentionThreads),
                      state.stream, params, params + 8 * 5);
  }
  const auto& g = std::get<DeviceProgram::GatherStep>(step);
  int64_t work = size(g.count_slot) * cuda::GatherWordsPerRow(g.row_bytes);
  cuda::DevicePtr params = state.params + 8 * static_cast<uint64_t>(g.params);
  return api.Launch(*dp_.module_, dp_.gather_function_, cuda::ChooseLaunch(cuda::ThreadMapping::kFlat, work, 1),
                    state.stream, params, params + 32);
}

absl::Status DeviceRun::RunGraph(DeviceState& state) {
  cuda::DeviceApi& api = *dp_.api_;
  const CudaGraphPlan& plan = dp_.graph_plan_;
  auto it = state.graphs.find(key_);
  if (it == state.graphs.end()) {
    // First, this request runs directly with the graph's sizes (padded
    // GEMMs included), so every cuBLASLt shape and kernel has run once —
    // nothing initializes lazily inside a capture — and the request has its
    // result. Then the same sequence is captured (recorded, not run):
    // maximal runs of graph-safe steps become graphs, the other GEMMs run
    // directly between them.
    for (size_t i = 0; i < dp_.steps_.size(); ++i) {
      const auto* gemm = std::get_if<DeviceProgram::GemmStep>(&dp_.steps_[i]);
      if (absl::Status s = Enqueue(state, i, /*graph=*/gemm == nullptr || gemm->graph_safe); !s.ok()) return s;
    }
    GraphEntry entry;
    absl::StatusOr<GuardProgram> guards = CompileBucketGuards(plan, bucket_);
    if (!guards.ok()) return guards.status();
    entry.guards = *std::move(guards);
    bool capturing = false;
    int64_t nodes = 0, direct = 0;
    auto end_capture = [&]() -> absl::Status {
      if (!capturing) return absl::OkStatus();
      capturing = false;
      absl::StatusOr<std::unique_ptr<cuda::DeviceGraph>> g = api.EndCapture(state.stream);
      if (!g.ok()) return g.status();
      nodes += (*g)->nodes();
      entry.segments.push_back({*std::move(g), -1});
      return absl::OkStatus();
    };
    for (size_t i = 0; i < dp_.steps_.size(); ++i) {
      const auto* gemm = std::get_if<DeviceProgram::GemmStep>(&dp_.steps_[i]);
      if (gemm != nullptr && !gemm->graph_safe) {
        if (absl::Status s = end_capture(); !s.ok()) return s;
        entry.segments.push_back({nullptr, static_cast<int>(i)});
        ++direct;
        continue;
      }
      if (!capturing) {
        if (absl::Status s = api.BeginCapture(state.stream); !s.ok()) return s;
        capturing = true;
      }
      if (absl::Status s = Enqueue(state, i, /*graph=*/true); !s.ok()) {
        (void)end_capture();
        return s;
      }
    }
    if (absl::Status s = end_capture(); !s.ok()) return s;
    ++dp_.graph_captures_;
    {
      absl::MutexLock lock(&dp_.events_mu_);
      dp_.capture_events_.push_back(absl::StrCat("captured ", plan.Describe(bucket_), " (key ", key_, ") at ",
                                                 plan.symbol, "=", actual_[plan.symbol_slot], ": ",
                                                 entry.segments.size() - direct, " graphs, ", nodes, " nodes, ", direct,
                                                 " GEMMs between them"));
    }
    state.graphs.emplace(key_, std::move(entry));
    return absl::OkStatus();
  }
  ++dp_.graph_replays_;
  GraphEntry& entry = it->second;
  // Belt and braces: the bucket's guard atoms hold for this request.
  GuardVerdict verdict = entry.guards.Evaluate(actual_.subspan(0, impl_.binder.symbols().size()));
  if (!verdict.pass) {
    return absl::InternalError(absl::StrCat("CUDA graph for key ", key_, " chosen for a request outside ",
                                            plan.Describe(bucket_)));
  }
  ++entry.replays;
  for (const GraphSegment& segment : entry.segments) {
    absl::Status s = segment.graph ? api.LaunchGraph(*segment.graph, state.stream)
                                   : Enqueue(state, static_cast<size_t>(segment.direct_step), /*graph=*/false);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> DeviceRun::IndexAt(DeviceState& state, int buffer, bool i32, int64_t position) {
  const size_t size = i32 ? 4 : 8;
  const BufferSource& src = impl_.buffers[buffer];
  int64_t wide = 0;
  int32_t narrow = 0;
  void* dst = i32 ? static_cast<void*>(&narrow) : static_cast<void*>(&wide);
  if (src.kind == BufferSource::Kind::kInput && inputs_[src.index].space == MemorySpace::kHost) {
    std::memcpy(dst, static_cast<const char*>(inputs_[src.index].data) + position * size, size);
  } else {
    cuda::DeviceApi& api = *dp_.api_;
    absl::Status s = api.CopyToHost(dst, address_[buffer] + static_cast<uint64_t>(position) * size, size, state.stream);
    if (s.ok()) s = api.Synchronize(state.stream);
    if (!s.ok()) return s;
    ++dp_.d2h_;
  }
  return i32 ? int64_t{narrow} : wide;
}

absl::StatusOr<std::vector<Tensor>> DeviceRun::CopyOutputs(DeviceState& state) {
  cuda::DeviceApi& api = *dp_.api_;
  std::vector<Tensor> outputs;
  outputs.reserve(impl_.outputs.size());
  std::vector<int64_t> shape;
  for (const OutputSpec& spec : impl_.outputs) {
    shape.clear();
    for (int slot : spec.shape_slots) shape.push_back(Actual(slot));
    absl::StatusOr<Tensor> t =
        Tensor::Uninitialized(spec.dtype, shape, [&](size_t bytes) { return impl_.output_pool->Get(bytes); });
    if (!t.ok()) return absl::Status(t.status().code(), absl::StrCat("output '", spec.name, "': ", t.status().message()));
    if (t->byte_size() > 0) {
      if (absl::Status s = api.CopyToHost(t->mutable_raw(), address_[spec.buffer], t->byte_size(), state.stream);
          !s.ok()) {
        return s;
      }
      ++dp_.d2h_;
    }
    outputs.push_back(*std::move(t));
  }
  state.status.assign(dp_.status_words_, cuda::kGatherNoBadIndex);
  if (dp_.status_words_ > 0) {
    if (absl::Status s = api.CopyToHost(state.status.data(), state.params + 8 * static_cast<uint64_t>(dp_.status_base_),
                                        state.status.size() * 8, state.stream);
        !s.ok()) {
      return s;
    }
    ++dp_.d2h_;
  }
  if (absl::Status s = api.Synchronize(state.stream); !s.ok()) return s;
  // The first step in plan order that found a bad index fails the request
  // (as the CPU's checks stop at the first); the steps after it read
  // clamped indices, so they stayed inside their buffers.
  for (const Step& step : dp_.steps_) {
    if (const auto* c = std::get_if<DeviceProgram::IndexCheckStep>(&step)) {
      if (state.status[c->status_word] == cuda::kIndexCheckPassed) continue;
      const int64_t r = state.status[c->status_word];
      const size_t n = c->dim_slots.size();
      const int64_t dim = Actual(c->dim_slots[r % n]);
      absl::StatusOr<int64_t> id = IndexAt(state, c->indices, c->indices_i32, r);
      if (!id.ok()) return id.status();
      return absl::InvalidArgumentError(absl::StrCat("node '", c->node_name, "' (", c->op_type, "): index ", *id,
                                                     " at position ", r, " is out of range for axis ", c->axes[r % n],
                                                     " of size ", dim, " (valid: ", -dim, " to ", dim - 1, ")"));
    }
    const auto* g = std::get_if<DeviceProgram::GatherStep>(&step);
    if (g == nullptr || state.status[g->status_word] == cuda::kGatherNoBadIndex) continue;
    const int64_t r = state.status[g->status_word];
    absl::StatusOr<int64_t> id = IndexAt(state, g->indices, g->indices_i32, r);
    if (!id.ok()) return id.status();
    return absl::InvalidArgumentError(absl::StrCat("node '", g->node_name, "': index ", *id, " at position ", r,
                                                   " is outside the table's ", g->table_rows, " rows"));
  }
  return outputs;
}

absl::StatusOr<std::vector<Tensor>> DeviceRun::Execute() {
  ++dp_.requests_;
  absl::StatusOr<DeviceState*> state_or = State();
  if (!state_or.ok()) return state_or.status();
  DeviceState& state = **state_or;
  graph_ = ChooseGraph(state);
  if (absl::Status s = Place(state); !s.ok()) return s;
  FillParameters(state);
  if (absl::Status s = CopyInputs(state); !s.ok()) return s;
  if (graph_) {
    if (absl::Status s = RunGraph(state); !s.ok()) return s;
  } else {
    ++dp_.direct_runs_;
    for (size_t i = 0; i < dp_.steps_.size(); ++i) {
      if (absl::Status s = Enqueue(state, i, /*graph=*/false); !s.ok()) return s;
    }
  }
  return CopyOutputs(state);
}

absl::StatusOr<std::vector<Tensor>> DeviceProgram::Run(const Program::Impl& impl, absl::Span<const TensorView> inputs,
                                                       absl::Span<const int64_t> slots, ExecutionContext& ctx) const {
  return DeviceRun(*this, impl, inputs, slots, ctx).Execute();
}

}  // namespace shapeshift::runtime
