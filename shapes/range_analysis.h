// Range analysis: a sound inclusive interval for every SymExpr, given what
// SymbolFacts knows about the symbols.
//
// It is the cheap first answer to a shape question (`is seq*4 <= 4096?`):
// interval arithmetic over the expression tree with floor semantics, in
// 128-bit intermediates. The bounds hold for every assignment consistent
// with the facts under which the expression evaluates without error (an
// evaluation that overflows int64 or divides by zero is an error, not a
// value). Not exact: correlated subterms (`x - x // 2`) get loose bounds;
// Z3 is the second, exact opinion.
#ifndef SHAPESHIFT_SHAPES_RANGE_ANALYSIS_H_
#define SHAPESHIFT_SHAPES_RANGE_ANALYSIS_H_

#include "absl/container/flat_hash_map.h"
#include "shapes/sym_expr.h"
#include "shapes/symbol_facts.h"

namespace shapeshift {

class RangeAnalysis {
 public:
  // `facts` must outlive the analysis.
  explicit RangeAnalysis(const SymbolFacts* facts) : facts_(facts) {}

  Interval Bounds(SymExpr e);
  // True when some intermediate of `e` could leave int64 (a bound was
  // clamped). Bounds(e) still holds whenever `e` itself evaluates, but an
  // expression the caller built without evaluating it (a difference of two
  // sides, say) is then no safe witness.
  bool Saturated(SymExpr e);

 private:
  struct Result {
    Interval bounds;
    bool saturated = false;
  };
  const Result& Analyze(SymExpr e);
  Interval Compute(SymExpr e, bool* saturated);
  Interval ComputeNode(SymExpr e);  // operands already analyzed

  const SymbolFacts* facts_;
  absl::flat_hash_map<SymExpr, Result> memo_;
};

}  // namespace shapeshift

#endif  // SHAPESHIFT_SHAPES_RANGE_ANALYSIS_H_
