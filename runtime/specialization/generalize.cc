#include "runtime/specialization/generalize.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace shapeshift::runtime {

absl::StatusOr<std::vector<GuardAtom>> DropImpliedAtoms(const Predicate& domain, std::vector<GuardAtom> atoms,
                                                        Z3Bridge& z3) {
  if (atoms.empty()) return atoms;
  std::vector<Predicate> predicates;
  predicates.reserve(atoms.size());
  for (const GuardAtom& a : atoms) predicates.push_back(a.predicate);
  SimplifyResult simplified = z3.Simplify(domain, predicates);
  if (simplified.consistency == Verdict::kRefuted) {
    std::vector<std::string> texts;
    for (const Predicate& p : predicates) texts.push_back(p.ToString());
    return absl::InternalError(absl::StrCat("guard set contradicts itself within the declared domain: ",
                                            absl::StrJoin(texts, " && ")));
  }
  if (simplified.consistency == Verdict::kUnknown) return atoms;
  std::vector<GuardAtom> kept;
  kept.reserve(simplified.kept.size());
  for (size_t i : simplified.kept) kept.push_back(std::move(atoms[i]));
  return kept;
}

}  // namespace shapeshift::runtime
