#include "runtime/specialization/coverage.h"

#include <vector>

namespace shapeshift::runtime {

CoverageResult ProveCacheCoverage(const SpecializationCache& cache, const Predicate& domain, Z3Bridge& z3) {
  std::vector<std::vector<Predicate>> guard_sets;
  for (const std::shared_ptr<const CacheEntry>& e : cache.entries()) {
    std::vector<Predicate> atoms;
    for (const GuardAtom& g : e->guards) atoms.push_back(g.predicate);
    guard_sets.push_back(std::move(atoms));
  }
  return z3.Coverage(domain, guard_sets);
}

}  // namespace shapeshift::runtime
