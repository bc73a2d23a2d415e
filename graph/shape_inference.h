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
// Dims that depend on tensor *data* rather than shapes (Range over runtime
// values, a Reshape whose target is not computable, NonZero-like sizes) get
// fresh symbols `dyn<n>` in [0, 2^31-1]: the interpreter binds them from the
// first tensor that shows them.
#ifndef SHAPESHIFT_GRAPH_SHAPE_INFERENCE_H_
#define SHAPESHIFT_GRAPH_SHAPE_INFERENCE_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "graph/graph.h"
#include "shapes/predicate.h"
#include "shapes/shape_env.h"

namespace shapeshift {

// What a shape rule sees of one node, and how it reports its results.
class InferenceContext {
 public:
  InferenceContext(Node& node, ShapeEnv& env, int opset) : node_(node), env_(env), opset_(opset) {}

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

 private:
  Node& node_;
  ShapeEnv& env_;
  int opset_;
};

// Infers the outputs of one node; an error names the node.
absl::Status InferNode(Node& node, ShapeEnv& env, int opset);
// Infers every node in topological order.
absl::Status InferShapes(Graph& graph, ShapeEnv& env);

}  // namespace shapeshift

#endif  // SHAPESHIFT_GRAPH_SHAPE_INFERENCE_H_
