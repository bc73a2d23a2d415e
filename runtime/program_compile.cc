// Program::Compile: passes → lowering → JIT/primitives → per-request recipe.
#include <omp.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "codegen/cpu/parallel_run.h"
#include "codegen/lower/lower_group.h"
#include "graph/constant_spill.h"
#include "graph/op_table.h"
#include "passes/pipeline.h"
#include "runtime/pack_queue.h"
#include "runtime/packed_weight_cache.h"
#include "runtime/program_impl.h"
#include "runtime/tuning/gemm_tuning.h"

namespace shapeshift::runtime {
namespace {

using codegen::lower::GraphValue;
namespace cpu = codegen::cpu;
namespace lower = codegen::lower;

// An op the CPU path lowers but the op table keeps off the device (its
// lowered kernels have no faithful CUDA mapping, graph/op_table.cc CpuOnly)
// is refused for Device::kCuda before anything is emitted: the CUDA column
// is the promise, and a kernel that compiles is not proof it is right.
absl::Status CheckCudaColumn(const passes::Group& group) {
  for (const Node* n : group.nodes) {
    const OpInfo* op = FindOp(n->op_type());
    if (op != nullptr && op->cpu == Lowering::kCompiled && op->cuda == Lowering::kNone) {
      return absl::UnimplementedError(absl::StrCat("group #", group.id, ": node '", n->name(), "' (", n->op_type(),
                                                   "): op ", n->op_type(), " has no compiled CUDA lowering"));
    }
  }
  return absl::OkStatus();
}

// `count` floats of zeros to be read, without memory: a read-only anonymous
// mapping, every page of which reads as the kernel's one zero page (a vector
// of GPT-2's LM head, 154 MB, was zeroed page by page on the compiling thread
// and counted in the peak RSS, to be read once by a warm-up and freed); a
// vector where the mapping cannot be had.
class ReadOnlyZeros {
 public:
  explicit ReadOnlyZeros(int64_t count) : bytes_(static_cast<size_t>(count) * sizeof(float)) {
    void* mapped = bytes_ > 0 ? mmap(nullptr, bytes_, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) : MAP_FAILED;
    if (mapped != MAP_FAILED) {
      mapped_ = static_cast<const float*>(mapped);
    } else {
      fallback_.resize(static_cast<size_t>(count));
    }
  }
  ~ReadOnlyZeros() {
    if (mapped_ != nullptr) munmap(const_cast<float*>(mapped_), bytes_);
  }
  ReadOnlyZeros(const ReadOnlyZeros&) = delete;
  ReadOnlyZeros& operator=(const ReadOnlyZeros&) = delete;
  const float* data() const { return mapped_ != nullptr ? mapped_ : fallback_.data(); }

 private:
  size_t bytes_ = 0;
  const float* mapped_ = nullptr;
  std::vector<float> fallback_;
};

class ProgramBuilder {
 public:
  // A survey (Program::SurveyShortRequestGemms) lowers every group and
  // decides each GEMM's short-request path as a compile does, but compiles
  // no kernel, warms no primitive and packs no weight.
  ProgramBuilder(const Graph& graph, ShapeEnv& env, const passes::PipelineResult& pipeline, Program::Impl* impl,
                 ProgramStats* stats, bool survey = false)
      : graph_(graph), env_(env), pipeline_(pipeline), impl_(*impl), stats_(*stats), survey_(survey) {}

  std::vector<ShortRequestGemm> TakeShortRequestGemms() { return std::move(short_request_gemms_); }

  absl::Status Build(const CompileOptions& options) {
    if (absl::Status s = PlanInputs(); !s.ok()) return s;
    resolver_.slot = [this](SymExpr e) { return Slot(e); };
    resolver_.buffer = [this](const GraphValue* v) { return Buffer(v); };
    if (options.device == Device::kCuda) {
      if (survey_) return absl::InvalidArgumentError("only a CPU program has short-request GEMMs to survey");
      SS_ASSIGN_OR_RETURN(device, DeviceProgram::Create(options));
      impl_.device = std::move(device);
    } else {
      pack_small_row_gemms_ = options.pack_small_row_gemms;
      long_rows_on_panels_ = options.long_rows_on_panels;
      packed_weights_ = options.packed_weights;
      if (absl::Status s = PlanShortRequests(options); !s.ok()) return s;
      pack_queue_ = std::make_unique<PackQueue>(threads_);
      if (!survey_) {
        cpu::CpuBackendOptions backend_options;
        backend_options.vector_width = options.vector_width;
        backend_options.object_store = options.object_store;
        SS_ASSIGN_OR_RETURN(backend, cpu::CpuBackend::Create(backend_options));
        impl_.backend = std::move(backend);
        impl_.kernel_cache = std::make_unique<cpu::KernelCache>(impl_.backend.get());
      }
    }
    for (const passes::Group& group : pipeline_.fusion.groups) {
      if (options.device == Device::kCuda) {
        if (absl::Status s = CheckCudaColumn(group); !s.ok()) return s;
      }
      SS_ASSIGN_OR_RETURN(steps, lower::LowerGroup(group, &env_));
      SS_ASSIGN_OR_RETURN(pair, FindKvPair(group));
      current_pair_ = pair;
      current_group_ = group.id;
      for (lower::LoweredStep& step : steps) {
        absl::Status s = absl::OkStatus();
        if (!survey_) {
          s = std::visit([&](auto& call) { return AddStep(call); }, step);
        } else if (auto* matmul = std::get_if<lower::MatmulCall>(&step)) {
          s = SurveyStep(*matmul);
        }
        if (!s.ok()) return absl::Status(s.code(), absl::StrCat("group #", group.id, ": ", s.message()));
      }
    }
    if (survey_) return absl::OkStatus();
    if (absl::Status s = CompileKernels(); !s.ok()) return s;
    if (absl::Status s = FinishPacks(); !s.ok()) return s;
    if (absl::Status s = PlanOutputs(); !s.ok()) return s;
    CheckKvPairReaders();
    DeferPastCopies();
    if (absl::Status s = PlanGuards(); !s.ok()) return s;
    SS_ASSIGN_OR_RETURN(arena_slot, Slot(pipeline_.memory.arena_bytes));
    impl_.arena_slot = arena_slot;
    stats_.groups = static_cast<int64_t>(pipeline_.fusion.groups.size());
    if (impl_.device != nullptr) {
      if (absl::Status s = impl_.device->Finish(impl_, graph_, env_, pipeline_.memory, resolver_); !s.ok()) return s;
      DeviceStats device = impl_.device->stats();
      stats_.device = "cuda";
      stats_.kernels = device.kernels;
      stats_.gemms = device.gemm_configs;
      stats_.steps = kernel_calls_ + stats_.gemm_calls;
      return absl::OkStatus();
    }
    stats_.kernels = impl_.kernel_cache->compiles();
    stats_.kernels_from_store = impl_.kernel_cache->loaded_from_store();
    cpu::CpuBackendStats backend_stats = impl_.backend->stats();
    stats_.llvm_compiles = backend_stats.llvm_compiles;
    stats_.store_rejects = backend_stats.store_rejects;
    stats_.gemms = static_cast<int64_t>(impl_.matmuls.size());
    stats_.steps = static_cast<int64_t>(impl_.steps.size());
    return absl::OkStatus();
  }

 private:
  absl::StatusOr<int> Slot(SymExpr e) { return impl_.tape->Add(e); }

  // Symbols are bound by the InputBinder's rule; every other dim is checked
  // against its evaluated expression after the size tape.
  absl::Status PlanInputs() {
    SS_ASSIGN_OR_RETURN(binder, InputBinder::Create(graph_, env_, /*allow_undeclared=*/true));
    impl_.binder = std::move(binder);
    impl_.tape = std::make_unique<SymTape>(impl_.binder.symbol_names());
    for (size_t i = 0; i < graph_.inputs().size(); ++i) {
      const std::vector<SymExpr>& shape = graph_.inputs()[i]->type().shape;
      for (size_t k = 0; k < shape.size(); ++k) {
        if (impl_.binder.inputs()[i].dims[k].bind >= 0) continue;
        absl::StatusOr<int> slot = Slot(shape[k]);
        if (!slot.ok()) {
          return absl::InvalidArgumentError(absl::StrCat("input '", graph_.inputs()[i]->name(), "' dim ", k, " (",
                                                         shape[k].ToString(), "): ", slot.status().message()));
        }
        impl_.input_checks.push_back({static_cast<int>(i), static_cast<int>(k), *slot, shape[k].ToString()});
      }
    }
    return absl::OkStatus();
  }

  int OutputIndexOf(const GraphValue* root) {
    const auto& outs = graph_.outputs();
    for (size_t i = 0; i < outs.size(); ++i) {
      if (outs[i] == root) return static_cast<int>(i);
    }
    for (size_t i = 0; i < outs.size(); ++i) {
      const passes::BufferAssignment* a = pipeline_.memory.Find(outs[i]);
      if (a != nullptr && a->storage == passes::BufferStorage::kAlias && a->alias_of == root) return static_cast<int>(i);
    }
    return -1;
  }

  absl::StatusOr<int> Buffer(const GraphValue* v) {
    if (v == nullptr) return -1;
    const passes::BufferAssignment* a = pipeline_.memory.Find(v);
    const GraphValue* root = v;
    if (a != nullptr && a->storage == passes::BufferStorage::kAlias) {
      root = a->alias_of;
      a = pipeline_.memory.Find(root);
    }
    if (auto it = buffer_of_.find(root); it != buffer_of_.end()) return it->second;
    BufferSource src;
    passes::BufferStorage storage =
        a != nullptr ? a->storage
        : root->is_graph_input() ? passes::BufferStorage::kGraphInput
        : root->is_constant()    ? passes::BufferStorage::kConstant
                                 : passes::BufferStorage::kAlias;  // i.e. unplanned
    switch (storage) {
      case passes::BufferStorage::kArena: {
        src.kind = BufferSource::Kind::kArena;
        SS_ASSIGN_OR_RETURN(offset, Slot(a->offset));
        src.offset_slot = offset;
        break;
      }
      case passes::BufferStorage::kGraphInput: {
        src.kind = BufferSource::Kind::kInput;
        const auto& ins = graph_.inputs();
        src.index = static_cast<int>(std::find(ins.begin(), ins.end(), root) - ins.begin());
        if (src.index == static_cast<int>(ins.size())) {
          return absl::InternalError(absl::StrCat("value '", root->name(), "' is planned as a graph input but is not one"));
        }
        break;
      }
      case passes::BufferStorage::kConstant:
        if (!root->is_constant()) {
          return absl::InternalError(absl::StrCat("value '", root->name(), "' is planned as a constant but is not one"));
        }
        src.kind = BufferSource::Kind::kConstant;
        src.constant = root->constant()->raw();
        src.tensor = root->constant();
        src.constant_bytes = root->constant()->byte_size();
        break;
      case passes::BufferStorage::kGraphOutput:
        src.kind = BufferSource::Kind::kOutput;
        src.index = OutputIndexOf(root);
        if (src.index < 0) {
          return absl::InternalError(absl::StrCat("value '", root->name(), "' is planned as a graph output but is not one"));
        }
        break;
      case passes::BufferStorage::kAlias:
        return absl::InternalError(absl::StrCat("value '", v->name(), "' has no buffer in the memory plan"));
    }
    int index = static_cast<int>(impl_.buffers.size());
    impl_.buffers.push_back(src);
    buffer_of_[root] = index;
    return index;
  }

  // A KV pair (program_impl.h): a Concat whose first input is a graph input
  // and whose output is a graph output written in place. Returns its index
  // in Impl::kv_pairs, or -1 for any other group. Whether a caller can bind
  // it (why_not) is settled once every step is known (CheckKvPairReaders).
  absl::StatusOr<int> FindKvPair(const passes::Group& g) {
    if (g.kind != passes::GroupKind::kConcat || g.nodes.size() != 1 || g.outputs.size() != 1) return -1;
    const GraphValue* past = g.nodes[0]->input(0);
    const GraphValue* present = g.outputs[0];
    const auto& ins = graph_.inputs();
    const auto& outs = graph_.outputs();
    auto in = std::find(ins.begin(), ins.end(), past);
    auto out = std::find(outs.begin(), outs.end(), present);
    if (past == nullptr || in == ins.end() || out == outs.end()) return -1;
    KvPair pair;
    pair.input = static_cast<int>(in - ins.begin());
    pair.output = static_cast<int>(out - outs.begin());
    pair.axis = g.concat.axis;
    const std::vector<SymExpr>& shape = present->type().shape;
    const int64_t rank = static_cast<int64_t>(shape.size());
    SymExpr position = 1;
    for (int64_t k = pair.axis + 1; k < rank; ++k) position = position * shape[k];
    SS_ASSIGN_OR_RETURN(position_slot, Slot(position));
    pair.position_slot = position_slot;
    SS_ASSIGN_OR_RETURN(input_buffer, Buffer(past));
    SS_ASSIGN_OR_RETURN(output_buffer, Buffer(present));
    pair.input_buffer = input_buffer;
    pair.output_buffer = output_buffer;
    const BufferSource& src = impl_.buffers[output_buffer];
    if (impl_.device != nullptr) {
      pair.why_not = "a CUDA program does not bind caches";
    } else if (present->type().dtype != DType::kF32) {
      pair.why_not = absl::StrCat("'", present->name(), "' is ", DTypeName(present->type().dtype), ", not f32");
    } else if (rank < 3 || pair.axis != rank - 2) {
      pair.why_not = absl::StrCat("node '", g.nodes[0]->name(), "' concatenates on axis ", pair.axis, " of a rank-",
                                  rank, " tensor; a bound cache's positions are the second-to-last axis");
    } else if (src.kind != BufferSource::Kind::kOutput || src.index != pair.output) {
      pair.why_not = absl::StrCat("'", present->name(), "' is not written in place by its Concat");
    }
    impl_.kv_pairs.push_back(std::move(pair));
    present_pair_[present] = static_cast<int>(impl_.kv_pairs.size()) - 1;
    return static_cast<int>(impl_.kv_pairs.size()) - 1;
  }

  // The KV pair whose present `b` is, or is a view of that merges the
  // present's leading dims into one and keeps its last two (BLOOM reads
  // [batch*heads, positions, head_dim]): batch index k of the view is (b, h)
  // of the present, so the view's batch stride is the present's per-head
  // stride, dense or a bound buffer's capacity alike. -1 otherwise.
  int PresentPairRead(const GraphValue* b) {
    if (auto it = present_pair_.find(b); it != present_pair_.end()) return it->second;
    const Node* view = b == nullptr ? nullptr : b->producer();
    if (view == nullptr || view->op_type() != "Reshape") return -1;
    auto it = present_pair_.find(view->input(0));
    if (it == present_pair_.end()) return -1;
    const std::vector<SymExpr>& whole = view->input(0)->type().shape;
    const std::vector<SymExpr>& merged = b->type().shape;
    if (whole.size() < 3 || merged.size() != 3) return -1;
    SymExpr leading = 1;
    for (size_t d = 0; d + 2 < whole.size(); ++d) leading = leading * whole[d];
    // Proofs, not guards: a view the env cannot prove merging is read densely.
    if (!env_.CanProveEqual(merged[0], leading) || !env_.CanProveEqual(merged[1], whole[whole.size() - 2]) ||
        !env_.CanProveEqual(merged[2], whole.back())) {
      return -1;
    }
    return it->second;
  }

  // The buffers a step reads or writes; without strided_cache_reads, not
  // the presents it reads as a possibly bound, strided cache (a GEMM's B, an
  // attention's K and V with a KV pair).
  static std::vector<int> BuffersOf(const Step& step, bool strided_cache_reads) {
    if (const auto* k = std::get_if<KernelStep>(&step)) return k->buffers;
    if (const auto* m = std::get_if<MatmulStep>(&step)) {
      std::vector<int> touched = {m->a, m->bias, m->residual, m->c};
      if (strided_cache_reads || m->b_kv_pair < 0) touched.push_back(m->b);
      return touched;
    }
    if (const auto* g = std::get_if<GatherStep>(&step)) return {g->table, g->indices, g->output};
    if (const auto* c = std::get_if<IndexCheckStep>(&step)) return {c->indices};
    const auto& a = std::get<AttentionStep>(step);
    std::vector<int> touched = {a.q, a.mask, a.out};
    if (strided_cache_reads || a.k_kv_pair < 0) touched.push_back(a.k);
    if (strided_cache_reads || a.v_kv_pair < 0) touched.push_back(a.v);
    return touched;
  }

  // A bound cache is a strided buffer: only its Concat's slab copies and the
  // GEMMs that read the present as a strided B (AddStep(MatmulCall)) know
  // that. Any other step touching a pair's past or present makes the pair
  // unbindable, named in why_not.
  void CheckKvPairReaders() {
    for (size_t i = 0; i < impl_.steps.size(); ++i) {
      const std::vector<int> touched = BuffersOf(impl_.steps[i], /*strided_cache_reads=*/false);
      int own_pair = -1;
      if (const auto* k = std::get_if<KernelStep>(&impl_.steps[i])) own_pair = k->kv_pair;
      for (size_t p = 0; p < impl_.kv_pairs.size(); ++p) {
        KvPair& pair = impl_.kv_pairs[p];
        if (!pair.why_not.empty() || own_pair == static_cast<int>(p)) continue;
        for (int b : touched) {
          if (b >= 0 && (b == pair.input_buffer || b == pair.output_buffer)) {
            pair.why_not = absl::StrCat(step_origin_[i], " reads or writes it as a dense tensor");
            break;
          }
        }
      }
    }
  }

  absl::Status AddStep(const lower::KernelCall& call) {
    if (impl_.device != nullptr) {
      ++stats_.kernel_calls;
      ++kernel_calls_;
      return impl_.device->Add(call, resolver_);
    }
    // Compiled after every step is added (CompileKernels): by then each
    // weight's pack is queued, and LLVM works beside the packing.
    pending_kernels_.emplace_back(impl_.steps.size(), call.kernel);
    KernelStep step;
    for (SymExpr e : call.dim_values) {
      SS_ASSIGN_OR_RETURN(slot, Slot(e));
      step.dim_slots.push_back(slot);
    }
    SymExpr work = 0;
    for (size_t i = 0; i < call.buffers.size(); ++i) {
      SS_ASSIGN_OR_RETURN(buffer, Buffer(call.buffers[i]));
      step.buffers.push_back(buffer);
      if (call.kernel.buffers[i].role == codegen::BufferRole::kOutput) {
        work = work + call.buffers[i]->type().NumElements();
      }
    }
    SS_ASSIGN_OR_RETURN(work_slot, Slot(work));
    step.work_slot = work_slot;
    if (current_pair_ >= 0 && call.concat_slab.has_value()) {
      step.kv_pair = current_pair_;
      step.kv_past = call.concat_slab->input == 0;
      step.kv_extent_dim = call.concat_slab->extent_dim;
    }
    impl_.max_call_buffers = std::max(impl_.max_call_buffers, step.buffers.size());
    impl_.max_call_dims = std::max(impl_.max_call_dims, step.dim_slots.size());
    impl_.steps.push_back(std::move(step));
    step_origin_.push_back(absl::StrCat("group #", current_group_, " (kernel '", call.kernel.name, "')"));
    ++stats_.kernel_calls;
    return absl::OkStatus();
  }

  absl::Status AddStep(const lower::MatmulCall& call) {
    if (impl_.device != nullptr) {
      ++stats_.gemm_calls;
      return impl_.device->Add(call, resolver_);
    }
    // A KV pair's present as a batched B: read with a per-call batch stride
    // (dense, or a bound buffer's capacity), in plain and bound requests
    // alike, so the two run the same primitive.
    cpu::MatmulConfig config = call.config;
    int b_kv_pair = config.batch != 0 ? PresentPairRead(call.b) : -1;
    if (b_kv_pair >= 0) config.b_batch_stride = true;
    // Layers with the same configuration share one primitive.
    std::string key = cpu::DescribeConfig(config);
    const cpu::OnednnMatmul*& matmul = matmul_by_config_[key];
    if (matmul == nullptr) {
      SS_ASSIGN_OR_RETURN(created, cpu::OnednnMatmul::Create(config));
      if (absl::Status s = WarmUp(*created); !s.ok()) return s;
      matmul = created.get();
      impl_.matmuls.push_back(std::move(created));
    }
    MatmulStep step;
    step.matmul = matmul;
    SS_ASSIGN_OR_RETURN(batch, Slot(call.batch));
    SS_ASSIGN_OR_RETURN(m, Slot(call.m));
    SS_ASSIGN_OR_RETURN(k, Slot(call.k));
    SS_ASSIGN_OR_RETURN(n, Slot(call.n));
    SS_ASSIGN_OR_RETURN(a, Buffer(call.a));
    SS_ASSIGN_OR_RETURN(b, Buffer(call.b));
    SS_ASSIGN_OR_RETURN(bias, Buffer(call.bias));
    SS_ASSIGN_OR_RETURN(residual, Buffer(call.residual));
    SS_ASSIGN_OR_RETURN(c, Buffer(call.c));
    step.batch = batch, step.m = m, step.k = k, step.n = n;
    step.a = a, step.b = b, step.bias = bias, step.residual = residual, step.c = c;
    if (b_kv_pair >= 0) {
      const std::vector<SymExpr>& shape = call.b->type().shape;
      SS_ASSIGN_OR_RETURN(stride, Slot(shape[shape.size() - 2] * shape.back()));
      step.b_stride_slot = stride;
      step.b_kv_pair = b_kv_pair;
    }
    if (absl::Status s = AddSmallRowsPath(config, step); !s.ok()) return s;
    impl_.steps.push_back(step);
    step_origin_.push_back(absl::StrCat("group #", current_group_, " (", key, ")"));
    ++stats_.gemm_calls;
    return absl::OkStatus();
  }

  // A GEMM whose B is a constant gets a packed short-request path: our own
  // skinny GEMM where the CPU has AVX2 or AVX-512 (codegen/cpu/skinny_matmul.h)
  // for as many rows as the tuning (or the default) gives it, else oneDNN's
  // static-M primitives (codegen/cpu/small_rows_matmul.h). The kernels are
  // shared by every step with the same configuration, the packed copy is this
  // step's own.
  absl::Status AddSmallRowsPath(const cpu::MatmulConfig& config, MatmulStep& step) {
    if (!pack_small_row_gemms_) return absl::OkStatus();
    const BufferSource& b = impl_.buffers[step.b];
    if (b.kind != BufferSource::Kind::kConstant) return absl::OkStatus();
    const float* weights = static_cast<const float*>(b.constant);
    const std::string key = cpu::DescribeConfig(config);
    ShortRequestGemm& record = ShortRequestGemmFor(config);
    ++record.steps;
    if (skinny_isa_ && cpu::SkinnyMatmul::Applies(config)) {
      // Tuned against the engine the other rows will run on (PanelRowsFor).
      const LongRows long_rows = LongRowsFor(long_rows_on_panels_, *skinny_isa_);
      const cpu::SkinnyOptions options = SkinnyOptionsFor(tuning_, config, long_rows, threads_);
      record.tuned = tuning_ != nullptr && tuning_->Find(config, long_rows) != nullptr;
      record.max_rows = options.max_rows;
      record.min_rows = options.min_rows;
      if (options.max_rows == 0) {  // measured slower than oneDNN at every row count
        record.engine = "onednn";
        if (record.tuned) ++stats_.tuned_gemms;
        return absl::OkStatus();
      }
      record.engine = absl::StrCat("skinny-", cpu::IsaName(*skinny_isa_));
      record.prefetch_rows = options.prefetch_rows;
      const cpu::SkinnyMatmul*& skinny = skinny_by_config_[key];
      if (skinny == nullptr) {
        SS_ASSIGN_OR_RETURN(created, cpu::SkinnyMatmul::Create(config, *skinny_isa_, options));
        skinny = created.get();
        impl_.skinny.push_back(std::move(created));
      }
      const cpu::PanelRowsMatmul* panel_rows = PanelRowsFor(key, *skinny);
      if (panel_rows != nullptr) record.long_engine = panel_rows->engine();
      // With the long rows on the panels too, every request of this step
      // reads the packed copy: the plain weights' pages are given back
      // (QueuePack), so the plain matrix is never resident whole beside it.
      if (survey_) return absl::OkStatus();
      const bool release = panel_rows != nullptr;
      QueuePack(b, PackingKey(record.engine, key), release, [skinny, weights, release] {
        std::function<void(const float*, size_t)> consumed;
        if (release) consumed = [](const float* begin, size_t bytes) { ReleaseResidentPages(begin, bytes); };
        return skinny->PackB(weights, consumed);
      });
      step.skinny = skinny;
      step.panel_rows = panel_rows;
      ++stats_.skinny_gemms;
      if (record.tuned) ++stats_.tuned_gemms;
    } else {
      if (!cpu::SmallRowsMatmul::Applies(config)) {
        record.engine = "onednn";
        return absl::OkStatus();
      }
      record.engine = "onednn-small-rows";
      record.min_rows = cpu::SmallRowsMatmul::kMinRows;
      record.max_rows = cpu::SmallRowsMatmul::kMaxRows;
      const cpu::SmallRowsMatmul*& small = small_rows_by_config_[key];
      if (small == nullptr) {
        SS_ASSIGN_OR_RETURN(created, cpu::SmallRowsMatmul::Create(config));
        small = created.get();
        impl_.small_rows.push_back(std::move(created));
      }
      if (survey_) return absl::OkStatus();
      QueuePack(b, PackingKey(record.engine, key), /*release=*/false, [small, weights] { return small->PackB(weights); });
      step.small_rows = small;
    }
    ++stats_.small_row_gemms;
    return absl::OkStatus();
  }

  // Packs the constant B of the MatmulStep about to be added (the next in
  // impl_.steps) on the pack queue: `pack` makes the copy, once per session
  // through the PackedWeightCache. With `release`, every request of the step
  // reads the packed copy: the plain weights' pages then go back to the OS
  // where they lie in a spill file (graph/constant_spill.h; elsewhere a
  // no-op), block by block as `pack` reads them and then the whole range
  // (the pages the blocks' edges kept). Whatever reads them later (another
  // step, a later tier's compile) pages them back in.
  void QueuePack(const BufferSource& b, std::string packing, bool release,
                 std::function<absl::StatusOr<cpu::PackedWeights>()> pack) {
    PendingPack& pending = pending_packs_.emplace_back();
    pending.step = impl_.steps.size();
    pack_queue_->Add([this, &pending, release, tensor = b.tensor, weights = b.constant, bytes = b.constant_bytes,
                      group = current_group_, packing = std::move(packing), pack = std::move(pack)] {
      absl::StatusOr<cpu::PackedWeights> packed = Pack(tensor, packing, pack);
      if (!packed.ok()) {  // named as the step's other errors are (Build's loop)
        return absl::Status(packed.status().code(), absl::StrCat("group #", group, ": ", packed.status().message()));
      }
      pending.packed = *std::move(packed);
      if (release) pending.released_bytes = ReleaseResidentPages(weights, bytes);
      return absl::OkStatus();
    });
  }

  // Compiles the kernel of each KernelStep (each distinct one once: the
  // KernelCache), while the pack queue packs on its own thread.
  absl::Status CompileKernels() {
    for (const auto& [index, kernel] : pending_kernels_) {
      absl::StatusOr<std::shared_ptr<const cpu::CompiledKernel>> compiled = impl_.kernel_cache->GetOrCompile(kernel);
      if (!compiled.ok()) {
        return absl::Status(compiled.status().code(), absl::StrCat(step_origin_[index], ": ", compiled.status().message()));
      }
      std::get<KernelStep>(impl_.steps[index]).kernel = *std::move(compiled);
    }
    pending_kernels_.clear();
    return absl::OkStatus();
  }

  // Waits for the pack queue and gives each MatmulStep its packed copy.
  absl::Status FinishPacks() {
    if (pack_queue_ == nullptr) return absl::OkStatus();
    if (absl::Status s = pack_queue_->Finish(); !s.ok()) return s;
    for (PendingPack& pending : pending_packs_) {
      auto& step = std::get<MatmulStep>(impl_.steps[pending.step]);
      step.packed_b = std::move(pending.packed);
      stats_.packed_weight_bytes += step.packed_b.bytes();
      stats_.released_weight_bytes += pending.released_bytes;
    }
    pending_packs_.clear();
    return absl::OkStatus();
  }

  // The long-request path over `skinny`'s panels, shared by every step of its
  // configuration (oneDNN's blocked GEMM, or the skinny GEMM itself where
  // oneDNN cannot read the panels: ShortRequestGemm::long_engine says
  // which); null where it is off: then the plain weights serve long
  // requests.
  const cpu::PanelRowsMatmul* PanelRowsFor(const std::string& key, const cpu::SkinnyMatmul& skinny) {
    if (!long_rows_on_panels_) return nullptr;
    auto [it, inserted] = panel_rows_by_config_.try_emplace(key, nullptr);
    if (!inserted) return it->second;
    absl::StatusOr<std::unique_ptr<cpu::PanelRowsMatmul>> created = cpu::PanelRowsMatmul::Create(skinny);
    if (!created.ok()) return nullptr;
    it->second = created->get();
    impl_.panel_rows.push_back(*std::move(created));
    return it->second;
  }

  // What identifies a packed copy's layout: the packer (kernel and
  // instruction set), the GEMM class, and the team its primitives were made
  // for (oneDNN may block for the thread count; the skinny GEMM does not,
  // but one key rule serves both).
  std::string PackingKey(const std::string& engine, const std::string& config) const {
    return absl::StrCat(engine, " ", config, " threads=", threads_);
  }

  // `b`'s packed copy under `packing` (the packer and the GEMM class): the
  // one an earlier Program of the session made, where there is a cache, or a
  // new one from `pack`.
  // On the pack queue's thread: the PackedWeightCache is thread-safe.
  absl::StatusOr<cpu::PackedWeights> Pack(const Tensor* tensor, const std::string& packing,
                                          absl::FunctionRef<absl::StatusOr<cpu::PackedWeights>()> pack) {
    if (packed_weights_ == nullptr || tensor == nullptr) return pack();
    bool shared = false;
    return packed_weights_->GetOrPack(*tensor, packing, pack, &shared);
  }

  ShortRequestGemm& ShortRequestGemmFor(const cpu::MatmulConfig& config) {
    const std::string key = cpu::DescribeConfig(config);
    for (ShortRequestGemm& g : short_request_gemms_) {
      if (cpu::DescribeConfig(g.config) == key) return g;
    }
    ShortRequestGemm& added = short_request_gemms_.emplace_back();
    added.config = config;
    return added;
  }

  // The instruction set of the skinny GEMM's core (the tuning's, where it was
  // made for one this CPU runs, else the widest), and the tuning checked
  // against this machine. Inside Compile's thread scope: the team size is the
  // one the compile's primitives are created with.
  absl::Status PlanShortRequests(const CompileOptions& options) {
    threads_ = omp_get_max_threads();
    tuning_ = options.tuning.get();
    skinny_isa_ = cpu::SkinnyMatmul::HostIsa();
    if (tuning_ == nullptr) return absl::OkStatus();
    const std::string& isa_name = tuning_->machine.isa;
    const cpu::SkinnyMatmul::Isa isa =
        isa_name == "avx2" ? cpu::SkinnyMatmul::Isa::kAvx2 : cpu::SkinnyMatmul::Isa::kAvx512;
    if (!cpu::SkinnyMatmul::Supported(isa)) {
      return absl::FailedPreconditionError(
          absl::StrCat("the tuning is for the ", isa_name, " core, which this CPU cannot run: run `shapeshift tune` here"));
    }
    if (absl::Status s = CheckMachineKey(tuning_->machine, HostMachineKey(isa, threads_)); !s.ok()) return s;
    skinny_isa_ = isa;
    return absl::OkStatus();
  }

  // Runs `matmul` once on zeros, so oneDNN's lazy kernel generation is paid
  // here, inside compile_ms. Runtime dims are kWarmUpDim, not 1: at m = 1
  // oneDNN takes its gemv path and the first real request would still
  // generate the gemm kernels.
  absl::Status WarmUp(const cpu::OnednnMatmul& matmul) {
    const cpu::MatmulConfig& cfg = matmul.config();
    if (cfg.pack_b) return absl::OkStatus();  // B must be packed first; the runtime never packs
    auto start = std::chrono::steady_clock::now();
    constexpr int64_t kWarmUpDim = 64;
    auto dim = [](int64_t d) { return d == cpu::kRuntimeDim ? kWarmUpDim : d; };
    cpu::MatmulShape shape{cfg.batch == 0 || cfg.batch == cpu::kRuntimeDim ? 1 : cfg.batch, dim(cfg.m), dim(cfg.k),
                           dim(cfg.n)};
    shape.b_batch_stride = shape.k * shape.n;
    std::vector<float> a(shape.batch * shape.m * shape.k);
    std::vector<float> bias(shape.n), c(shape.batch * shape.m * shape.n);
    const ReadOnlyZeros b(shape.batch * shape.k * shape.n);
    cpu::MatmulOperands ops;
    ops.a = a.data();
    ops.b = b.data();
    ops.bias = cfg.bias ? bias.data() : nullptr;
    ops.residual = cfg.residual ? c.data() : nullptr;
    ops.c = c.data();
    if (absl::Status s = matmul.Execute(shape, ops); !s.ok()) {
      return absl::Status(s.code(), absl::StrCat("warming up: ", s.message()));
    }
    ++stats_.gemms_warmed;
    stats_.warmup_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return absl::OkStatus();
  }

  // Where attention `call` could copy pair `p`'s past itself, K or V (the
  // operand's `strides` and `dim`): the present it reads is the dense
  // [batch, kv_heads, kv_len, dim] f32 output and the past the dense
  // [batch, kv_heads, rows, dim] f32 input, all proven, not guarded. Else
  // buffer -1. Whether it does is DeferPastCopies' decision.
  absl::StatusOr<AttentionStep::PastSource> PastSourceFor(int p, const lower::AttentionCall& call,
                                                          const std::array<SymExpr, 3>& strides, int64_t dim) {
    const KvPair& pair = impl_.kv_pairs[p];
    const GraphValue* past = graph_.inputs()[pair.input];
    const GraphValue* present = graph_.outputs()[pair.output];
    const std::vector<SymExpr>& ps = past->type().shape;
    const std::vector<SymExpr>& ts = present->type().shape;
    if (ps.size() != 4 || ts.size() != 4 || pair.axis != 2 || past->type().dtype != DType::kF32 ||
        present->type().dtype != DType::kF32) {
      return AttentionStep::PastSource{};
    }
    auto eq = [&](SymExpr a, SymExpr b) { return env_.CanProveEqual(a, b); };
    const bool dense_present = eq(ts[0], call.batch) && eq(ts[1], call.kv_heads) && eq(ts[2], call.kv_len) &&
                               eq(ts[3], SymExpr(dim)) && eq(strides[2], ts[3]) && eq(strides[1], ts[2] * ts[3]) &&
                               eq(strides[0], ts[1] * ts[2] * ts[3]);
    if (!dense_present || !eq(ps[0], ts[0]) || !eq(ps[1], ts[1]) || !eq(ps[3], ts[3])) {
      return AttentionStep::PastSource{};
    }
    AttentionStep::PastSource source;
    SS_ASSIGN_OR_RETURN(buffer, Buffer(past));
    source.buffer = buffer;
    const SymExpr past_strides[3] = {ps[1] * ps[2] * ps[3], ps[2] * ps[3], ps[3]};
    for (int i = 0; i < 3; ++i) {
      SS_ASSIGN_OR_RETURN(slot, Slot(past_strides[i]));
      source.strides[i] = slot;
    }
    SS_ASSIGN_OR_RETURN(rows, Slot(ps[2]));
    source.rows = rows;
    return source;
  }

  // The plain form's copy of a past moved into the attention that reads the
  // present next (cpu::PastCopy): the past then crosses memory once, read
  // as it is copied, instead of being copied and the copy read again. Only
  // where the pair's Concat copies the past in one kernel step and no step
  // between it and the attention touches the present except the Concat's
  // copy of the new positions; otherwise the Concat copies as before.
  void DeferPastCopies() {
    for (size_t i = 0; i < impl_.steps.size(); ++i) {
      auto* a = std::get_if<AttentionStep>(&impl_.steps[i]);
      if (a == nullptr) continue;
      // One copy covers K's and V's first rows: the same count (one tape
      // slot, so one expression) or V's past stays with its Concat.
      if (a->k_past.buffer >= 0 && a->v_past.buffer >= 0 && a->k_past.rows != a->v_past.rows) {
        a->v_past = AttentionStep::PastSource{};
      }
      for (auto [pair, source] : {std::pair{a->k_kv_pair, &a->k_past}, std::pair{a->v_kv_pair, &a->v_past}}) {
        if (source->buffer < 0) continue;
        if (!DeferPastCopy(pair, i)) *source = AttentionStep::PastSource{};
      }
    }
  }

  bool DeferPastCopy(int pair, size_t attention) {
    KernelStep* copy = nullptr;
    size_t at = 0;
    for (size_t i = 0; i < attention; ++i) {
      auto* k = std::get_if<KernelStep>(&impl_.steps[i]);
      if (k == nullptr || k->kv_pair != pair || !k->kv_past) continue;
      if (copy != nullptr || k->past_by_attention) return false;
      copy = k, at = i;
    }
    if (copy == nullptr) return false;
    const int present = impl_.kv_pairs[pair].output_buffer;
    for (size_t i = at + 1; i < attention; ++i) {
      if (const auto* k = std::get_if<KernelStep>(&impl_.steps[i]); k != nullptr && k->kv_pair == pair) continue;
      const std::vector<int> touched = BuffersOf(impl_.steps[i], /*strided_cache_reads=*/true);
      if (std::find(touched.begin(), touched.end(), present) != touched.end()) return false;
    }
    copy->past_by_attention = true;
    impl_.kv_pairs[pair].past_by_attention = true;
    return true;
  }

  absl::Status AddStep(const lower::AttentionCall& call) {
    if (impl_.device != nullptr) {  // the CUDA attention kernel (codegen/cuda/attention_kernel.h)
      ++kernel_calls_;
      ++stats_.attention_calls;
      return impl_.device->Add(call, resolver_);
    }
    AttentionStep step;
    SS_ASSIGN_OR_RETURN(q, Buffer(call.q));
    SS_ASSIGN_OR_RETURN(k, Buffer(call.k));
    SS_ASSIGN_OR_RETURN(v, Buffer(call.v));
    SS_ASSIGN_OR_RETURN(mask, Buffer(call.mask));
    SS_ASSIGN_OR_RETURN(out, Buffer(call.out));
    step.q = q, step.k = k, step.v = v, step.mask = mask, step.out = out;
    for (auto [expr, slot] : {std::pair{call.batch, &step.batch}, std::pair{call.heads, &step.heads},
                              std::pair{call.kv_heads, &step.kv_heads}, std::pair{call.q_len, &step.q_len},
                              std::pair{call.kv_len, &step.kv_len}, std::pair{call.q_offset, &step.q_offset},
                              std::pair{call.k_offset, &step.k_offset}, std::pair{call.v_offset, &step.v_offset}}) {
      SS_ASSIGN_OR_RETURN(s, Slot(expr));
      *slot = s;
    }
    for (auto [exprs, slots] : {std::pair{&call.q_strides, &step.q_strides}, std::pair{&call.k_strides, &step.k_strides},
                                std::pair{&call.v_strides, &step.v_strides},
                                std::pair{&call.out_strides, &step.out_strides},
                                std::pair{&call.mask_strides, &step.mask_strides}}) {
      for (size_t i = 0; i < 3; ++i) {
        SS_ASSIGN_OR_RETURN(s, Slot((*exprs)[i]));
        (*slots)[i] = s;
      }
    }
    step.head_dim = call.head_dim;
    step.v_head_dim = call.v_head_dim;
    step.mask_col_stride = call.mask_col_stride;
    step.scale = call.scale;
    step.causal = call.causal;
    step.window = call.window;
    step.fill = call.fill;
    step.nan_to_zero = call.nan_to_zero;
    step.node_name = call.node_name;
    // A present read in place ([b, h, T, d], the pair's positions axis T):
    // bound, its strides follow the caller's capacity (RunStep).
    if (auto it = present_pair_.find(call.k); it != present_pair_.end() && !call.k_seq_major) {
      step.k_kv_pair = it->second;
      SS_ASSIGN_OR_RETURN(source, PastSourceFor(it->second, call, call.k_strides, call.head_dim));
      step.k_past = source;
    }
    if (auto it = present_pair_.find(call.v); it != present_pair_.end() && !call.v_seq_major) {
      step.v_kv_pair = it->second;
      SS_ASSIGN_OR_RETURN(source, PastSourceFor(it->second, call, call.v_strides, call.v_head_dim));
      step.v_past = source;
    }
    impl_.steps.push_back(std::move(step));
    step_origin_.push_back(absl::StrCat("group #", current_group_, " (fused attention at node '", call.node_name, "')"));
    ++stats_.attention_calls;
    return absl::OkStatus();
  }

  absl::Status AddStep(const lower::GatherRowsCall& call) {
    if (impl_.device != nullptr) {
      ++kernel_calls_;
      return impl_.device->Add(call, resolver_);
    }
    GatherStep step;
    SS_ASSIGN_OR_RETURN(table, Buffer(call.table));
    SS_ASSIGN_OR_RETURN(indices, Buffer(call.indices));
    SS_ASSIGN_OR_RETURN(output, Buffer(call.output));
    SS_ASSIGN_OR_RETURN(count, Slot(call.num_indices));
    step.table = table, step.indices = indices, step.output = output, step.count_slot = count;
    step.table_rows = call.table_rows;
    step.row_bytes = call.row_bytes;
    step.indices_i32 = call.indices->type().dtype == DType::kI32;
    step.node_name = call.node_name;
    if (const BufferSource& src = impl_.buffers[table]; src.kind == BufferSource::Kind::kConstant) {
      step.table_file = SpilledRangeOf(src.constant, src.constant_bytes);
      if (step.table_file) ++stats_.file_gather_tables;
    }
    impl_.steps.push_back(std::move(step));
    step_origin_.push_back(absl::StrCat("group #", current_group_, " (node '", call.node_name, "')"));
    return absl::OkStatus();
  }

  // A survey's GEMM: its short-request path decided, nothing created for
  // the long rows and nothing packed.
  absl::Status SurveyStep(const lower::MatmulCall& call) {
    MatmulStep step;
    SS_ASSIGN_OR_RETURN(b, Buffer(call.b));
    step.b = b;
    return AddSmallRowsPath(call.config, step);
  }

  absl::Status AddStep(const lower::IndexCheckCall& call) {
    if (impl_.device != nullptr) {  // a check kernel: the indices are in device memory
      ++kernel_calls_;
      return impl_.device->Add(call, resolver_);
    }
    IndexCheckStep step;
    SS_ASSIGN_OR_RETURN(indices, Buffer(call.indices));
    SS_ASSIGN_OR_RETURN(count, Slot(call.indices->type().NumElements()));
    step.indices = indices;
    step.count_slot = count;
    for (SymExpr d : call.dims) {
      SS_ASSIGN_OR_RETURN(slot, Slot(d));
      step.dim_slots.push_back(slot);
    }
    step.axes = call.axes;
    step.indices_i32 = call.indices->type().dtype == DType::kI32;
    step.node_name = call.node_name;
    step.op_type = call.op_type;
    impl_.steps.push_back(std::move(step));
    step_origin_.push_back(absl::StrCat("group #", current_group_, " (node '", call.node_name, "')"));
    return absl::OkStatus();
  }

  // Views need no step: the memory plan already gave them their root's bytes.
  absl::Status AddStep(const lower::AliasCall& call) { return absl::OkStatus(); }

  absl::Status PlanOutputs() {
    const auto& outs = graph_.outputs();
    for (size_t i = 0; i < outs.size(); ++i) {
      const GraphValue* v = outs[i];
      OutputSpec spec;
      spec.name = v->name();
      spec.dtype = v->type().dtype;
      for (SymExpr d : v->type().shape) {
        SS_ASSIGN_OR_RETURN(slot, Slot(d));
        spec.shape_slots.push_back(slot);
      }
      SS_ASSIGN_OR_RETURN(buffer, Buffer(v));
      spec.buffer = buffer;
      const BufferSource& src = impl_.buffers[buffer];
      spec.in_place = src.kind == BufferSource::Kind::kOutput && src.index == static_cast<int>(i);
      impl_.outputs.push_back(std::move(spec));
    }
    return absl::OkStatus();
  }

  // Every recorded guard becomes a check before the request runs: a
  // specialized answer is only valid where its question holds.
  absl::Status PlanGuards() {
    std::vector<Predicate> atoms;
    for (const GuardAtom& atom : env_.guards()) {
      atoms.push_back(atom.predicate);
      impl_.guard_texts.push_back(
          absl::StrCat(atom.predicate.ToString(), " (asked by ", ProvenanceText(atom.provenance), ")"));
    }
    if (atoms.empty()) return absl::OkStatus();
    absl::StatusOr<GuardProgram> program = GuardProgram::Compile(atoms, impl_.binder.symbol_names());
    if (!program.ok()) {
      return absl::Status(program.status().code(), absl::StrCat("guards: ", program.status().message()));
    }
    impl_.guards = *std::move(program);
    return absl::OkStatus();
  }

  const Graph& graph_;
  ShapeEnv& env_;
  const passes::PipelineResult& pipeline_;
  Program::Impl& impl_;
  ProgramStats& stats_;
  absl::flat_hash_map<const GraphValue*, int> buffer_of_;
  absl::flat_hash_map<std::string, const cpu::OnednnMatmul*> matmul_by_config_;
  absl::flat_hash_map<std::string, const cpu::SmallRowsMatmul*> small_rows_by_config_;
  absl::flat_hash_map<std::string, const cpu::SkinnyMatmul*> skinny_by_config_;
  absl::flat_hash_map<std::string, const cpu::PanelRowsMatmul*> panel_rows_by_config_;
  bool pack_small_row_gemms_ = true;
  bool long_rows_on_panels_ = true;
  PackedWeightCache* packed_weights_ = nullptr;
  const GemmTuning* tuning_ = nullptr;
  std::optional<cpu::SkinnyMatmul::Isa> skinny_isa_;
  int threads_ = 1;
  std::vector<ShortRequestGemm> short_request_gemms_;
  StepResolver resolver_;  // Slot and Buffer, for the device program
  int current_pair_ = -1;   // the KV pair of the group being added, or -1
  int current_group_ = -1;
  absl::flat_hash_map<const GraphValue*, int> present_pair_;  // a KV pair's present -> its index
  std::vector<std::string> step_origin_;  // per CPU step: its group and kernel, for why_not
  int64_t kernel_calls_ = 0;  // device kernel and gather steps
  const bool survey_;
  // A packed copy being made for the MatmulStep at impl_.steps[step]
  // (pack_queue.h): the queue's job fills it, FinishPacks hands it over.
  struct PendingPack {
    size_t step = 0;
    cpu::PackedWeights packed;
    int64_t released_bytes = 0;  // plain weight pages given back once it was made
  };
  std::deque<PendingPack> pending_packs_;
  std::vector<std::pair<size_t, codegen::Kernel>> pending_kernels_;  // KernelStep index, its kernel  // a deque: the jobs hold references while more are added
  std::unique_ptr<PackQueue> pack_queue_;  // after pending_packs_: stopped before they go
};

passes::PipelineOptions PipelineOptionsFor(const CompileOptions& options) {
  passes::PipelineOptions pipeline_options;
  pipeline_options.print_after = options.print_after;
  pipeline_options.print_stream = options.print_stream;
  pipeline_options.fuse_attention = options.fuse_attention;
  pipeline_options.attention_max_head_dim = AttentionMaxHeadDim(options.device);
  return pipeline_options;
}

}  // namespace

Program::Program(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Program::~Program() = default;

absl::StatusOr<std::unique_ptr<Program>> Program::Compile(Graph& graph, ShapeEnv& env, const CompileOptions& options) {
  auto start = std::chrono::steady_clock::now();
  const cpu::ScopedOmpThreads threads(options.threads);  // on whatever thread compiles (tier-ups too)
  SS_ASSIGN_OR_RETURN(pipeline, passes::RunPipeline(graph, env, PipelineOptionsFor(options)));
  auto impl = std::make_unique<Impl>();
  ProgramStats stats;
  ProgramBuilder builder(graph, env, pipeline, impl.get(), &stats);
  if (absl::Status s = builder.Build(options); !s.ok()) return s;
  std::unique_ptr<Program> program(new Program(std::move(impl)));
  stats.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  program->stats_ = stats;
  program->short_request_gemms_ = builder.TakeShortRequestGemms();
  for (const KvPair& pair : program->impl_->kv_pairs) {
    program->kv_pairs_.push_back(KvPairInfo{graph.inputs()[pair.input]->name(), graph.outputs()[pair.output]->name(),
                                            pair.input, pair.output, pair.axis, pair.why_not,
                                            pair.past_by_attention});
  }
  program->plan_text_ = pipeline.fusion.ToString() + pipeline.memory.ToString();
  program->arena_bytes_ = pipeline.memory.arena_bytes;
  return program;
}

absl::StatusOr<GemmSurvey> Program::SurveyShortRequestGemms(Graph& graph, ShapeEnv& env,
                                                           const CompileOptions& options) {
  const cpu::ScopedOmpThreads threads(options.threads);
  SS_ASSIGN_OR_RETURN(pipeline, passes::RunPipeline(graph, env, PipelineOptionsFor(options)));
  Program::Impl impl;
  GemmSurvey survey;
  ProgramBuilder builder(graph, env, pipeline, &impl, &survey.stats, /*survey=*/true);
  if (absl::Status s = builder.Build(options); !s.ok()) return s;
  survey.gemms = builder.TakeShortRequestGemms();
  return survey;
}

}  // namespace shapeshift::runtime
