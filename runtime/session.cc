#include "runtime/session.h"

#include "absl/strings/str_cat.h"
#include "graph/constant_spill.h"
#include "graph/interpreter.h"
#include "graph/onnx/importer.h"
#include "runtime/dim_ranges.h"

namespace shapeshift::runtime {

ModelSource ModelSource::OnnxFile(std::string path) {
  ModelSource m;
  m.kind_ = Kind::kOnnxFile;
  m.name_ = path;
  m.text_ = std::move(path);
  return m;
}

ModelSource ModelSource::OnnxBytes(std::string bytes, std::string name) {
  ModelSource m;
  m.kind_ = Kind::kOnnxBytes;
  m.text_ = std::move(bytes);
  m.name_ = std::move(name);
  return m;
}

ModelSource ModelSource::Built(std::unique_ptr<Graph> graph, std::unique_ptr<ShapeEnv> env, std::string name) {
  ModelSource m;
  m.kind_ = Kind::kBuilt;
  m.name_ = std::move(name);
  m.graph_ = std::move(graph);
  m.env_ = std::move(env);
  return m;
}

namespace {

// Moves the graph's large constants into `spill` (opened under `dir`; the
// import may have put them there already); any failure keeps them in memory
// (a run never fails for want of a disk) and says why.
WeightsPlacement PlaceWeights(Graph& graph, const std::string& dir,
                              const absl::StatusOr<std::unique_ptr<ConstantSpill>>& spill) {
  WeightsPlacement placed;
  if (!spill.ok()) {
    placed.note = absl::StrCat("weights kept in memory: ", spill.status().message());
    return placed;
  }
  absl::StatusOr<SpillStats> moved = SpillLargeConstants(graph, **spill);
  if (!moved.ok()) {
    placed.note = absl::StrCat("weights (some or all) kept in memory: ", moved.status().message());
    return placed;
  }
  placed.dir = dir;
  placed.constants = moved->constants;
  placed.bytes = moved->bytes;
  return placed;
}

}  // namespace

Session::~Session() {
  polymorphic_.reset();
  dispatcher_.reset();  // before the log it appends to
}

absl::StatusOr<std::unique_ptr<Session>> Session::Create(ModelSource model, const CompileOptions& options) {
  SessionOptions polymorphic;
  polymorphic.compile = options;
  polymorphic.policy = SpecializationPolicy::kPolymorphic;
  return Create(std::move(model), polymorphic);
}

absl::StatusOr<std::unique_ptr<Session>> Session::Create(ModelSource model, const SessionOptions& options) {
  // The weights' file, if any: an ONNX model's import writes large
  // initializers straight to it; the rest are moved below.
  absl::StatusOr<std::unique_ptr<ConstantSpill>> spill = std::unique_ptr<ConstantSpill>();
  if (!options.weights_dir.empty()) spill = ConstantSpill::Open(options.weights_dir);
  // The model and its env, with the declared ranges applied.
  std::unique_ptr<Graph> graph;
  std::unique_ptr<ShapeEnv> env;
  if (model.kind_ == ModelSource::Kind::kBuilt) {
    if (model.graph_ == nullptr || model.env_ == nullptr) {
      return absl::InvalidArgumentError("ModelSource::Built needs both a graph and a ShapeEnv");
    }
    graph = std::move(model.graph_);
    env = std::move(model.env_);
    if (!options.compile.dims.empty()) {
      absl::StatusOr<std::unique_ptr<ShapeEnv>> ranged = RedeclareWithRanges(*env, options.compile.dims);
      if (!ranged.ok()) return ranged.status();
      env = *std::move(ranged);
    }
  } else {
    ImportOptions import;
    import.dim_ranges = options.compile.dims;
    if (spill.ok()) import.spill = spill->get();
    absl::StatusOr<ImportedModel> imported = model.kind_ == ModelSource::Kind::kOnnxFile
                                                 ? ImportOnnxFile(model.text_, import)
                                                 : ImportOnnxBytes(model.text_, import, model.name_);
    if (!imported.ok()) return imported.status();
    for (const auto& [name, range] : options.compile.dims) {
      if (!imported->env->HasSymbol(name)) return UnknownDimError(name, *imported->env);
    }
    graph = std::move(imported->graph);
    env = std::move(imported->env);
  }

  std::unique_ptr<Session> session(new Session());
  DispatcherOptions dispatch;
  dispatch.compile = options.compile;
  if (!options.weights_dir.empty()) {
    session->weights_ = PlaceWeights(*graph, options.weights_dir, spill);
    if (!session->weights_.dir.empty()) dispatch.compile.long_rows_on_panels = true;
  }
  absl::StatusOr<std::unique_ptr<RecompileLogWriter>> log = options.recompile_log.empty()
                                                                ? RecompileLogWriter::OpenFromEnvironment()
                                                                : RecompileLogWriter::Open(options.recompile_log);
  if (!log.ok()) return log.status();
  session->log_ = *std::move(log);
  dispatch.policy = options.policy;
  dispatch.recompile_limit = options.recompile_limit;
  dispatch.log = session->log_.get();
  dispatch.buckets = options.buckets;
  dispatch.tier_up = options.tier_up;
  dispatch.cache_dir = options.cache_dir;
  dispatch.remote_cache = options.remote_cache;
  dispatch.front_store = options.front_store;
  dispatch.front_store_writable = options.front_store_writable;
  absl::StatusOr<std::unique_ptr<Dispatcher>> dispatcher =
      Dispatcher::Create(std::move(graph), std::move(env), std::move(dispatch));
  if (!dispatcher.ok()) {
    return absl::Status(dispatcher.status().code(),
                        absl::StrCat("compiling ", model.name_, ": ", dispatcher.status().message()));
  }
  session->dispatcher_ = *std::move(dispatcher);
  for (const std::shared_ptr<const CacheEntry>& entry : session->dispatcher_->cache().entries()) {
    if (entry->guards.empty()) session->polymorphic_ = entry;
  }
  return session;
}

std::unique_ptr<ExecutionContext> Session::AcquireContext() {
  std::unique_ptr<ExecutionContext> ctx;
  std::shared_ptr<StepProfile> profile;
  {
    absl::MutexLock lock(&mu_);
    profile = step_profile_;
    if (!idle_contexts_.empty()) {
      ctx = std::move(idle_contexts_.back());
      idle_contexts_.pop_back();
    }
  }
  if (ctx == nullptr) ctx = std::make_unique<ExecutionContext>();  // outside the lock
  ctx->set_step_profile(std::move(profile));
  return ctx;
}

void Session::ProfileSteps(std::shared_ptr<StepProfile> profile) {
  absl::MutexLock lock(&mu_);
  step_profile_ = std::move(profile);
}

void Session::ReleaseContext(std::unique_ptr<ExecutionContext> context) {
  absl::MutexLock lock(&mu_);
  idle_contexts_.push_back(std::move(context));
}

absl::StatusOr<std::vector<Tensor>> Session::Run(absl::Span<const TensorView> inputs) { return Run(inputs, {}); }

absl::StatusOr<std::vector<Tensor>> Session::Run(absl::Span<const TensorView> inputs,
                                                 absl::Span<const BoundCache> caches) {
  std::unique_ptr<ExecutionContext> ctx = AcquireContext();
  absl::StatusOr<std::vector<Tensor>> out = dispatcher_->Run(inputs, *ctx, caches);
  ReleaseContext(std::move(ctx));
  if (out.ok()) requests_.fetch_add(1, std::memory_order_relaxed);
  return out;
}

absl::StatusOr<std::vector<Tensor>> Session::Run(const std::vector<Tensor>& inputs) {
  TensorViewList views(inputs);
  return Run(views.span());
}

absl::StatusOr<std::vector<Tensor>> Session::RunReference(const std::vector<Tensor>& inputs) const {
  return Interpret(graph(), inputs);
}

const Program* Session::program() const {
  return polymorphic_ != nullptr ? polymorphic_->artifact->program.get() : nullptr;
}

SessionStats Session::stats() const {
  SessionStats s;
  s.dispatcher = dispatcher_->stats();
  s.compiles = s.dispatcher.compiles;
  s.recompiles = s.dispatcher.compiles - s.dispatcher.compiles_by_trigger[static_cast<int>(RecompileTrigger::kInitial)];
  s.requests = requests_.load(std::memory_order_relaxed);
  s.entries = dispatcher_->cache().size();
  if (const Program* p = program()) s.program = p->stats();
  return s;
}

}  // namespace shapeshift::runtime
