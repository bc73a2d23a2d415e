#include "passes/softmax_recognition.h"

#include <algorithm>
#include <optional>

#include "absl/container/flat_hash_set.h"
#include "passes/graph_rewrite.h"

namespace shapeshift::passes {
namespace {

constexpr char kPass[] = "softmax-recognition";

struct SoftmaxMatch {
  Value* x = nullptr;
  std::vector<Node*> nodes;  // topological order; the last is the Div
};

// True when `v` is used exactly by the nodes in `users` (each any number of times).
bool UsedOnlyBy(const Value* v, std::initializer_list<const Node*> users) {
  for (const Use& u : v->uses()) {
    if (std::find(users.begin(), users.end(), u.user) == users.end()) return false;
  }
  return true;
}

std::optional<SoftmaxMatch> MatchAt(Node* div) {
  if (div->op_type() != "Div") return std::nullopt;
  Node* sum = ProducerIs(div->input(1), "ReduceSum");
  Node* exp = ProducerIs(div->input(0), "Exp");
  if (sum == nullptr || exp == nullptr || sum->input(0) != exp->output(0) ||
      !ReducesLastAxisKeepDims(*sum) || SingleUser(sum->output(0)) != div ||
      !UsedOnlyBy(exp->output(0), {sum, div})) {
    return std::nullopt;
  }
  SoftmaxMatch m;
  m.x = exp->input(0);
  m.nodes = {exp, sum, div};
  if (Node* sub = ProducerIs(m.x, "Sub"); sub && SingleUser(sub->output(0)) == exp) {
    Node* max = ProducerIs(sub->input(1), "ReduceMax");
    if (max && max->input(0) == sub->input(0) && ReducesLastAxisKeepDims(*max) &&
        SingleUser(max->output(0)) == sub) {
      m.x = sub->input(0);
      m.nodes.insert(m.nodes.begin(), {max, sub});
    }
  }
  if (m.x->type().dtype != DType::kF32 || m.x->type().rank() == 0) return std::nullopt;
  return m;
}

}  // namespace

absl::StatusOr<bool> RecognizeSoftmax(Graph& graph, ShapeEnv& env) {
  bool changed = false;
  absl::flat_hash_set<const Node*> removed;  // by earlier rewrites in this sweep
  for (Node* node : graph.nodes()) {
    if (removed.contains(node)) continue;
    std::optional<SoftmaxMatch> m = MatchAt(node);
    if (!m) continue;
    Attributes attrs;
    attrs.Set("axis", m->x->type().rank() - 1);
    absl::StatusOr<Node*> softmax = ReplaceWithNewNode(graph, env, node->output(0), m->nodes,
                                                       "Softmax", {m->x}, attrs, kPass);
    if (!softmax.ok()) return softmax.status();
    removed.insert(m->nodes.begin(), m->nodes.end());
    changed = true;
  }
  return changed;
}

}  // namespace shapeshift::passes
