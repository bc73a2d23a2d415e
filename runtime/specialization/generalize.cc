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

namespace {

// Does every input in `domain` that passes `inner` also pass `outer`?
bool RegionWithin(const Predicate& domain, const std::vector<GuardAtom>& inner, const std::vector<GuardAtom>& outer,
                  Z3Bridge& z3) {
  std::vector<Predicate> assumptions = {domain};
  for (const GuardAtom& g : inner) assumptions.push_back(g.predicate);
  for (const GuardAtom& g : outer) {
    if (z3.Implies(assumptions, g.predicate).verdict != Verdict::kProven) return false;
  }
  return true;
}

}  // namespace

std::vector<int64_t> SubsumedEntries(const Predicate& domain, const CacheEntry& added,
                                     absl::Span<const std::shared_ptr<const CacheEntry>> entries, Z3Bridge& z3) {
  std::vector<int64_t> subsumed;
  for (const std::shared_ptr<const CacheEntry>& e : entries) {
    if (e->id == added.id || static_cast<int>(e->tier) > static_cast<int>(added.tier)) continue;
    if (!RegionWithin(domain, e->guards, added.guards, z3)) continue;
    if (e->tier == added.tier && !RegionWithin(domain, added.guards, e->guards, z3)) continue;
    subsumed.push_back(e->id);
  }
  return subsumed;
}

std::vector<Interval> ServedIntervals(const std::vector<GuardAtom>& guards, const std::vector<std::string>& slots,
                                      absl::Span<const int64_t> at, const std::vector<Interval>& ranges,
                                      Z3Bridge& z3) {
  if (at.empty()) return ranges;
  Assignment values;
  for (size_t i = 0; i < slots.size(); ++i) values[slots[i]] = at[i];
  std::vector<Predicate> atoms;
  for (const GuardAtom& g : guards) atoms.push_back(g.predicate);
  std::vector<Interval> out;
  for (size_t i = 0; i < slots.size(); ++i) {
    IntervalResult r = z3.WidestInterval(slots[i], values, atoms, ranges[i]);
    out.push_back(r.verdict == Verdict::kProven ? Interval{r.lo, r.hi} : Interval::Point(at[i]));
  }
  return out;
}

}  // namespace shapeshift::runtime
