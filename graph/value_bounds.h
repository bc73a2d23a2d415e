// Bounds on the values of an integer tensor that follow from how the graph
// computes it, not from any input's data: `Range(0, sequence)` holds
// 0..sequence-1, RoBERTa's position ids `CumSum(Cast(ids != pad)) * mask + 1`
// hold 0..sequence+1, a slice of a constant holds values of that constant.
//
// Shape inference uses it to derive the domain a model can serve: a Gather
// whose indices are bounded this way reads past the end of its table once
// the bound passes the table's rows (GPT-2's 1024 positions), so the rule
// asks whether the bound stays inside and, at import, narrows an undeclared
// dim to where it provably does (graph/README.md, "Model-implied dim
// ranges"). A tensor whose values come from input data (token ids) has no
// bounds: its Gather is checked at run time only.
#ifndef SHAPESHIFT_GRAPH_VALUE_BOUNDS_H_
#define SHAPESHIFT_GRAPH_VALUE_BOUNDS_H_

#include <optional>

#include "graph/graph.h"
#include "shapes/shape_env.h"
#include "shapes/sym_expr.h"

namespace shapeshift {

// Every element e of the tensor satisfies lo <= e <= hi (vacuous for an
// empty tensor). The bounds are symbolic in the env's dims.
struct ValueBounds {
  SymExpr lo;
  SymExpr hi;
};

// Bounds of `value`'s elements from its producers (see top of file), or
// nullopt when they depend on data or on an op the analysis does not know.
// The walk is bounded (a few dozen producers), asks `env` only CanProve
// questions (no guard is recorded), and needs the producers' shapes inferred.
std::optional<ValueBounds> DeriveValueBounds(const Value& value, ShapeEnv& env);

}  // namespace shapeshift

#endif  // SHAPESHIFT_GRAPH_VALUE_BOUNDS_H_
