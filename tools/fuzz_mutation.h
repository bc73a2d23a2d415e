// The mutation self-test of `shapeshift fuzz --mutate-guards`: does the
// fuzzer have teeth?
//
// For every cache entry and every recorded guard atom, a mutant guard set
// drops the atom, and for an inequality with a constant bound another one
// weakens the bound by one (`seq <= 64` becomes `seq <= 65`). Each mutant
// is dispatched by hand — from the public CacheEntry: the mutated atoms
// compiled into a GuardProgram over the cache's slots — and every shape
// the mutant accepts but the real guards reject is run on the entry's
// Program. The mutant is killed when one of them gives a wrong result
// ("output mismatch") or the Program's own per-request guard check refuses
// it ("runtime check"); otherwise it survived.
//
// Which atoms count: Z3 asks whether the domain and the mutant's atoms
// imply the original atom. If they do, the mutant accepts exactly the same
// shapes — the atom was redundant (it can never be killed and is left out of
// the kill rate). If not, Z3's counterexample is a shape in the domain
// where only that atom fails — the atom is "needed" — and it is always one
// of the shapes tried, so a needed atom is exercised even when the fuzz
// cases never reached its region. A needed mutant that survives is either a
// hole in the fuzzer or a guard stronger than the code needs ("too
// strict"): the report says which atom and who asked it.
#ifndef SHAPESHIFT_TOOLS_FUZZ_MUTATION_H_
#define SHAPESHIFT_TOOLS_FUZZ_MUTATION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/fuzz_runner.h"

namespace shapeshift::tools {

struct MutantResult {
  int64_t entry_id = 0;
  std::string tier;
  std::string atom;        // the original atom
  std::string asked_by;    // its provenance
  std::string mutation;    // "drop" | "weaken"
  std::string mutant;      // the mutated atom ("" for drop)
  std::string necessity;   // "needed" | "redundant" | "unknown" (Z3 could not tell)
  bool killed = false;
  std::string killed_by;   // "output mismatch" | "runtime check"
  std::vector<int64_t> killing_shape;
  std::string detail;      // the kill's error or mismatch (or the allocation failure)
  int64_t shapes_tried = 0;
  int64_t shapes_over_budget = 0;  // skipped: over FuzzOptions::max_case_bytes (fuzz_budget.h)
  int64_t allocation_failures = 0; // shapes whose run failed to allocate: no verdict, a failure
};

struct MutationReport {
  std::vector<MutantResult> mutants;
  int64_t needed = 0;
  int64_t killed_needed = 0;
  int64_t killed = 0;
  int64_t allocation_failures = 0;  // over all mutants
  double kill_rate = 1.0;  // killed_needed / needed (1 when nothing is needed)
};

// Mutates every atom of every entry now in the runner's cache. Each mutant
// tries at most `max_shapes` shapes (Z3's witness first, then the run's
// visited shapes the mutant newly accepts); a shape over the runner's
// memory budget is skipped and counted, and a run that fails to allocate
// kills nothing (an allocation failure is not a guard check).
absl::StatusOr<MutationReport> RunGuardMutants(FuzzRunner& runner, int max_shapes);

}  // namespace shapeshift::tools

#endif  // SHAPESHIFT_TOOLS_FUZZ_MUTATION_H_
