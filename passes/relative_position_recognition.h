// Relative-position recognition: computes a tensor whose elements depend
// only on the difference of two position indices once per difference,
// instead of once per (row, column) pair, and lets its consumers read it
// from their loop indices.
//
// T5 and DeBERTa build relative positions as
//
//   D = Range_T[None, :] - Range_S[:, None]          [.., S, T]  (or Q - K)
//
// and map D through a chain of elementwise ops (the log-bucket function:
// Abs, Less, Log, Div, Mul, Cast, Min, Where, Clip, ...) whose other
// operands do not vary along S or T, possibly a Gather of a table by the
// bucket (T5's [num_buckets, heads] bias) and views or transposes that keep
// S and T adjacent. Every value of that region is a function of j - i only:
// element [.., i, j, ..] equals element j - i + (S - 1) of the same chain
// applied to the S + T - 1 differences
//
//   D1 = Range(d_min, d_min + S + T - 1, +-1)        [S + T - 1]
//
// So the pass clones the region onto D1 (O(S + T) work and memory instead
// of O(S * T)) and replaces each value the rest of the graph reads by
//
//   RelativePositionExpand(clone, S, T) {axis}   out[.., i, j, ..] = clone[.., j - i + S - 1, ..]
//
// (graph/op_table.h: shapeshift's op; a load at an index of the loop
// indices when lowered, codegen/lower/element_emitter.cc).
//
// Exact: each cloned op is applied to the same values (D1 holds exactly the
// values of D, each once), so every f32 result is bit for bit the graph's.
// A Gather's index check sees the same set of indices (every difference
// occurs in D when S, T >= 1, asked of the env), so a request fails exactly
// when the graph's would. The conditions are ShapeEnv questions with
// provenance {"relative-position-recognition", node, reason}: each ramp is a
// Range of step 1 seen through unit-dim views (optionally shifted by a known
// scalar) spanning D's last two dims, S >= 1 and T >= 1, ops keep S and T as
// two adjacent dims, operands outside the region are provably 1 along S and
// T (or one value repeated, ConstantOfShape/Expand of a scalar).
//
// Second step, rematerialization: a value computed from expansions by a few
// elementwise ops over operands constant along S or T (T5's
// Where(mask, bias, min) added to every layer's scores) is read by several
// layers. Each consumer that computes such a value inline — the additive
// mask of a last-axis Softmax, the indices of a Gather or GatherElements
// (DeBERTa's c2p/p2c positions) — gets its own copy of that small DAG, so
// fusion (passes/fusion.h) can put it in the consumer's kernel and no
// [.., S, T] tensor is stored at all. The predicates below are the one
// definition both this pass and fusion use.
#ifndef SHAPESHIFT_PASSES_RELATIVE_POSITION_RECOGNITION_H_
#define SHAPESHIFT_PASSES_RELATIVE_POSITION_RECOGNITION_H_

#include <vector>

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "shapes/shape_env.h"

namespace shapeshift::passes {

// True when some region was rewritten or some DAG rematerialized.
absl::StatusOr<bool> RecognizeRelativePositions(Graph& graph, ShapeEnv& env);

// The nodes computing `mask` (the additive mask of a softmax whose scores
// have shape `scores`) that its consumer can compute per element: a DAG of
// elementwise ops that contains a RelativePositionExpand and whose leaves
// are RelativePositionExpand inputs or values with a dim of 1 along the
// scores' last or second-to-last axis (O(size / S) or O(size / T) elements).
// Empty when `mask` is not such a value. Consumers first.
std::vector<Node*> RelativePositionMaskNodes(const Value* mask, const std::vector<SymExpr>& scores);

// The nodes computing a Gather's or GatherElements' `indices` from one
// RelativePositionExpand through Expand and unit-dim views (each a remap
// that reads every element of its input at least once, so the index check
// may read the expansion's input instead: asked of `env` for the Expands).
// Empty when `indices` is not such a value. Consumers first.
std::vector<Node*> RelativePositionIndexNodes(const Value* indices, ShapeEnv& env);

}  // namespace shapeshift::passes

#endif  // SHAPESHIFT_PASSES_RELATIVE_POSITION_RECOGNITION_H_
