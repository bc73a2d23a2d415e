#include "runtime/session.h"

#include "absl/strings/str_cat.h"
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

ModelSource ModelSource::Built(std::unique_ptr<Graph> graph, std::unique_ptr<ShapeEnv> env) {
  ModelSource m;
  m.kind_ = Kind::kBuilt;
  m.name_ = "<built model>";
  m.graph_ = std::move(graph);
  m.env_ = std::move(env);
  return m;
}

Session::~Session() = default;

absl::StatusOr<std::unique_ptr<Session>> Session::Create(ModelSource model, const CompileOptions& options) {
  std::unique_ptr<Session> session(new Session());
  if (model.kind_ == ModelSource::Kind::kBuilt) {
    if (model.graph_ == nullptr || model.env_ == nullptr) {
      return absl::InvalidArgumentError("ModelSource::Built needs both a graph and a ShapeEnv");
    }
    absl::StatusOr<std::unique_ptr<ShapeEnv>> env = RedeclareWithRanges(*model.env_, options.dims);
    if (!env.ok()) return env.status();
    session->env_ = options.dims.empty() ? std::move(model.env_) : *std::move(env);
    session->graph_ = std::move(model.graph_);
  } else {
    ImportOptions import;
    import.dim_ranges = options.dims;
    absl::StatusOr<ImportedModel> imported = model.kind_ == ModelSource::Kind::kOnnxFile
                                                 ? ImportOnnxFile(model.text_, import)
                                                 : ImportOnnxBytes(model.text_, import, model.name_);
    if (!imported.ok()) return imported.status();
    for (const auto& [name, range] : options.dims) {
      if (!imported->env->HasSymbol(name)) return UnknownDimError(name, *imported->env);
    }
    session->env_ = std::move(imported->env);
    session->graph_ = std::move(imported->graph);
  }
  absl::StatusOr<std::unique_ptr<Program>> program = Program::Compile(*session->graph_, *session->env_, options);
  if (!program.ok()) {
    return absl::Status(program.status().code(),
                        absl::StrCat("compiling ", model.name_, ": ", program.status().message()));
  }
  session->program_ = *std::move(program);
  return session;
}

std::unique_ptr<ExecutionContext> Session::AcquireContext() {
  {
    absl::MutexLock lock(&mu_);
    if (!idle_contexts_.empty()) {
      std::unique_ptr<ExecutionContext> ctx = std::move(idle_contexts_.back());
      idle_contexts_.pop_back();
      return ctx;
    }
  }
  return std::make_unique<ExecutionContext>();
}

void Session::ReleaseContext(std::unique_ptr<ExecutionContext> context) {
  absl::MutexLock lock(&mu_);
  idle_contexts_.push_back(std::move(context));
}

absl::StatusOr<std::vector<Tensor>> Session::Run(absl::Span<const TensorView> inputs) {
  std::unique_ptr<ExecutionContext> ctx = AcquireContext();
  absl::StatusOr<std::vector<Tensor>> out = program_->Run(inputs, *ctx);
  ReleaseContext(std::move(ctx));
  if (out.ok()) requests_.fetch_add(1, std::memory_order_relaxed);
  return out;
}

absl::StatusOr<std::vector<Tensor>> Session::Run(const std::vector<Tensor>& inputs) {
  TensorViewList views(inputs);
  return Run(views.span());
}

absl::StatusOr<std::vector<Tensor>> Session::RunReference(const std::vector<Tensor>& inputs) const {
  return Interpret(*graph_, inputs);
}

SessionStats Session::stats() const {
  SessionStats s;
  s.compiles = 1;
  s.recompiles = 0;
  s.requests = requests_.load(std::memory_order_relaxed);
  s.program = program_->stats();
  return s;
}

}  // namespace shapeshift::runtime
