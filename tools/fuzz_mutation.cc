#include "tools/fuzz_mutation.h"

#include <new>
#include <optional>

#include "absl/strings/str_cat.h"
#include "runtime/execution_context.h"
#include "runtime/specialization/policy.h"
#include "runtime/tensor_view.h"
#include "shapes/guard_program.h"
#include "shapes/z3_bridge.h"

namespace shapeshift::tools {
namespace {

// The atom with its constant bound moved by one in the accepting direction,
// or nullopt when it is not an inequality against a constant.
std::optional<Predicate> Weakened(const Predicate& atom) {
  if (!atom.IsAtom()) return std::nullopt;
  std::optional<int64_t> bound = atom.rhs().AsConst();
  if (!bound.has_value()) return std::nullopt;
  switch (atom.kind()) {
    case PredKind::kLe:
      return Predicate::Le(atom.lhs(), *bound + 1);
    case PredKind::kLt:
      return Predicate::Lt(atom.lhs(), *bound + 1);
    case PredKind::kGe:
      return Predicate::Ge(atom.lhs(), *bound - 1);
    case PredKind::kGt:
      return Predicate::Gt(atom.lhs(), *bound - 1);
    default:
      return std::nullopt;
  }
}

struct Mutant {
  std::string mutation;
  std::optional<Predicate> replacement;  // nullopt: dropped
};

// An allocator's refusal at `shape`: no verdict on the mutant.
bool AllocationFailed(const absl::Status& status, MutantResult& result) {
  if (!absl::IsResourceExhausted(status)) return false;
  ++result.allocation_failures;
  result.detail = absl::StrCat("allocation failure: ", status.message());
  return true;
}

// Runs the entry's Program on `shape`: true when that kills the mutant.
absl::StatusOr<bool> KillsUnguarded(FuzzRunner& runner, const runtime::CacheEntry& entry,
                                    const std::vector<int64_t>& shape, runtime::ExecutionContext& context,
                                    MutantResult& result) {
  absl::StatusOr<const std::vector<Tensor>*> inputs = runner.oracle().Inputs(shape);
  if (!inputs.ok()) return inputs.status();
  runtime::TensorViewList views(**inputs);
  absl::StatusOr<std::vector<Tensor>> outputs = entry.artifact->program->Run(views.span(), context);
  ++result.shapes_tried;
  if (!outputs.ok()) {
    if (AllocationFailed(outputs.status(), result)) return false;
    result.killed_by = "runtime check";
    result.detail = std::string(outputs.status().message());
    return true;
  }
  absl::StatusOr<const std::vector<Tensor>*> expected = runner.oracle().Expected(shape);
  if (!expected.ok()) return expected.status();
  TensorComparison comparison = CompareTensorLists(*outputs, **expected);
  if (comparison.agree) return false;
  result.killed_by = "output mismatch";
  result.detail = comparison.first_mismatch;
  return true;
}

absl::StatusOr<bool> Kills(FuzzRunner& runner, const runtime::CacheEntry& entry, const std::vector<int64_t>& shape,
                           runtime::ExecutionContext& context, MutantResult& result) {
  try {
    // The inputs or the interpreter failing to allocate: no verdict either.
    absl::StatusOr<bool> killed = KillsUnguarded(runner, entry, shape, context, result);
    if (!killed.ok() && AllocationFailed(killed.status(), result)) return false;
    return killed;
  } catch (const std::bad_alloc& e) {
    AllocationFailed(absl::ResourceExhaustedError(absl::StrCat("std::bad_alloc (", e.what(), ")")), result);
    return false;
  }
}

}  // namespace

absl::StatusOr<MutationReport> RunGuardMutants(FuzzRunner& runner, int max_shapes) {
  MutationReport report;
  const runtime::Dispatcher& dispatcher = runner.session().dispatcher();
  const Predicate domain = dispatcher.env().DomainPredicate();
  const std::vector<std::string>& slots = dispatcher.slots();
  runtime::ExecutionContext context;

  for (const std::shared_ptr<const runtime::CacheEntry>& entry : dispatcher.cache().entries()) {
    for (size_t i = 0; i < entry->guards.size(); ++i) {
      const Predicate& original = entry->guards[i].predicate;
      std::vector<Mutant> mutants = {{"drop", std::nullopt}};
      if (std::optional<Predicate> weaker = Weakened(original)) mutants.push_back({"weaken", *weaker});
      for (const Mutant& m : mutants) {
        MutantResult result;
        result.entry_id = entry->id;
        result.tier = runtime::TierName(entry->tier);
        result.atom = original.ToString();
        result.asked_by = ProvenanceText(entry->guards[i].provenance);
        result.mutation = m.mutation;
        result.mutant = m.replacement ? m.replacement->ToString() : "";

        std::vector<Predicate> mutated;
        for (size_t k = 0; k < entry->guards.size(); ++k) {
          if (k != i) mutated.push_back(entry->guards[k].predicate);
        }
        if (m.replacement) mutated.push_back(*m.replacement);
        absl::StatusOr<GuardProgram> mutant_program = GuardProgram::Compile(mutated, slots);
        if (!mutant_program.ok()) return mutant_program.status();

        // Needed: some shape in the domain passes the mutant and fails the atom.
        std::vector<Predicate> assumptions = mutated;
        assumptions.push_back(domain);
        ImplicationResult implied = runner.z3().bridge().Implies(assumptions, original);
        std::vector<std::vector<int64_t>> shapes;
        if (implied.verdict == Verdict::kProven) {
          result.necessity = "redundant";
        } else if (implied.verdict == Verdict::kRefuted) {
          result.necessity = "needed";
          std::vector<int64_t> witness;
          for (const std::string& slot : slots) {
            auto it = implied.counterexample.find(slot);
            witness.push_back(it != implied.counterexample.end() ? it->second : 0);
          }
          shapes.push_back(witness);
        } else {
          result.necessity = "unknown";
          result.detail = implied.detail;
        }
        for (const std::vector<int64_t>& shape : runner.visited_shapes()) {
          if (static_cast<int>(shapes.size()) >= max_shapes) break;
          if (mutant_program->Evaluate(shape).pass && !entry->guard_program.Evaluate(shape).pass) {
            shapes.push_back(shape);
          }
        }
        for (const std::vector<int64_t>& shape : shapes) {
          if (!runner.FitsBudget(shape, CaseKind::kInDomain)) {
            ++result.shapes_over_budget;
            continue;
          }
          absl::StatusOr<bool> killed = Kills(runner, *entry, shape, context, result);
          if (!killed.ok()) return killed.status();
          if (*killed) {
            result.killed = true;
            result.killing_shape = shape;
            break;
          }
        }
        if (result.killed) ++report.killed;
        report.allocation_failures += result.allocation_failures;
        if (result.necessity == "needed") {
          ++report.needed;
          if (result.killed) ++report.killed_needed;
        }
        report.mutants.push_back(std::move(result));
      }
    }
  }
  report.kill_rate =
      report.needed == 0 ? 1.0 : static_cast<double>(report.killed_needed) / static_cast<double>(report.needed);
  return report;
}

}  // namespace shapeshift::tools
