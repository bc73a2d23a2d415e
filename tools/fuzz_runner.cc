#include "tools/fuzz_runner.h"

#include <algorithm>
#include <limits>
#include <new>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/specialization/policy.h"

namespace shapeshift::tools {
namespace {

bool IsInDomainKind(CaseKind kind) { return kind == CaseKind::kInDomain || kind == CaseKind::kEdge; }

constexpr char kAllocationFailure[] = "allocation failure";

// The first input made malformed the way `kind` says (same data size, so
// only the declared type is wrong).
absl::StatusOr<std::vector<Tensor>> Malformed(const std::vector<Tensor>& inputs, CaseKind kind) {
  std::vector<Tensor> bad = inputs;
  if (bad.empty()) return absl::FailedPreconditionError("the model has no inputs to malform");
  std::vector<int64_t> shape = bad[0].shape();
  DType dtype = bad[0].dtype();
  if (kind == CaseKind::kWrongRank) {
    shape.push_back(1);
  } else {
    dtype = dtype == DType::kF32 ? DType::kI64 : DType::kF32;
  }
  absl::StatusOr<Tensor> replaced = Tensor::Zeros(dtype, shape);
  if (!replaced.ok()) return replaced.status();
  bad[0] = *std::move(replaced);
  return bad;
}

}  // namespace

FuzzRunner::FuzzRunner(FuzzOptions options, FuzzDomain domain, std::vector<std::string> input_names,
                       std::unique_ptr<runtime::Session> session, std::unique_ptr<ReferenceOracle> oracle,
                       CaseFootprintEstimator footprint)
    : options_(std::move(options)),
      domain_(std::move(domain)),
      input_names_(std::move(input_names)),
      session_(std::move(session)),
      oracle_(std::move(oracle)),
      footprint_(std::move(footprint)),
      z3_(options_.z3_timeout_ms) {}

absl::StatusOr<std::unique_ptr<FuzzRunner>> FuzzRunner::Create(const FuzzOptions& options) {
  absl::StatusOr<ImportedModel> model = LoadModel(options.model, options.dims);
  if (!model.ok()) return model.status();
  std::vector<InputRecipe> recipes = InputRecipes(*model->graph);
  std::unique_ptr<Graph> reference_graph = model->graph->Clone();
  CaseFootprintEstimator footprint(*reference_graph);
  std::vector<std::string> input_names;
  for (const Value* v : model->graph->inputs()) input_names.push_back(v->name());

  runtime::SessionOptions session_options;
  session_options.policy = options.policy;
  session_options.recompile_limit = options.recompile_limit;
  session_options.compile.device = options.device.device;
  session_options.compile.cuda = options.device.cuda;
  absl::StatusOr<std::unique_ptr<runtime::Session>> session =
      runtime::Session::Create(runtime::ModelSource::Built(std::move(model->graph), std::move(model->env)),
                               session_options);
  if (!session.ok()) {
    return absl::Status(session.status().code(), absl::StrCat("compile: ", session.status().message()));
  }

  FuzzDomain domain;
  const runtime::Dispatcher& dispatcher = (*session)->dispatcher();
  for (const std::string& slot : dispatcher.slots()) {
    const SymbolInfo* info = dispatcher.env().FindSymbol(slot);
    if (info == nullptr) return absl::InternalError(absl::StrCat("dim '", slot, "' has no declared range"));
    domain.slots.push_back(slot);
    domain.min.push_back(info->min);
    domain.max.push_back(info->max);
  }
  if (!dispatcher.env().domain_constraints().empty()) {
    std::vector<Predicate> atoms;
    for (const DomainConstraint& c : dispatcher.env().domain_constraints()) {
      atoms.push_back(c.predicate);
      domain.relation_texts.push_back(c.predicate.ToString());
    }
    absl::StatusOr<GuardProgram> relations = GuardProgram::Compile(atoms, domain.slots);
    if (!relations.ok()) return relations.status();
    domain.relations = *std::move(relations);
  }
  auto oracle = std::make_unique<ReferenceOracle>(std::move(reference_graph), std::move(recipes), domain.slots,
                                                  options.seed, options.reference_cache_bytes);
  return std::unique_ptr<FuzzRunner>(new FuzzRunner(options, std::move(domain), std::move(input_names),
                                                    *std::move(session), std::move(oracle), std::move(footprint)));
}

uint64_t FuzzRunner::EstimatedBytes(const std::vector<int64_t>& values, CaseKind kind) const {
  const Assignment dims = AssignmentOf(values);
  CaseFootprint f = footprint_.Estimate(dims);
  if (!IsInDomainKind(kind)) return f.refused_total();
  // The arena the memory plan of the entries that would serve `values`
  // allocates there (else the largest any entry plans there; before the
  // first entry, the estimator's bound).
  std::optional<uint64_t> serving, any;
  for (const std::shared_ptr<const runtime::CacheEntry>& entry : session_->dispatcher().cache().entries()) {
    absl::StatusOr<int64_t> bytes = entry->artifact->program->arena_bytes().Evaluate(dims);
    if (!bytes.ok() && !absl::IsOutOfRange(bytes.status())) continue;  // a size the dims do not bind
    const uint64_t arena = bytes.ok() ? static_cast<uint64_t>(std::max<int64_t>(*bytes, 0))
                                      : std::numeric_limits<uint64_t>::max();  // overflows int64
    any = std::max(any.value_or(0), arena);
    if (entry->guard_program.Evaluate(values).pass) serving = std::max(serving.value_or(0), arena);
  }
  if (serving || any) f.arena = serving ? *serving : *any;
  return f.served_total();
}

int64_t FuzzRunner::compiles() const { return session_->stats().dispatcher.compiles; }

Assignment FuzzRunner::AssignmentOf(const std::vector<int64_t>& values) const {
  Assignment assignment;
  for (size_t s = 0; s < domain_.slots.size() && s < values.size(); ++s) assignment[domain_.slots[s]] = values[s];
  return assignment;
}

absl::StatusOr<FuzzRunner::Checked> FuzzRunner::CheckRequest(const FuzzCase& c) {
  Checked checked;
  const uint64_t estimate = EstimatedBytes(c.values, c.kind);
  if (estimate > options_.max_case_bytes) {
    checked.outcome = Outcome::kOverBudget;
    checked.detail = FormatBytes(estimate);
    checked.estimate = estimate;
    return checked;
  }
  try {
    return SendAndCheck(c);
  } catch (const std::bad_alloc& e) {
    checked.outcome = Outcome::kAllocationFailed;
    checked.what = kAllocationFailure;
    checked.detail = absl::StrCat("std::bad_alloc (", e.what(), ") with an estimate of ", FormatBytes(estimate),
                                  " against a budget of ", FormatBytes(options_.max_case_bytes));
    return checked;
  }
}

absl::StatusOr<FuzzRunner::Checked> FuzzRunner::SendAndCheck(const FuzzCase& c) {
  Checked checked;
  // An allocator's refusal (a tensor, an arena, a oneDNN buffer) is reported
  // as what it is; only the dispatcher's recompile limit is a limit refusal.
  auto allocation_failed = [&](const absl::Status& status, absl::string_view where) {
    checked.outcome = Outcome::kAllocationFailed;
    checked.what = kAllocationFailure;
    checked.detail = absl::StrCat(where, ": ", status.message());
    return checked;
  };
  absl::StatusOr<const std::vector<Tensor>*> inputs = oracle_->Inputs(c.values);
  if (!inputs.ok()) {
    if (absl::IsResourceExhausted(inputs.status())) return allocation_failed(inputs.status(), "request inputs");
    return inputs.status();
  }
  if (IsInDomainKind(c.kind)) {
    const int64_t limit_errors_before = session_->stats().dispatcher.limit_errors;
    absl::StatusOr<std::vector<Tensor>> outputs = session_->Run(**inputs);
    if (!outputs.ok()) {
      if (absl::IsResourceExhausted(outputs.status())) {
        if (session_->stats().dispatcher.limit_errors > limit_errors_before) {
          checked.outcome = Outcome::kLimitRefused;
          return checked;
        }
        return allocation_failed(outputs.status(), "compiled run");
      }
      checked.outcome = Outcome::kFailed;
      checked.what = "error for an in-domain request";
      checked.detail = std::string(outputs.status().message());
      return checked;
    }
    absl::StatusOr<const std::vector<Tensor>*> expected = oracle_->Expected(c.values);
    if (!expected.ok() && absl::IsResourceExhausted(expected.status())) {
      return allocation_failed(expected.status(), "reference interpreter");
    }
    if (!expected.ok()) {
      checked.outcome = Outcome::kFailed;
      checked.what = "reference interpreter error";
      checked.detail = std::string(expected.status().message());
      return checked;
    }
    TensorComparison comparison = CompareTensorLists(outputs.value(), **expected);
    checked.max_abs_error = comparison.max_abs_error;
    if (!comparison.agree) {
      checked.outcome = Outcome::kFailed;
      checked.what = "output mismatch";
      checked.detail = comparison.first_mismatch;
    }
    return checked;
  }

  // The rest must be refused, by an error that names what is wrong.
  std::string must_name;
  absl::StatusOr<std::vector<Tensor>> outputs;
  if (c.kind == CaseKind::kOutOfDomain) {
    must_name = domain_.slots[c.bad_slot];
    outputs = session_->Run(**inputs);
  } else if (c.kind == CaseKind::kOutsideRelation) {
    const size_t broken = domain_.relations.has_value() ? domain_.relations->Evaluate(c.values).failed_atom : 0;
    if (broken >= domain_.relation_texts.size()) return absl::InternalError("an outside-relation case meets them all");
    must_name = domain_.relation_texts[broken];
    outputs = session_->Run(**inputs);
  } else {
    absl::StatusOr<std::vector<Tensor>> bad = Malformed(**inputs, c.kind);
    if (!bad.ok() && absl::IsResourceExhausted(bad.status())) return allocation_failed(bad.status(), "malformed inputs");
    if (!bad.ok()) return bad.status();
    must_name = input_names_[0];
    outputs = session_->Run(*bad);
  }
  if (outputs.ok()) {
    checked.outcome = Outcome::kFailed;
    checked.what = absl::StrCat("accepted a ", CaseKindName(c.kind), " request");
    checked.detail = c.kind == CaseKind::kOutOfDomain
                         ? absl::StrCat(must_name, " = ", c.values[c.bad_slot], " is outside ",
                                        domain_.min[c.bad_slot], "..", domain_.max[c.bad_slot])
                     : c.kind == CaseKind::kOutsideRelation
                         ? absl::StrCat(CaseFlagText(domain_, c.values), " breaks ", must_name)
                         : absl::StrCat("input '", must_name, "' was given a wrong ",
                                        c.kind == CaseKind::kWrongRank ? "rank" : "dtype");
    return checked;
  }
  if (!absl::StrContains(outputs.status().message(), must_name)) {
    checked.outcome = Outcome::kUnclearError;
    checked.what = absl::StrCat("the error for a ", CaseKindName(c.kind), " request does not name '", must_name, "'");
    checked.detail = std::string(outputs.status().message());
    return checked;
  }
  checked.outcome = Outcome::kRejected;
  return checked;
}

absl::Status FuzzRunner::RunCases(const std::vector<FuzzCase>& cases) {
  for (const FuzzCase& c : cases) {
    const int64_t index = results_.cases++;
    if (IsInDomainKind(c.kind) && visited_set_.insert(c.values).second) visited_shapes_.push_back(c.values);
    const size_t compiles_before = compile_triggers_.size();
    absl::StatusOr<Checked> checked = CheckRequest(c);
    if (!checked.ok()) return checked.status();
    switch (checked->outcome) {
      case Outcome::kServed:
        ++results_.served;
        results_.max_abs_error = std::max(results_.max_abs_error, checked->max_abs_error);
        break;
      case Outcome::kRejected:
        ++results_.rejected_as_expected;
        break;
      case Outcome::kLimitRefused:
        ++results_.limit_refusals;
        break;
      case Outcome::kOverBudget:
        ++results_.over_budget;
        results_.largest_over_budget = std::max(results_.largest_over_budget, checked->estimate);
        break;
      case Outcome::kAllocationFailed:
        ++results_.allocation_failures;
        results_.failures.push_back({"memory", checked->what, index, c.kind, c.values, {}, checked->detail,
                                     compiles_before, c.bad_slot});
        break;
      case Outcome::kUnclearError:
      case Outcome::kFailed: {
        const bool unclear = checked->outcome == Outcome::kUnclearError;
        ++(unclear ? results_.unclear_errors : results_.sound_failures);
        results_.failures.push_back({unclear ? "clarity" : "soundness", checked->what, index, c.kind, c.values, {},
                                     checked->detail, compiles_before, c.bad_slot});
        break;
      }
    }
    if (absl::Status s = CheckNewCompiles(index, c); !s.ok()) return s;
    if (absl::Status s = CheckEvaluatorAgreement(index, c); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status FuzzRunner::CheckNewCompiles(int64_t case_index, const FuzzCase& c) {
  if (static_cast<size_t>(compiles()) == events_seen_) return absl::OkStatus();
  const std::vector<runtime::RecompileEvent> events = session_->events();
  for (size_t e = events_seen_; e < events.size(); ++e) {
    const runtime::RecompileEvent& event = events[e];
    if (event.symbols.empty()) continue;  // the polymorphic initial compile: no trigger, nothing existed
    Assignment trigger;
    for (const runtime::SymbolValue& s : event.symbols) trigger[s.name] = s.value;
    std::vector<int64_t> values;
    for (const std::string& slot : domain_.slots) values.push_back(trigger.contains(slot) ? trigger[slot] : 0);
    compile_triggers_.push_back(values);
    // A tier-up (auto policy) is meant to specialize a region an entry
    // already serves; only a request-triggered compile can be spurious.
    if (event.trigger == runtime::RecompileTrigger::kTierUp) continue;
    for (const runtime::TriedEntry& tried : event.tried) {
      absl::StatusOr<std::vector<Predicate>> atoms = ParseGuardTexts(tried.guards);
      if (!atoms.ok()) return atoms.status();
      absl::StatusOr<bool> all_hold = z3_.AllHold(*atoms, trigger);
      if (!all_hold.ok()) return all_hold.status();
      if (!*all_hold) continue;
      ++results_.spurious_recompiles;
      results_.failures.push_back(
          {"tightness", "spurious recompile", case_index, c.kind, values, {},
           absl::StrCat("event ", event.sequence, " (", runtime::RecompileTriggerName(event.trigger), ") compiled entry ",
                        event.new_entry_id, " although entry ", tried.entry_id, " (", runtime::TierName(tried.tier),
                        ") accepts the trigger: every atom of {", absl::StrJoin(tried.guards, " && "), "} holds"),
           compile_triggers_.size() - 1, -1});
    }
  }
  events_seen_ = events.size();
  return absl::OkStatus();
}

absl::Status FuzzRunner::CheckEvaluatorAgreement(int64_t case_index, const FuzzCase& c) {
  const Assignment assignment = AssignmentOf(c.values);
  for (const std::shared_ptr<const runtime::CacheEntry>& entry : session_->dispatcher().cache().entries()) {
    if (!evaluated_.insert({entry->id, c.values}).second) continue;
    std::vector<Predicate> atoms;
    for (const GuardAtom& atom : entry->guards) atoms.push_back(atom.predicate);
    const GuardVerdict fast = entry->guard_program.Evaluate(c.values);
    absl::StatusOr<GuardVerdict> z3 = z3_.Evaluate(atoms, assignment);
    if (!z3.ok()) return z3.status();
    ++results_.evaluator_checks;
    const bool agree = fast.pass == z3->pass && (fast.pass || fast.failed_atom == z3->failed_atom);
    if (agree) continue;
    ++results_.evaluator_disagreements;
    auto verdict_text = [&](const GuardVerdict& v) {
      return v.pass ? std::string("pass")
                    : absl::StrCat("fail at `", v.failed_atom < atoms.size() ? atoms[v.failed_atom].ToString() : "?", "`");
    };
    results_.failures.push_back({"evaluator", "GuardProgram and Z3 disagree", case_index, c.kind, c.values, {},
                                 absl::StrCat("entry ", entry->id, ": GuardProgram says ", verdict_text(fast),
                                              ", Z3 says ", verdict_text(*z3)),
                                 compile_triggers_.size(), -1});
  }
  return absl::OkStatus();
}

void FuzzRunner::MinimizeFailures() {
  int minimized = 0;
  for (FuzzFailure& failure : results_.failures) {
    if (failure.property != "soundness" && failure.property != "clarity") continue;
    if (minimized++ >= options_.max_minimized) break;
    FuzzCase probe{failure.case_kind, failure.values, failure.bad_slot};
    auto still_fails = [&](const std::vector<int64_t>& values) {
      probe.values = values;
      absl::StatusOr<Checked> checked = CheckRequest(probe);
      return checked.ok() && checked->what == failure.what;
    };
    std::vector<int64_t> values = failure.values;
    for (size_t s = 0; s < values.size(); ++s) {
      if (static_cast<int>(s) == failure.bad_slot) continue;
      // Binary search for the smallest value that still fails (the current
      // one does): a heuristic when failing is not monotone in the dim, but
      // the result always fails.
      int64_t lo = domain_.min[s], hi = values[s];
      while (lo < hi) {
        std::vector<int64_t> candidate = values;
        candidate[s] = lo + (hi - lo) / 2;
        if (still_fails(candidate)) {
          hi = candidate[s];
        } else {
          lo = candidate[s] + 1;
        }
      }
      values[s] = hi;
    }
    failure.minimized = values;
  }
}

}  // namespace shapeshift::tools
