#include "python/src/model.h"

#include <nanobind/stl/string.h>
#include <omp.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/constant_spill.h"
#include "graph/graph.h"
#include "python/src/errors.h"
#include "python/src/tensors.h"
#include "runtime/compile_options.h"
#include "tools/lazy_tuning.h"
#include "runtime/dim_ranges.h"
#include "runtime/specialization/coverage.h"
#include "runtime/specialization/metrics.h"
#include "runtime/specialization/policy.h"
#include "shapes/predicate.h"
#include "shapes/z3_bridge.h"
#include "tools/explain_text.h"
#include "tools/metrics_json.h"
#include "tools/prove_report.h"
#include "tools/weights_json.h"

namespace nb = nanobind;

namespace shapeshift::python {
namespace {

constexpr unsigned kProveTimeoutMs = 10000;  // as `shapeshift prove`

template <typename T>
T OrRaise(absl::StatusOr<T> value) {
  if (!value.ok()) ThrowStatus(value.status());
  return *std::move(value);
}

}  // namespace

std::unique_ptr<Model> Model::Load(const std::string& source, bool is_bytes, const ModelOptions& options) {
  std::unique_ptr<Model> model(new Model());
  model->name_ = is_bytes ? "<model bytes>" : source;
  model->intra_op_threads_ = options.intra_op_threads;
  runtime::SessionOptions session;
  session.policy = OrRaise(runtime::ParseSpecializationPolicy(options.policy));
  model->policy_ = session.policy;
  session.recompile_limit = options.recompile_limit;
  session.cache_dir = options.cache_dir;
  session.compile.device = OrRaise(runtime::ParseDevice(options.device));
  session.compile.threads = options.intra_op_threads;  // oneDNN's primitives keep the count they are created with
  session.weights_dir = options.weights_dir;
  ImportOptions import;
  import.dim_ranges = options.dims;
  // Large initializers go straight to the file; a directory that cannot take
  // them leaves that to the session, which keeps them in memory with a note.
  std::unique_ptr<ConstantSpill> spill = OpenSpillIfAny(options.weights_dir);
  import.spill = spill.get();
  absl::StatusOr<ImportedModel> result;
  {
    nb::gil_scoped_release release;  // a large model's import and compile take a while
    result = is_bytes ? ImportOnnxBytes(source, import, model->name_) : ImportOnnxFile(source, import);
  }
  ImportedModel imported = OrRaise(std::move(result));
  for (const auto& [name, range] : options.dims) {
    if (!imported.env->HasSymbol(name)) ThrowStatus(runtime::UnknownDimError(name, *imported.env));
  }
  for (const Value* v : imported.graph->inputs()) model->inputs_.push_back({v->name(), v->type()});
  for (const Value* v : imported.graph->outputs()) model->outputs_.push_back({v->name(), v->type()});
  for (const std::string& note : imported.notes) model->notes_.push_back(InPythonTerms(note));
  absl::StatusOr<std::unique_ptr<runtime::Session>> created;
  {
    nb::gil_scoped_release release;
    // This machine's GEMM choices in the cache dir, measured on a model
    // file's first session here (tools/lazy_tuning.h; bytes have no name to
    // remember them by, so they only read what is there).
    if (session.compile.device == runtime::Device::kCpu) {
      tools::CachedTuning tuning = tools::TuningFromCacheDir(
          options.cache_dir, source, imported, is_bytes ? 0 : options.tune_budget_s,
          /*long_rows_on_panels=*/!options.weights_dir.empty(), options.intra_op_threads);
      session.compile.tuning = std::move(tuning.tuning);
      model->notes_.insert(model->notes_.end(), tuning.notes.begin(), tuning.notes.end());
    }
    created = runtime::Session::Create(
        runtime::ModelSource::Built(std::move(imported.graph), std::move(imported.env), model->name_), session);
  }
  model->session_ = OrRaise(std::move(created));
  if (!model->session_->weights().note.empty()) model->notes_.push_back(model->session_->weights().note);
  return model;
}

std::string Model::WeightsJson() const {
  const runtime::Program* program = session_->program();
  return tools::WeightsJson(*session_, program != nullptr ? &program->stats() : nullptr).dump();
}

nb::list Model::Run(nb::list inputs) {
  const size_t count = inputs_.size();
  if (nb::len(inputs) != count) {
    ThrowAs(PyExc_ValueError, absl::StrCat(name_, " has ", count, " inputs, got ", nb::len(inputs)));
  }
  RequestInputs request(count);
  for (size_t i = 0; i < count; ++i) {
    request.Add(nb::handle(PyList_GET_ITEM(inputs.ptr(), static_cast<Py_ssize_t>(i))), inputs_[i].name);
  }
  if (request.copies() > 0) input_copies_.fetch_add(request.copies(), std::memory_order_relaxed);
  absl::StatusOr<std::vector<Tensor>> outputs;
  {
    nb::gil_scoped_release release;
    if (intra_op_threads_ > 0) omp_set_num_threads(intra_op_threads_);  // this thread's OpenMP teams
    outputs = session_->Run(absl::MakeConstSpan(request.views()));
  }
  if (!outputs.ok()) RaiseRunError(outputs.status(), request.views());
  nb::list result;
  for (Tensor& t : *outputs) result.append(ToNumpy(std::move(t)));
  return result;
}

void Model::RaiseRunError(const absl::Status& status, const std::vector<runtime::TensorView>& views) const {
  // The dispatcher's message names the input and both types; only the
  // exception class is decided here.
  if (status.code() == absl::StatusCode::kInvalidArgument) {
    for (size_t i = 0; i < views.size() && i < inputs_.size(); ++i) {
      if (views[i].dtype != inputs_[i].type.dtype) ThrowAs(PyExc_TypeError, std::string(status.message()));
    }
  }
  ThrowStatus(status);
}

nb::list Model::Signature(const std::vector<Port>& ports) {
  nb::list out;
  for (const Port& p : ports) {
    nb::list dims;
    for (const SymExpr& d : p.type.shape) {
      if (std::optional<int64_t> c = d.AsConst()) {
        dims.append(*c);
      } else {
        dims.append(d.IsSymbol() ? d.symbol_name() : d.ToString());
      }
    }
    out.append(nb::make_tuple(p.name, OrtTypeName(p.type.dtype), dims));
  }
  return out;
}

std::vector<std::string> Model::RecompileEventsJson() const {
  std::vector<std::string> out;
  for (const runtime::RecompileEvent& e : session_->events()) out.push_back(runtime::RecompileEventToJson(e).dump());
  return out;
}

std::string Model::Explain(bool summary) const {
  std::vector<runtime::RecompileEvent> events = session_->events();
  return summary ? tools::RenderRecompileSummary(events) : tools::RenderRecompileEvents(events);
}

std::string Model::Metrics(const std::string& format) const {
  runtime::SpecializationMetrics m = session_->Metrics();
  if (format == "prometheus") return runtime::FormatMetricsPrometheus(m);
  if (format == "text") return runtime::FormatMetricsText(m);
  if (format == "json") return tools::MetricsJson(runtime::FormatMetricsText(m)).dump();
  ThrowAs(PyExc_ValueError, absl::StrCat("metrics: format '", format, "' is not one of dict, text, prometheus"));
}

std::string Model::Prove(const std::map<std::string, DimRange>& dims) const {
  const ShapeEnv& env = session_->dispatcher().env();
  for (const auto& [name, range] : dims) {
    if (!env.HasSymbol(name)) ThrowStatus(runtime::UnknownDimError(name, env));
    const SymbolInfo* found = nullptr;
    for (const SymbolInfo& s : env.symbols()) {
      if (s.name == name) found = &s;
    }
    const SymbolInfo& s = *found;
    if (range.min > range.max || range.min < s.min || range.max > s.max) {
      ThrowAs(PyExc_ValueError, absl::StrCat("prove: dims ", name, "=", range.min, "..", range.max,
                                             " is not inside the declared range ", s.min, "..", s.max));
    }
  }
  std::vector<Predicate> parts;
  nlohmann::ordered_json domain = nlohmann::ordered_json::object();
  for (const SymbolInfo& s : env.symbols()) {
    auto it = dims.find(s.name);
    const int64_t lo = it == dims.end() ? s.min : it->second.min;
    const int64_t hi = it == dims.end() ? s.max : it->second.max;
    parts.push_back(Predicate::Ge(SymExpr::Symbol(s.name), lo));
    parts.push_back(Predicate::Le(SymExpr::Symbol(s.name), hi));
    domain[s.name] = absl::StrCat(lo, "..", hi);
  }
  for (const DomainConstraint& c : env.domain_constraints()) parts.push_back(c.predicate);
  std::string text;
  {
    nb::gil_scoped_release release;  // Z3 may take seconds
    Z3Bridge z3(kProveTimeoutMs);
    const runtime::SpecializationCache& cache = session_->dispatcher().cache();
    CoverageResult r = runtime::ProveCacheCoverage(cache, Predicate::And(parts), z3);
    nlohmann::ordered_json out = tools::CoverageVerdictJson(r, env);
    out["model"] = name_;
    out["policy"] = runtime::SpecializationPolicyName(policy_);
    out["domain"] = domain;
    out["declared_domain"] = tools::DomainJson(env);
    out["domain_relations"] = tools::DomainRelationsJson(env);
    out["notes"] = notes_;
    out["compiles"] = session_->stats().dispatcher.compiles;
    out["cache_loads"] = session_->stats().dispatcher.cache_loads;
    out["entries"] = tools::EntriesJson(cache, z3);
    text = out.dump();
  }
  return text;
}

}  // namespace shapeshift::python
