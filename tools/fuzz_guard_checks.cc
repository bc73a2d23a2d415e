#include "tools/fuzz_guard_checks.h"

#include "absl/container/btree_set.h"
#include "absl/strings/str_cat.h"

namespace shapeshift::tools {

absl::StatusOr<bool> Z3GuardOracle::AtomHolds(const Predicate& atom, const Assignment& values) {
  switch (atom.kind()) {
    case PredKind::kTrue:
      return true;
    case PredKind::kFalse:
      return false;
    case PredKind::kAnd:
    case PredKind::kOr: {
      // Every child is evaluated (no short circuit), like Predicate::Evaluate:
      // an error anywhere fails the atom.
      const bool is_and = atom.kind() == PredKind::kAnd;
      bool result = is_and;
      for (const Predicate& child : atom.children()) {
        absl::StatusOr<bool> holds = AtomHolds(child, values);
        if (!holds.ok()) return holds.status();
        result = is_and ? (result && *holds) : (result || *holds);
      }
      return result;
    }
    case PredKind::kNot: {
      absl::StatusOr<bool> holds = AtomHolds(atom.children()[0], values);
      if (!holds.ok()) return holds.status();
      return !*holds;
    }
    case PredKind::kDivisible: {
      absl::StatusOr<int64_t> remainder = z3_.EvaluateInZ3(Mod(atom.lhs(), atom.rhs()), values);
      if (!remainder.ok()) return remainder.status();
      return *remainder == 0;
    }
    default:
      break;
  }
  absl::StatusOr<int64_t> lhs = z3_.EvaluateInZ3(atom.lhs(), values);
  if (!lhs.ok()) return lhs.status();
  absl::StatusOr<int64_t> rhs = z3_.EvaluateInZ3(atom.rhs(), values);
  if (!rhs.ok()) return rhs.status();
  switch (atom.kind()) {
    case PredKind::kEq:
      return *lhs == *rhs;
    case PredKind::kNe:
      return *lhs != *rhs;
    case PredKind::kLt:
      return *lhs < *rhs;
    case PredKind::kLe:
      return *lhs <= *rhs;
    case PredKind::kGt:
      return *lhs > *rhs;
    case PredKind::kGe:
      return *lhs >= *rhs;
    default:
      return absl::InternalError(absl::StrCat("unexpected predicate kind in `", atom.ToString(), "`"));
  }
}

absl::StatusOr<GuardVerdict> Z3GuardOracle::Evaluate(absl::Span<const Predicate> atoms, const Assignment& values) {
  for (size_t i = 0; i < atoms.size(); ++i) {
    absl::btree_set<std::string> symbols;
    atoms[i].CollectSymbols(&symbols);
    for (const std::string& s : symbols) {
      if (!values.contains(s)) {
        return absl::InvalidArgumentError(absl::StrCat("no value for '", s, "' in `", atoms[i].ToString(), "`"));
      }
    }
    absl::StatusOr<bool> holds = AtomHolds(atoms[i], values);
    // Z3 could not produce an int64 (the value overflows, or x // 0):
    // GuardProgram fails such an atom, so the comparison does too.
    if (!holds.ok() || !*holds) return GuardVerdict{false, i};
  }
  return GuardVerdict{true, 0};
}

absl::StatusOr<bool> Z3GuardOracle::AllHold(absl::Span<const Predicate> atoms, const Assignment& values) {
  UnsatCoreResult result = z3_.UnsatCore(atoms, values);
  switch (result.verdict) {
    case Verdict::kRefuted:
      return true;  // nothing to explain: every atom holds
    case Verdict::kProven:
      return false;
    case Verdict::kUnknown:
      break;
  }
  return absl::DeadlineExceededError(absl::StrCat("Z3 could not decide the guard set: ", result.detail));
}

absl::StatusOr<std::vector<Predicate>> ParseGuardTexts(const std::vector<std::string>& texts) {
  std::vector<Predicate> atoms;
  for (const std::string& text : texts) {
    absl::StatusOr<Predicate> atom = ParsePredicate(text);
    if (!atom.ok()) return absl::InvalidArgumentError(absl::StrCat("guard `", text, "`: ", atom.status().message()));
    atoms.push_back(*std::move(atom));
  }
  return atoms;
}

}  // namespace shapeshift::tools
