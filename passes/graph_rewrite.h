// Small queries and rewrites shared by the graph passes.
//
// Why one file: every pass needs the same handful of questions ("is this a
// constant scalar?", "are these two shapes equal for every input?") and the
// same careful rewrite ("replace this subgraph by one node without changing
// the name a user sees"). Writing them once keeps the passes short and makes
// sure each shape fact goes through ShapeEnv::Query with provenance.
#ifndef SHAPESHIFT_PASSES_GRAPH_REWRITE_H_
#define SHAPESHIFT_PASSES_GRAPH_REWRITE_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/attributes.h"
#include "graph/graph.h"
#include "shapes/shape_env.h"

namespace shapeshift::passes {

// The value of a constant with exactly one element (any shape of size 1),
// converted to double; nullopt otherwise.
std::optional<double> ConstantScalar(const Value* v);
// True when `v` is a constant whose every element equals `x` (any shape).
bool IsConstantFilledWith(const Value* v, double x);
// The element of a one-element value whose element is known (a constant or
// a folded shape value such as GPT-2's past length); nullopt otherwise.
std::optional<SymExpr> KnownScalar(const Value* v);
// The axis (counted from the end: 1 is the last) of the only dim of `shape`
// that is not the constant 1; nullopt when there is none or several (a
// position vector viewed as [1, 1, seq, 1] has axis 2).
std::optional<int64_t> SoleNonUnitAxis(const std::vector<SymExpr>& shape);
// True when |a - b| <= tolerance * max(1, |b|).
bool NearlyEqual(double a, double b, double tolerance = 1e-4);

// The other operand of a binary node, given one of them; nullptr when
// `known` is neither.
Value* OtherOperand(const Node& node, const Value* known);
// A constant with exactly n elements that broadcasts as a per-last-dim
// vector ([n], [1, n], [1, 1, n], ...): a normalization's gamma or beta.
bool IsPerChannelConstant(const Value* v, int64_t n);
// `v` (such a constant) as a [n] f32 constant, or n copies of `fill` when
// `v` is null.
Value* ChannelVector(Graph& graph, const Value* v, int64_t n, float fill);

// True when `v` is a graph output (its name is visible to users).
bool IsGraphOutput(const Graph& graph, const Value* v);

// The node producing `v` if it has op type `op_type`; nullptr otherwise.
Node* ProducerIs(const Value* v, absl::string_view op_type);
// The single node reading `v`, or nullptr when `v` has zero or several uses
// (several uses by the same node count as one user).
Node* SingleUser(const Value* v);

// Asks the env whether dims `a` and `b` are equal for every input
// (identical expressions need no question). True only for a proven or
// specialized-true answer; the question carries `provenance`.
bool DimsEqual(ShapeEnv& env, SymExpr a, SymExpr b, const Provenance& provenance);
bool ShapesEqual(ShapeEnv& env, const std::vector<SymExpr>& a, const std::vector<SymExpr>& b,
                 const Provenance& provenance);

// The reduction axes of a Reduce* node (attribute or, at newer opsets, the
// constant second input), normalized to [0, rank); nullopt when unknown.
std::optional<std::vector<int64_t>> ReduceAxes(const Node& node, int64_t rank);
// True when `node` reduces exactly the last axis with keepdims=1.
bool ReducesLastAxisKeepDims(const Node& node);

// Replaces `old_value` by the single output of a new node
// `op_type(inputs) {attrs}` and removes `dead_nodes` (which must become
// unused once `old_value` is replaced). The new value keeps `old_value`'s
// name and type, so users and graph outputs see no difference. The new
// node's inferred type must provably equal the old one; if not, this fails
// before touching the graph. Re-sorts the graph.
absl::StatusOr<Node*> ReplaceWithNewNode(Graph& graph, ShapeEnv& env, Value* old_value,
                                         const std::vector<Node*>& dead_nodes,
                                         const std::string& op_type, std::vector<Value*> inputs,
                                         Attributes attrs, const std::string& pass_name);

}  // namespace shapeshift::passes

#endif  // SHAPESHIFT_PASSES_GRAPH_REWRITE_H_
