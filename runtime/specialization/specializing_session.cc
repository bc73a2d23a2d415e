#include "runtime/specialization/specializing_session.h"

#include "absl/strings/str_cat.h"
#include "graph/onnx/importer.h"
#include "runtime/dim_ranges.h"

namespace shapeshift::runtime {

SpecializingSession::~SpecializingSession() {
  dispatcher_.reset();  // before the log it appends to
}

absl::StatusOr<std::unique_ptr<SpecializingSession>> SpecializingSession::CreateFromOnnxFile(
    const std::string& path, const SpecializingSessionOptions& options) {
  ImportOptions import;
  import.dim_ranges = options.compile.dims;
  absl::StatusOr<ImportedModel> imported = ImportOnnxFile(path, import);
  if (!imported.ok()) return imported.status();
  for (const auto& [name, range] : options.compile.dims) {
    if (!imported->env->HasSymbol(name)) return UnknownDimError(name, *imported->env);
  }
  return Create(std::move(imported->graph), std::move(imported->env), options, path);
}

absl::StatusOr<std::unique_ptr<SpecializingSession>> SpecializingSession::CreateFromBuilt(
    std::unique_ptr<Graph> graph, std::unique_ptr<ShapeEnv> env, const SpecializingSessionOptions& options,
    const std::string& model_name) {
  if (graph == nullptr || env == nullptr) {
    return absl::InvalidArgumentError("a built model needs both a graph and a ShapeEnv");
  }
  if (!options.compile.dims.empty()) {
    absl::StatusOr<std::unique_ptr<ShapeEnv>> ranged = RedeclareWithRanges(*env, options.compile.dims);
    if (!ranged.ok()) return ranged.status();
    env = *std::move(ranged);
  }
  return Create(std::move(graph), std::move(env), options, model_name);
}

absl::StatusOr<std::unique_ptr<SpecializingSession>> SpecializingSession::Create(
    std::unique_ptr<Graph> graph, std::unique_ptr<ShapeEnv> env, const SpecializingSessionOptions& options,
    const std::string& model_name) {
  std::unique_ptr<SpecializingSession> session(new SpecializingSession());
  absl::StatusOr<std::unique_ptr<RecompileLogWriter>> log = options.recompile_log.empty()
                                                                ? RecompileLogWriter::OpenFromEnvironment()
                                                                : RecompileLogWriter::Open(options.recompile_log);
  if (!log.ok()) return log.status();
  session->log_ = *std::move(log);
  DispatcherOptions dispatch;
  dispatch.policy = options.policy;
  dispatch.recompile_limit = options.recompile_limit;
  dispatch.compile = options.compile;
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
                        absl::StrCat("compiling ", model_name, ": ", dispatcher.status().message()));
  }
  session->dispatcher_ = *std::move(dispatcher);
  return session;
}

absl::StatusOr<std::vector<Tensor>> SpecializingSession::Run(absl::Span<const TensorView> inputs) {
  std::unique_ptr<ExecutionContext> context;
  {
    absl::MutexLock lock(&mu_);
    if (!idle_contexts_.empty()) {
      context = std::move(idle_contexts_.back());
      idle_contexts_.pop_back();
    }
  }
  if (context == nullptr) context = std::make_unique<ExecutionContext>();
  absl::StatusOr<std::vector<Tensor>> out = dispatcher_->Run(inputs, *context);
  {
    absl::MutexLock lock(&mu_);
    idle_contexts_.push_back(std::move(context));
  }
  if (out.ok()) requests_.fetch_add(1, std::memory_order_relaxed);
  return out;
}

absl::StatusOr<std::vector<Tensor>> SpecializingSession::Run(const std::vector<Tensor>& inputs) {
  TensorViewList views(inputs);
  return Run(views.span());
}

SpecializingSessionStats SpecializingSession::stats() const {
  SpecializingSessionStats s;
  s.dispatcher = dispatcher_->stats();
  s.requests = requests_.load(std::memory_order_relaxed);
  s.entries = dispatcher_->cache().size();
  return s;
}

}  // namespace shapeshift::runtime
