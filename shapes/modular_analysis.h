// Modular analysis: a congruence fact `e ≡ r (mod m)` for every SymExpr.
//
// Range analysis cannot see divisibility: `seq*16 % 8 == 0` or
// `(seq + 15) // 16 * 16 % 16 == 0` are invisible to intervals but decide
// whether a vector loop needs a remainder. Congruences compose through
// + and *, floordiv and mod by constants, and min/max (as a union); anything
// else is "unknown" (m == 1). Sound for every assignment consistent with the
// facts under which the expression evaluates without error.
#ifndef SHAPESHIFT_SHAPES_MODULAR_ANALYSIS_H_
#define SHAPESHIFT_SHAPES_MODULAR_ANALYSIS_H_

#include "absl/container/flat_hash_map.h"
#include "shapes/sym_expr.h"
#include "shapes/symbol_facts.h"

namespace shapeshift {

class ModularAnalysis {
 public:
  // `facts` must outlive the analysis.
  explicit ModularAnalysis(const SymbolFacts* facts) : facts_(facts) {}

  Congruence Of(SymExpr e);

 private:
  Congruence Compute(SymExpr e);

  const SymbolFacts* facts_;
  absl::flat_hash_map<SymExpr, Congruence> memo_;
};

}  // namespace shapeshift

#endif  // SHAPESHIFT_SHAPES_MODULAR_ANALYSIS_H_
