#include "passes/layer_norm_recognition.h"

#include <optional>

#include "absl/container/flat_hash_set.h"
#include "passes/graph_rewrite.h"

namespace shapeshift::passes {
namespace {

constexpr char kPass[] = "layer-norm-recognition";

struct LayerNormMatch {
  Value* x = nullptr;
  Value* gamma = nullptr;  // constant; null when absent
  Value* beta = nullptr;   // constant; null when absent
  float epsilon = 0;
  Value* output = nullptr;
  std::vector<Node*> nodes;  // topological order
};

std::optional<LayerNormMatch> MatchAt(Node* mean_node) {
  if (mean_node->op_type() != "ReduceMean" || !ReducesLastAxisKeepDims(*mean_node)) return std::nullopt;
  LayerNormMatch m;
  m.x = mean_node->input(0);
  if (m.x->type().dtype != DType::kF32) return std::nullopt;
  std::optional<int64_t> n = m.x->type().shape.back().AsConst();
  if (!n) return std::nullopt;
  Node* sub = SingleUser(mean_node->output(0));
  if (sub == nullptr || sub->op_type() != "Sub" || sub->input(0) != m.x ||
      sub->input(1) != mean_node->output(0)) {
    return std::nullopt;
  }
  Value* d = sub->output(0);
  Node* square = nullptr;
  Node* div = nullptr;
  for (const Use& u : d->uses()) {
    Node* user = u.user;
    bool is_square = (user->op_type() == "Pow" && user->input(0) == d &&
                      ConstantScalar(user->input(1)) == 2.0) ||
                     (user->op_type() == "Mul" && user->input(0) == d && user->input(1) == d);
    if (is_square && (square == nullptr || square == user)) {
      square = user;
    } else if (user->op_type() == "Div" && user->input(0) == d && div == nullptr) {
      div = user;
    } else {
      return std::nullopt;
    }
  }
  if (square == nullptr || div == nullptr) return std::nullopt;
  Node* var = SingleUser(square->output(0));
  if (var == nullptr || var->op_type() != "ReduceMean" || !ReducesLastAxisKeepDims(*var)) {
    return std::nullopt;
  }
  Node* add_eps = SingleUser(var->output(0));
  if (add_eps == nullptr || add_eps->op_type() != "Add") return std::nullopt;
  std::optional<double> eps = ConstantScalar(OtherOperand(*add_eps, var->output(0)));
  if (!eps) return std::nullopt;
  m.epsilon = static_cast<float>(*eps);
  Node* sqrt = SingleUser(add_eps->output(0));
  if (sqrt == nullptr || sqrt->op_type() != "Sqrt" || SingleUser(sqrt->output(0)) != div ||
      div->input(1) != sqrt->output(0)) {
    return std::nullopt;
  }
  m.nodes = {mean_node, sub, square, var, add_eps, sqrt, div};
  m.output = div->output(0);
  if (Node* mul = SingleUser(m.output); mul && mul->op_type() == "Mul") {
    Value* gamma = OtherOperand(*mul, m.output);
    if (IsPerChannelConstant(gamma, *n)) {
      m.gamma = gamma;
      m.nodes.push_back(mul);
      m.output = mul->output(0);
    }
  }
  if (Node* add = SingleUser(m.output); add && add->op_type() == "Add") {
    Value* beta = OtherOperand(*add, m.output);
    if (IsPerChannelConstant(beta, *n)) {
      m.beta = beta;
      m.nodes.push_back(add);
      m.output = add->output(0);
    }
  }
  return m;
}

}  // namespace

absl::StatusOr<bool> RecognizeLayerNorm(Graph& graph, ShapeEnv& env) {
  bool changed = false;
  absl::flat_hash_set<const Node*> removed;  // by earlier rewrites in this sweep
  for (Node* node : graph.nodes()) {
    if (removed.contains(node)) continue;
    std::optional<LayerNormMatch> m = MatchAt(node);
    if (!m) continue;
    int64_t n = *m->x->type().shape.back().AsConst();
    std::vector<Value*> inputs = {m->x, ChannelVector(graph, m->gamma, n, 1.0f)};
    if (m->beta != nullptr) inputs.push_back(ChannelVector(graph, m->beta, n, 0.0f));
    Attributes attrs;
    attrs.Set("axis", int64_t{-1});
    attrs.Set("epsilon", m->epsilon);
    absl::StatusOr<Node*> ln = ReplaceWithNewNode(graph, env, m->output, m->nodes,
                                                  "LayerNormalization", inputs, attrs, kPass);
    if (!ln.ok()) return ln.status();
    removed.insert(m->nodes.begin(), m->nodes.end());
    changed = true;
  }
  return changed;
}

}  // namespace shapeshift::passes
