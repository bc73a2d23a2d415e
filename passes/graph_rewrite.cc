#include "passes/graph_rewrite.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "graph/shape_inference.h"

namespace shapeshift::passes {

std::optional<double> ConstantScalar(const Value* v) {
  if (v == nullptr || !v->is_constant() || v->constant()->num_elements() != 1) return std::nullopt;
  return v->constant()->GetAsDouble(0);
}

bool IsConstantFilledWith(const Value* v, double x) {
  if (v == nullptr || !v->is_constant()) return false;
  const Tensor& t = *v->constant();
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    if (t.GetAsDouble(i) != x) return false;
  }
  return true;
}

std::optional<SymExpr> KnownScalar(const Value* v) {
  if (v == nullptr || !v->elements() || v->elements()->size() != 1) return std::nullopt;
  return (*v->elements())[0];
}

std::optional<int64_t> SoleNonUnitAxis(const std::vector<SymExpr>& shape) {
  std::optional<int64_t> axis;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d].AsConst() == 1) continue;
    if (axis) return std::nullopt;
    axis = static_cast<int64_t>(shape.size() - d);
  }
  return axis;
}

bool NearlyEqual(double a, double b, double tolerance) {
  return std::abs(a - b) <= tolerance * std::max(1.0, std::abs(b));
}

Value* OtherOperand(const Node& node, const Value* known) {
  if (node.num_inputs() != 2) return nullptr;
  if (node.input(0) == known) return node.input(1);
  if (node.input(1) == known) return node.input(0);
  return nullptr;
}

bool IsPerChannelConstant(const Value* v, int64_t n) {
  if (v == nullptr || !v->is_constant() || v->constant()->num_elements() != n) return false;
  const auto& shape = v->constant()->shape();
  return !shape.empty() && shape.back() == n;
}

Value* ChannelVector(Graph& graph, const Value* v, int64_t n, float fill) {
  if (v != nullptr && v->type().rank() == 1) return const_cast<Value*>(v);
  std::vector<float> data(n, fill);
  if (v != nullptr) {
    for (int64_t i = 0; i < n; ++i) data[i] = static_cast<float>(v->constant()->GetAsDouble(i));
  }
  return graph.AddConstant("", Tensor::FromVector<float>(DType::kF32, {n}, data));
}

bool IsGraphOutput(const Graph& graph, const Value* v) {
  const auto& outs = graph.outputs();
  return std::find(outs.begin(), outs.end(), v) != outs.end();
}

Node* ProducerIs(const Value* v, absl::string_view op_type) {
  if (v == nullptr || v->producer() == nullptr) return nullptr;
  return v->producer()->op_type() == op_type ? v->producer() : nullptr;
}

Node* SingleUser(const Value* v) {
  if (v == nullptr || v->uses().empty()) return nullptr;
  Node* user = v->uses().front().user;
  for (const Use& u : v->uses()) {
    if (u.user != user) return nullptr;
  }
  return user;
}

bool DimsEqual(ShapeEnv& env, SymExpr a, SymExpr b, const Provenance& provenance) {
  if (a == b) return true;
  return IsTrue(env.Query(Predicate::Eq(a, b), provenance));
}

bool ShapesEqual(ShapeEnv& env, const std::vector<SymExpr>& a, const std::vector<SymExpr>& b,
                 const Provenance& provenance) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!DimsEqual(env, a[i], b[i], provenance)) return false;
  }
  return true;
}

std::optional<std::vector<int64_t>> ReduceAxes(const Node& node, int64_t rank) {
  std::vector<int64_t> axes;
  if (node.attrs().Has("axes")) {
    absl::StatusOr<std::vector<int64_t>> a = node.attrs().GetInts("axes");
    if (!a.ok()) return std::nullopt;
    axes = *a;
  } else if (node.input(1) != nullptr) {
    const auto& elements = node.input(1)->elements();
    if (!elements) return std::nullopt;
    for (SymExpr e : *elements) {
      if (!e.AsConst()) return std::nullopt;
      axes.push_back(*e.AsConst());
    }
  }
  if (axes.empty()) {  // reduce everything (noop_with_empty_axes is not used by exporters)
    if (node.attrs().GetInt("noop_with_empty_axes", 0).value_or(1) != 0) return std::nullopt;
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  for (int64_t& a : axes) {
    if (a < -rank || a >= rank) return std::nullopt;
    if (a < 0) a += rank;
  }
  std::sort(axes.begin(), axes.end());
  return axes;
}

bool ReducesLastAxisKeepDims(const Node& node) {
  if (node.input(0) == nullptr) return false;
  int64_t rank = node.input(0)->type().rank();
  if (rank == 0 || node.attrs().GetInt("keepdims", 1).value_or(0) != 1) return false;
  std::optional<std::vector<int64_t>> axes = ReduceAxes(node, rank);
  return axes && axes->size() == 1 && (*axes)[0] == rank - 1;
}

absl::StatusOr<Node*> ReplaceWithNewNode(Graph& graph, ShapeEnv& env, Value* old_value,
                                         const std::vector<Node*>& dead_nodes,
                                         const std::string& op_type, std::vector<Value*> inputs,
                                         Attributes attrs, const std::string& pass_name) {
  const std::string name = old_value->name();
  const TensorType old_type = old_value->type();
  const std::string node_name = old_value->producer() ? old_value->producer()->name() : "";
  // A trial node checks the replacement's type before the graph is touched.
  Node* trial = graph.AddNode(op_type, inputs, 1, attrs);
  absl::Status inferred = InferNode(*trial, env, graph.opset());
  const TensorType new_type = trial->output(0)->type();
  if (absl::Status s = graph.RemoveNode(trial); !s.ok()) return s;
  if (!inferred.ok()) return absl::InternalError(absl::StrCat(pass_name, ": ", inferred.message()));
  if (new_type.dtype != old_type.dtype ||
      !ShapesEqual(env, new_type.shape, old_type.shape,
                   Provenance{pass_name, node_name, "replacement keeps the value's shape"})) {
    return absl::InternalError(absl::StrCat(pass_name, ": replacing '", name, "' by ", op_type,
                                            " would change its type from ", old_type.ToString(), " to ",
                                            new_type.ToString()));
  }
  // A placeholder holds old_value's uses (and graph-output slots) while the
  // dead nodes are removed, so the name is free for the new value.
  Value* placeholder = graph.AddConstant("", Tensor::Scalar(0.0f));
  graph.ReplaceAllUsesWith(old_value, placeholder);
  std::vector<Node*> order = dead_nodes;
  std::reverse(order.begin(), order.end());
  for (Node* n : order) {
    if (absl::Status s = graph.RemoveNode(n); !s.ok()) {
      return absl::InternalError(absl::StrCat(pass_name, ": ", s.message()));
    }
  }
  Node* node = graph.AddNode(op_type, std::move(inputs), 1, std::move(attrs),
                             graph.FindNode(node_name) ? "" : node_name, {name});
  if (absl::Status s = InferNode(*node, env, graph.opset()); !s.ok()) return s;
  node->output(0)->set_type(old_type);
  graph.ReplaceAllUsesWith(placeholder, node->output(0));
  graph.RemoveUnusedConstants();
  if (absl::Status s = graph.TopologicalSort(); !s.ok()) return s;
  return node;
}

}  // namespace shapeshift::passes
