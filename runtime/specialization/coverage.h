// Coverage of a cache: does every shape in the declared domain have an entry
// that serves it without a compile?
//
// Why: "no recompilation storm" is a claim about all shapes, not the ones a
// test happened to send. Z3 proves that the union of the entries' guard sets
// covers the domain, or returns a real shape that no entry serves — exactly
// the shape that would still trigger a compile. `shapeshift prove MODEL`
// (issue 5, item 5) is the CLI over this.
#ifndef SHAPESHIFT_RUNTIME_SPECIALIZATION_COVERAGE_H_
#define SHAPESHIFT_RUNTIME_SPECIALIZATION_COVERAGE_H_

#include "runtime/specialization/specialization_cache.h"
#include "shapes/predicate.h"
#include "shapes/z3_bridge.h"

namespace shapeshift::runtime {

// kProven: every point of `domain` passes some entry's guards; kRefuted:
// `witness` (checked by our evaluator) passes none; kUnknown: the solver
// could not tell (`detail` says why).
CoverageResult ProveCacheCoverage(const SpecializationCache& cache, const Predicate& domain, Z3Bridge& z3);

}  // namespace shapeshift::runtime

#endif  // SHAPESHIFT_RUNTIME_SPECIALIZATION_COVERAGE_H_
