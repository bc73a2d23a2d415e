#include "tests/fuzz/checks/expr_checks.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "shapes/guard_program.h"
#include "shapes/predicate.h"
#include "shapes/sym_expr.h"
#include "tests/fuzz/checks/assignments.h"
#include "tests/fuzz/checks/reference_expr.h"

namespace shapeshift::fuzz {
namespace {

constexpr int kAssignmentsPerInput = 24;
constexpr size_t kMaxGuardAtoms = 16;

std::string Quote(absl::string_view text) { return absl::StrCat("`", text, "`"); }

// Whether some `//` or `%` in the reference tree divides by a divisor that
// is 0 wherever it has a value (at least once). The parser refuses a divisor
// that folds to the constant 0 (`seq % 0`, `x // (y - y)`: shapes/parser.cc);
// the grammar itself has no such rule, so that refusal is checked here.
bool HasZeroDivisor(const RefNode& node, absl::string_view text) {
  if (node.kind == RefNode::Kind::kFloorDiv || node.kind == RefNode::Kind::kMod) {
    const RefNode& divisor = *node.operands[1];
    absl::btree_set<std::string> symbols;
    CollectReferenceSymbols(divisor, &symbols);
    bool evaluated = false, always_zero = true;
    for (const Assignment& values : AssignmentsFor(symbols, text, kAssignmentsPerInput)) {
      std::optional<int64_t> v = EvaluateReferenceExpr(divisor, values);
      if (!v) continue;
      evaluated = true;
      always_zero = always_zero && *v == 0;
    }
    if (evaluated && always_zero) return true;
  }
  for (const std::unique_ptr<RefNode>& operand : node.operands) {
    if (HasZeroDivisor(*operand, text)) return true;
  }
  return false;
}

// Parser and reference must agree on what is in the grammar, except that the
// parser refuses a zero divisor (with an error saying so).
Violation CompareAcceptance(absl::string_view text, bool parser_ok, const absl::Status& parser_status,
                            const RefParse& reference) {
  const bool reference_ok = reference.outcome == RefParse::Outcome::kParsed;
  if (parser_ok && !reference_ok) {
    return absl::StrCat("parser accepts ", Quote(text), ", which is not in the grammar");
  }
  if (!parser_ok && reference_ok && absl::StrContains(parser_status.message(), "division by zero")) {
    if (HasZeroDivisor(*reference.root, text)) return std::nullopt;
    return absl::StrCat("parser reports division by zero in ", Quote(text),
                        ", where no divisor is 0: ", parser_status.ToString());
  }
  if (!parser_ok && reference_ok) {
    return absl::StrCat("parser rejects ", Quote(text), ", which is in the grammar: ",
                        parser_status.ToString());
  }
  if (!parser_ok && parser_status.message().empty()) {
    return absl::StrCat("parser rejects ", Quote(text), " with an empty message");
  }
  return std::nullopt;
}

absl::flat_hash_map<std::string, SymExpr> ConstantsFor(const Assignment& values) {
  absl::flat_hash_map<std::string, SymExpr> map;
  for (const auto& [name, value] : values) map.emplace(name, SymExpr(value));
  return map;
}

// The shared property of both text languages: the parser accepts exactly what
// the reference grammar accepts, printing re-parses to the identical object,
// and the canonical form (and its substitution by constants) evaluates like
// the text as written wherever both evaluate. T is SymExpr or Predicate.
template <typename T, typename Parse, typename RefEvaluate>
Violation CheckParsedText(absl::string_view text, Parse parse, RefParse reference,
                          RefEvaluate ref_evaluate) {
  absl::StatusOr<T> parsed = parse(text);
  if (reference.outcome == RefParse::Outcome::kTooDeep) return std::nullopt;
  if (Violation v = CompareAcceptance(text, parsed.ok(), parsed.status(), reference)) return v;
  if (!parsed.ok()) return std::nullopt;

  const std::string printed = parsed->ToString();
  absl::StatusOr<T> reparsed = parse(printed);
  if (!reparsed.ok()) {
    return absl::StrCat(Quote(text), " prints as ", Quote(printed),
                        ", which does not parse: ", reparsed.status().ToString());
  }
  if (*reparsed != *parsed) {
    return absl::StrCat(Quote(text), " prints as ", Quote(printed), ", which parses to ",
                        Quote(reparsed->ToString()));
  }

  absl::btree_set<std::string> symbols;
  CollectReferenceSymbols(*reference.root, &symbols);
  for (const Assignment& values : AssignmentsFor(symbols, text, kAssignmentsPerInput)) {
    auto expected = ref_evaluate(*reference.root, values);
    auto canonical = parsed->Evaluate(values);
    if (expected && canonical.ok() && *expected != *canonical) {
      return absl::StrCat(Quote(text), " at ", AssignmentToString(values), " is ", *expected,
                          " but its canonical form ", Quote(printed), " gives ", *canonical);
    }
    T substituted = parsed->Substitute(ConstantsFor(values));
    auto folded = substituted.Evaluate({});
    if (expected && folded.ok() && *expected != *folded) {
      return absl::StrCat(Quote(text), " at ", AssignmentToString(values), " is ", *expected,
                          " but substituting the values gives ", Quote(substituted.ToString()));
    }
  }
  return std::nullopt;
}

}  // namespace

Violation CheckSymExprText(absl::string_view text) {
  return CheckParsedText<SymExpr>(
      text, [](absl::string_view t) { return ParseSymExpr(t); }, ParseReferenceExpr(text),
      [](const auto& root, const Assignment& v) { return EvaluateReferenceExpr(root, v); });
}

Violation CheckPredicateText(absl::string_view text) {
  return CheckParsedText<Predicate>(
      text, [](absl::string_view t) { return ParsePredicate(t); }, ParseReferencePredicate(text),
      [](const auto& root, const Assignment& v) { return EvaluateReferencePredicate(root, v); });
}

Violation CheckGuardProgramText(absl::string_view text) {
  std::vector<Predicate> atoms;
  absl::btree_set<std::string> symbols;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (atoms.size() == kMaxGuardAtoms) break;
    if (ParseReferencePredicate(line).outcome == RefParse::Outcome::kTooDeep) continue;
    absl::StatusOr<Predicate> atom = ParsePredicate(line);
    if (!atom.ok()) continue;
    atom->CollectSymbols(&symbols);
    atoms.push_back(*std::move(atom));
  }
  if (atoms.empty()) return std::nullopt;

  absl::StatusOr<GuardProgram> sorted = GuardProgram::Compile(atoms);
  if (!sorted.ok()) {
    return absl::StrCat("GuardProgram::Compile fails on ", Quote(text), ": ",
                        sorted.status().ToString());
  }
  // A caller-chosen order: reversed, with a slot no atom reads in front.
  std::vector<std::string> custom_order = {"unused_slot_"};
  custom_order.insert(custom_order.end(), symbols.rbegin(), symbols.rend());
  if (symbols.contains(custom_order[0])) custom_order.erase(custom_order.begin());
  absl::StatusOr<GuardProgram> custom = GuardProgram::Compile(atoms, custom_order);
  if (!custom.ok()) {
    return absl::StrCat("GuardProgram::Compile with slots in caller order fails on ", Quote(text),
                        ": ", custom.status().ToString());
  }

  for (const Assignment& values : AssignmentsFor(symbols, text, kAssignmentsPerInput)) {
    size_t expected_fail = atoms.size();
    for (size_t k = 0; k < atoms.size(); ++k) {
      absl::StatusOr<bool> holds = atoms[k].Evaluate(values);
      if (!holds.ok() || !*holds) {
        expected_fail = k;
        break;
      }
    }
    for (const GuardProgram* program : {&*sorted, &*custom}) {
      std::vector<int64_t> slots;
      for (const std::string& name : program->slots()) {
        auto it = values.find(name);
        slots.push_back(it == values.end() ? 0 : it->second);
      }
      GuardVerdict got = program->Evaluate(slots);
      const size_t got_fail = got.pass ? atoms.size() : got.failed_atom;
      if (got_fail != expected_fail) {
        auto describe = [&](size_t k) {
          return k == atoms.size() ? std::string("pass")
                                   : absl::StrCat("fail at atom ", k, " ", Quote(atoms[k].ToString()));
        };
        return absl::StrCat("guard set ", Quote(text), " at ", AssignmentToString(values),
                            ": Predicate::Evaluate says ", describe(expected_fail),
                            ", GuardProgram (slots ", absl::StrJoin(program->slots(), ","),
                            ") says ", describe(got_fail));
      }
    }
  }
  return std::nullopt;
}

}  // namespace shapeshift::fuzz
