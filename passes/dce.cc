#include "passes/dce.h"

#include <algorithm>

#include "passes/graph_rewrite.h"

namespace shapeshift::passes {

absl::StatusOr<bool> EliminateDeadCode(Graph& graph) {
  bool changed = false;
  std::vector<Node*> nodes = graph.nodes();
  // Reverse order: removing a consumer first frees its producers.
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    Node* node = *it;
    bool dead = std::none_of(node->outputs().begin(), node->outputs().end(), [&](Value* v) {
      return v->HasUses() || IsGraphOutput(graph, v);
    });
    if (!dead) continue;
    if (absl::Status s = graph.RemoveNode(node); !s.ok()) return s;
    changed = true;
  }
  size_t before = graph.constants().size();
  graph.RemoveUnusedConstants();
  return changed || graph.constants().size() != before;
}

}  // namespace shapeshift::passes
