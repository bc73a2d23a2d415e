// Symbolic shape inference: fills in each node's output TensorTypes (and,
// for small integer tensors, their elements as SymExprs — shape values) from
// its inputs, asking the ShapeEnv whenever a rule needs a shape fact.
//
// Rules never guess. Where a rule needs to know that two dims are equal (a
// broadcast where neither dim is provably 1, a MatMul contraction dim, a
// Concat's non-axis dims) it asks `env.Query(pred, {"shape-inference",
// node, reason})`: a proven answer needs no guard; a specialized answer is
// recorded as a guard by the env; kUnknown is an error naming the node and
// the two dims (the model is not valid over the whole declared domain).
//
// Model-implied dim ranges (import only): when such an equality is unknown
// only because an input dim the caller left undeclared has the default
// range, and the model itself works on part of it (BERT's 512 positions), the
// dim's range is narrowed to the widest part where the equality is proven
// and a note says which node needed it. The same for a Gather whose indices
// are bounded by shapes (graph/value_bounds.h: GPT-2's positions
// `Range(0, sequence)` into a 1024-row table): the dim is narrowed to where
// every index provably stays inside the table. A declared dim is never narrowed: the
// error says the range that would work. See graph/README.md for why this is
// sound.
//
// Dims that depend on tensor *data* rather than shapes (Range over runtime
// values, a Reshape whose target is not computable, NonZero-like sizes) get
// fresh symbols `dyn<n>` in [0, 2^31-1]: the interpreter binds them from the
// first tensor that shows them.
#ifndef SHAPESHIFT_GRAPH_SHAPE_INFERENCE_H_
#define SHAPESHIFT_GRAPH_SHAPE_INFERENCE_H_

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/container/btree_set.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "graph/graph.h"
#include "shapes/predicate.h"
#include "shapes/shape_env.h"

namespace shapeshift {

// What the importer tells shape inference about the model's input dims, so
// it may narrow the ones nobody declared (see top of file).
struct DomainNarrowing {
  std::set<std::string> declared;    // ranges from the caller or the model's metadata
  std::set<std::string> undeclared;  // at the default range: may be narrowed
  std::vector<std::string> notes;    // one sentence per narrowing, for ImportedModel::notes
};

// What a shape rule sees of one node, and how it reports its results.
class InferenceContext {
 public:
  InferenceContext(Node& node, ShapeEnv& env, int opset, DomainNarrowing* narrowing = nullptr)
      : node_(node), env_(env), opset_(opset), narrowing_(narrowing) {}

  const Node& node() const { return node_; }
  const std::string& op_type() const { return node_.op_type(); }
  const Attributes& attrs() const { return node_.attrs(); }
  int opset() const { return opset_; }
  ShapeEnv& env() { return env_; }

  int num_inputs() const { return node_.num_inputs(); }
  int num_outputs() const { return node_.num_outputs(); }
  bool HasInput(int i) const { return node_.input(i) != nullptr; }
  const TensorType& input_type(int i) const { return node_.input(i)->type(); }
  DType input_dtype(int i) const { return input_type(i).dtype; }
  const std::vector<SymExpr>& input_shape(int i) const { return input_type(i).shape; }
  int64_t input_rank(int i) const { return input_type(i).rank(); }
  // Elements of input i when known (shape values / small constants).
  const std::optional<std::vector<SymExpr>>& input_elements(int i) const;
  // Elements of input i as plain integers when all are constants.
  std::optional<std::vector<int64_t>> input_constant_ints(int i) const;
  const Tensor* input_constant(int i) const;

  void SetOutput(int i, TensorType type, std::optional<std::vector<SymExpr>> elements = std::nullopt);

  // InvalidArgument "node 'name' (Op): <message>".
  absl::Status Error(absl::string_view message) const;

  // The env's answer to `question`, asked with this node's provenance.
  Answer Ask(const Predicate& question, absl::string_view reason);
  // Ask, and turn kUnknown into Error("cannot decide <question>: <reason>").
  absl::StatusOr<bool> Decide(const Predicate& question, absl::string_view reason);
  bool CanProve(const Predicate& p) { return env_.CanProve(p); }
  // Min/Max that collapse when the env proves one side is the answer.
  SymExpr SimplifiedMin(SymExpr a, SymExpr b);
  SymExpr SimplifiedMax(SymExpr a, SymExpr b);
  // A fresh symbol for a data-dependent dim (see top of file).
  SymExpr DataDependentDim();
  // For a dim equality the env answered kUnknown, before the rule fails with
  // `error`: when the question mentions exactly one input dim and keeping its
  // lower bound some smaller maximum makes the question provable, an
  // undeclared dim is narrowed to the widest such range (with a note) and the
  // result is OK; for a declared dim `error` is returned extended by the
  // range that works. An order question on several input dims (`past_sequence
  // + sequence - 1 <= 1023`) becomes a DomainConstraint of the env instead
  // (ConstrainToProve). Otherwise (no import, other symbols, no such range)
  // `error` unchanged. `need` says in the note what the node needs (default
  // "needs <question>").
  absl::Status NarrowToProve(const Predicate& question, absl::Status error, absl::string_view need = {});
  // At import, a sentence for ImportedModel::notes about this node ("node
  // 'name' (Op) " + text); nothing otherwise.
  void Note(absl::string_view text);

 private:
  // NarrowToProve's case of several input dims: the question, as a bound
  // users read (`past_sequence + sequence <= 1024`), becomes a relation of
  // the domain with a note — when it leaves some point of the domain and
  // both ends of every declared range (else `error`, extended by the
  // relation) — and each undeclared dim's range shrinks to what the
  // relation leaves it. Equalities between dims (broadcasts) stay `error`.
  absl::Status ConstrainToProve(const Predicate& question, const absl::btree_set<std::string>& symbols,
                                absl::Status error, absl::string_view need);

  Node& node_;
  ShapeEnv& env_;
  int opset_;
  DomainNarrowing* narrowing_;
};

// Infers the outputs of one node; an error names the node. `narrowing` is
// given by the importer only (see top of file).
absl::Status InferNode(Node& node, ShapeEnv& env, int opset, DomainNarrowing* narrowing = nullptr);
// Infers every node in topological order.
absl::Status InferShapes(Graph& graph, ShapeEnv& env);

}  // namespace shapeshift

#endif  // SHAPESHIFT_GRAPH_SHAPE_INFERENCE_H_
