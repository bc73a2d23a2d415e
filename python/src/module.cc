// shapeshift._core: the extension module. It binds python::Model and
// nothing else; the Python-facing API (InferenceSession, SessionOptions,
// NodeArg) is python/shapeshift/session.py over it.
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include "python/src/errors.h"
#include "python/src/model.h"
#include "runtime/persist/artifact_cache.h"
#include "runtime/specialization/policy.h"
#include "tools/fuzz_budget.h"
#include "tools/fuzz_report.h"

namespace nb = nanobind;
using shapeshift::DimRange;
using shapeshift::python::Model;
using shapeshift::python::ModelOptions;

namespace {

std::map<std::string, DimRange> Ranges(const std::map<std::string, std::pair<int64_t, int64_t>>& dims) {
  std::map<std::string, DimRange> out;
  for (const auto& [name, range] : dims) out[name] = DimRange{range.first, range.second};
  return out;
}

// `shapeshift fuzz MODEL --dim ... --cases N --seed S --policy P`'s report, as JSON text.
std::string Fuzz(const std::string& model, const std::map<std::string, std::pair<int64_t, int64_t>>& dims,
                 int64_t cases, uint64_t seed, const std::string& policy, int recompile_limit,
                 const std::vector<std::string>& explicit_cases) {
  if (cases < 1) shapeshift::python::ThrowAs(PyExc_ValueError, "fuzz: cases must be >= 1");
  if (recompile_limit < 0) shapeshift::python::ThrowAs(PyExc_ValueError, "fuzz: recompile_limit must be >= 0");
  absl::StatusOr<shapeshift::runtime::SpecializationPolicy> parsed =
      shapeshift::runtime::ParseSpecializationPolicy(policy);
  if (!parsed.ok()) shapeshift::python::ThrowStatus(parsed.status());
  shapeshift::tools::FuzzRequest request;
  request.options.model = model;
  request.options.dims = Ranges(dims);
  request.options.seed = seed;
  request.options.policy = *parsed;
  request.options.recompile_limit = recompile_limit;
  request.options.max_case_bytes = shapeshift::tools::DefaultMaxCaseBytes();
  request.cases = cases;
  request.explicit_cases = explicit_cases;
  absl::StatusOr<shapeshift::tools::FuzzOutcome> outcome;
  {
    nb::gil_scoped_release release;
    outcome = shapeshift::tools::RunFuzz(request);
  }
  if (!outcome.ok()) shapeshift::python::ThrowStatus(outcome.status());
  nlohmann::ordered_json report = outcome->report;
  report["failed"] = outcome->failed;
  return report.dump();
}

}  // namespace

NB_MODULE(_core, m) {
  m.doc() = "shapeshift's compiled core (use shapeshift.InferenceSession)";
  nb::class_<Model>(m, "Model")
      .def_static(
          "load",
          [](nb::object source, const std::map<std::string, std::pair<int64_t, int64_t>>& dims,
             const std::string& policy, const std::string& cache_dir, int recompile_limit, const std::string& device,
             int intra_op_threads, const std::string& weights_dir, bool weights_in_memory, double tune_budget_s) {
            ModelOptions options;
            options.dims = Ranges(dims);
            options.policy = policy;
            options.cache_dir = cache_dir;
            options.recompile_limit = recompile_limit;
            options.device = device;
            options.intra_op_threads = intra_op_threads;
            // As the CLI's --weights-dir / --weights-in-memory: a named
            // directory, else the default beside the cache.
            options.weights_dir = weights_in_memory      ? std::string()
                                  : !weights_dir.empty() ? weights_dir
                                                         : shapeshift::runtime::persist::DefaultWeightsDir(cache_dir);
            options.tune_budget_s = tune_budget_s;
            if (nb::isinstance<nb::bytes>(source)) {
              nb::bytes b = nb::borrow<nb::bytes>(source);
              return Model::Load(std::string(b.c_str(), b.size()), /*is_bytes=*/true, options);
            }
            return Model::Load(nb::cast<std::string>(source), /*is_bytes=*/false, options);
          },
          nb::arg("source"), nb::arg("dims"), nb::arg("policy"), nb::arg("cache_dir"), nb::arg("recompile_limit"),
          nb::arg("device"), nb::arg("intra_op_threads"), nb::arg("weights_dir"), nb::arg("weights_in_memory"),
          nb::arg("tune_budget_s"))
      .def("run", &Model::Run, nb::arg("inputs"), "inputs in graph order -> every output in graph order")
      .def("inputs", &Model::Inputs)
      .def("outputs", &Model::Outputs)
      .def_prop_ro("name", &Model::name)
      .def_prop_ro("notes", &Model::notes)
      .def("recompile_events_json", &Model::RecompileEventsJson)
      .def("explain", &Model::Explain, nb::arg("summary") = false)
      .def("metrics", &Model::Metrics, nb::arg("format"))
      .def("weights_json", &Model::WeightsJson)
      .def(
          "prove",
          [](const Model& model, const std::map<std::string, std::pair<int64_t, int64_t>>& dims) {
            return model.Prove(Ranges(dims));
          },
          nb::arg("dims"))
      .def("wait_for_tier_ups", &Model::WaitForTierUps, nb::call_guard<nb::gil_scoped_release>())
      .def_prop_ro("input_copies", &Model::input_copies);
  m.def("fuzz", &Fuzz, nb::arg("model"), nb::arg("dims"), nb::arg("cases"), nb::arg("seed"), nb::arg("policy"),
        nb::arg("recompile_limit"), nb::arg("explicit_cases"));
}
