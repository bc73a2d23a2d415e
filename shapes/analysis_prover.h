// AnalysisProver: decides predicates with range and modular analysis alone —
// the cheap first stage of every ShapeEnv question, before Z3.
//
// Three-valued: true / false when the analyses decide it for every
// assignment consistent with the facts, std::nullopt otherwise (then Z3 is
// asked). Comparisons look at the bounds of both sides and of their
// difference (which cancels shared terms: `seq + 1 > seq`); == and
// divisibility also use congruences (`16*k + 3 == 0` is false).
#ifndef SHAPESHIFT_SHAPES_ANALYSIS_PROVER_H_
#define SHAPESHIFT_SHAPES_ANALYSIS_PROVER_H_

#include <optional>

#include "shapes/modular_analysis.h"
#include "shapes/predicate.h"
#include "shapes/range_analysis.h"
#include "shapes/symbol_facts.h"

namespace shapeshift {

class AnalysisProver {
 public:
  // `facts` must outlive the prover.
  explicit AnalysisProver(const SymbolFacts* facts)
      : facts_(facts), ranges_(facts), congruences_(facts) {}

  std::optional<bool> Prove(const Predicate& p);

  RangeAnalysis& ranges() { return ranges_; }
  ModularAnalysis& congruences() { return congruences_; }

 private:
  std::optional<bool> ProveComparison(const Predicate& p);
  std::optional<bool> ProveDivisible(SymExpr e, int64_t divisor);

  const SymbolFacts* facts_;
  RangeAnalysis ranges_;
  ModularAnalysis congruences_;
};

}  // namespace shapeshift

#endif  // SHAPESHIFT_SHAPES_ANALYSIS_PROVER_H_
