#include "tools/fuzz_report.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/specialization/policy.h"
#include "tools/fuzz_mutation.h"

namespace shapeshift::tools {
namespace {

nlohmann::ordered_json ShapeJson(const FuzzDomain& domain, const std::vector<int64_t>& values) {
  nlohmann::ordered_json shape = nlohmann::ordered_json::object();
  for (size_t s = 0; s < domain.slots.size() && s < values.size(); ++s) shape[domain.slots[s]] = values[s];
  return shape;
}

// The command that rebuilds the cache the failure saw (the shapes that
// compiled before it) and then sends `shape`.
std::string ReplayCommand(const FuzzRequest& flags, FuzzRunner& runner, const FuzzFailure& failure,
                          const std::vector<int64_t>& shape) {
  const FuzzDomain& domain = runner.domain();
  std::vector<std::string> parts = {"shapeshift fuzz", flags.options.model};
  for (size_t s = 0; s < domain.slots.size(); ++s) {
    parts.push_back(absl::StrCat("--dim ", domain.slots[s], "=", domain.min[s], "..", domain.max[s]));
  }
  parts.push_back(absl::StrCat("--policy ", runtime::SpecializationPolicyName(flags.options.policy)));
  parts.push_back(absl::StrCat("--recompile-limit ", flags.options.recompile_limit));
  parts.push_back(absl::StrCat("--seed ", flags.options.seed));
  const std::vector<std::vector<int64_t>>& history = runner.compile_triggers();
  for (size_t i = 0; i < failure.compiles_before && i < history.size(); ++i) {
    parts.push_back(absl::StrCat("--case ", CaseFlagText(domain, history[i])));
  }
  parts.push_back(absl::StrCat("--case ", CaseFlagText(domain, shape)));
  return absl::StrJoin(parts, " ");
}

nlohmann::ordered_json ReportJson(const FuzzRequest& flags, FuzzRunner& runner, const MutationReport* mutation) {
  const FuzzResults& r = runner.results();
  nlohmann::ordered_json j;
  j["model"] = flags.options.model;
  j["policy"] = runtime::SpecializationPolicyName(flags.options.policy);
  j["seed"] = flags.options.seed;
  j["dims"] = nlohmann::ordered_json::object();
  for (size_t s = 0; s < runner.domain().slots.size(); ++s) {
    j["dims"][runner.domain().slots[s]] = absl::StrCat(runner.domain().min[s], "..", runner.domain().max[s]);
  }
  j["cases"] = r.cases;
  j["sound_failures"] = r.sound_failures;
  j["unclear_errors"] = r.unclear_errors;
  j["spurious_recompiles"] = r.spurious_recompiles;
  j["evaluator_disagreements"] = r.evaluator_disagreements;
  j["compiles"] = runner.compiles();
  j["served"] = r.served;
  j["rejected_as_expected"] = r.rejected_as_expected;
  j["limit_refusals"] = r.limit_refusals;
  j["max_case_bytes"] = runner.max_case_bytes();
  j["over_budget"] = r.over_budget;
  j["largest_over_budget_bytes"] = r.largest_over_budget;
  j["allocation_failures"] = r.allocation_failures;
  j["evaluator_checks"] = r.evaluator_checks;
  j["distinct_shapes"] = runner.visited_shapes().size();
  j["interpreter_runs"] = runner.oracle().interpreter_runs();
  j["max_abs_error"] = r.max_abs_error;
  j["rtol"] = kDefaultTolerance.rtol;
  j["atol"] = kDefaultTolerance.atol;
  j["failures"] = nlohmann::ordered_json::array();
  for (const FuzzFailure& f : r.failures) {
    nlohmann::ordered_json fj;
    fj["property"] = f.property;
    fj["what"] = f.what;
    fj["case"] = f.case_index;
    fj["kind"] = CaseKindName(f.case_kind);
    fj["shape"] = ShapeJson(runner.domain(), f.values);
    const std::vector<int64_t>& reproducer = f.minimized.empty() ? f.values : f.minimized;
    if (!f.minimized.empty()) fj["minimized"] = ShapeJson(runner.domain(), f.minimized);
    fj["detail"] = f.detail;
    fj["replay"] = ReplayCommand(flags, runner, f, reproducer);
    j["failures"].push_back(fj);
  }
  if (mutation != nullptr) {
    j["mutants"] = mutation->mutants.size();
    j["killed"] = mutation->killed;
    j["needed"] = mutation->needed;
    j["killed_needed"] = mutation->killed_needed;
    j["kill_rate"] = mutation->kill_rate;
    j["mutant_allocation_failures"] = mutation->allocation_failures;
    j["mutant_results"] = nlohmann::ordered_json::array();
    for (const MutantResult& m : mutation->mutants) {
      nlohmann::ordered_json mj;
      mj["entry"] = m.entry_id;
      mj["tier"] = m.tier;
      mj["atom"] = m.atom;
      mj["asked_by"] = m.asked_by;
      mj["mutation"] = m.mutation;
      if (!m.mutant.empty()) mj["mutant"] = m.mutant;
      mj["necessity"] = m.necessity;
      mj["result"] = m.killed ? "killed" : "survived";
      if (m.killed) {
        mj["killed_by"] = m.killed_by;
        mj["killing_shape"] = ShapeJson(runner.domain(), m.killing_shape);
      }
      mj["shapes_tried"] = m.shapes_tried;
      if (m.shapes_over_budget > 0) mj["shapes_over_budget"] = m.shapes_over_budget;
      if (m.allocation_failures > 0) mj["allocation_failures"] = m.allocation_failures;
      if (!m.detail.empty()) mj["detail"] = m.detail;
      j["mutant_results"].push_back(mj);
    }
  }
  return j;
}

}  // namespace

absl::StatusOr<FuzzOutcome> RunFuzz(const FuzzRequest& request) {
  absl::StatusOr<std::unique_ptr<FuzzRunner>> runner = FuzzRunner::Create(request.options);
  if (!runner.ok()) return runner.status();

  std::vector<FuzzCase> cases;
  if (request.explicit_cases.empty()) {
    cases = GenerateCases((*runner)->domain(), request.cases, request.options.seed);
  } else {
    for (const std::string& text : request.explicit_cases) {
      absl::StatusOr<FuzzCase> c = ParseCaseFlag(text, (*runner)->domain());
      if (!c.ok()) return c.status();
      cases.push_back(*std::move(c));
    }
  }
  if (absl::Status s = (*runner)->RunCases(cases); !s.ok()) return s;
  // Mutants first: minimizing sends more requests, which may compile more entries.
  std::optional<MutationReport> mutation;
  if (request.mutate_guards) {
    absl::StatusOr<MutationReport> report = RunGuardMutants(**runner, request.mutant_shapes);
    if (!report.ok()) {
      return absl::Status(report.status().code(), absl::StrCat("--mutate-guards: ", report.status().message()));
    }
    mutation = *std::move(report);
  }
  (*runner)->MinimizeFailures();

  FuzzOutcome outcome;
  outcome.report = ReportJson(request, **runner, mutation ? &*mutation : nullptr);
  const FuzzResults& r = (*runner)->results();
  outcome.failed = r.sound_failures > 0 || r.unclear_errors > 0 || r.spurious_recompiles > 0 ||
                   r.evaluator_disagreements > 0 || r.allocation_failures > 0 ||
                   (mutation && (mutation->kill_rate < request.min_kill_rate || mutation->allocation_failures > 0));
  return outcome;
}

}  // namespace shapeshift::tools
