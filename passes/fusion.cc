#include "passes/fusion.h"

#include <algorithm>

#include "passes/graph_rewrite.h"
#include "passes/internal/attention_groups.h"
#include "passes/internal/fusion_anchors.h"
#include "passes/internal/grouping.h"
#include "passes/op_classes.h"

namespace shapeshift::passes {
namespace {

using internal::Grouping;

// Phase 2 for one seed: grows the group backward through producers.
void GrowElementwiseGroup(Grouping& g, int gid) {
  Group& group = g.group(gid);
  const std::vector<SymExpr>& domain = group.elementwise.domain;
  bool grew = true;
  while (grew) {
    grew = false;
    for (size_t k = 0; k < group.nodes.size() && !grew; ++k) {
      const Node* n = group.nodes[k];
      for (int i = 0; i < n->num_inputs() && !grew; ++i) {
        Value* v = n->input(i);
        if (v == nullptr || IsShapeOperand(*n, i)) continue;
        Node* p = v->producer();
        // A RelativePositionExpand is an index remap the emitter inlines like Transpose.
        const bool remap = p != nullptr && p->op_type() == "RelativePositionExpand";
        if (p == nullptr || p->num_outputs() != 1 || !(IsElementwiseOp(*p) || remap) || !g.ReadOnlyBy(v, gid) ||
            !g.CanAdd(p, gid) ||
            !ShapesEqual(g.env(), v->type().shape, domain,
                         Provenance{"fusion", p->name(), "producer has the group's domain"})) {
          continue;
        }
        g.Add(p, gid);
        grew = true;
      }
    }
  }
}

}  // namespace

absl::StatusOr<FusionPlan> PlanFusion(const Graph& graph, ShapeEnv& env, const FusionOptions& options) {
  Grouping g(graph, env);
  std::vector<Node*> order = graph.nodes();
  // Matmuls first: their operand transposes and epilogues take precedence.
  // Softmaxes second: the views between a softmax and the Add of its bias
  // (BLOOM's ALiBi) join the softmax's group before they anchor views.
  auto phase = [](const Node& node) {
    if (IsMatmulOp(node)) return 0;
    return node.op_type() == "Softmax" || node.op_type() == "CausalSoftmax" ? 1 : 2;
  };
  for (int current : {0, 1, 2}) {
    for (Node* node : order) {
      if (phase(*node) != current || g.IsAssigned(node) || g.IsCompileTime(node)) continue;
      internal::BuildAnchoredGroup(g, node);
    }
  }
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node* node = *it;
    if (g.IsAssigned(node) || g.IsCompileTime(node)) continue;
    int gid = g.NewGroup(GroupKind::kElementwise, node);
    g.group(gid).elementwise.domain = node->output(0)->type().shape;
    GrowElementwiseGroup(g, gid);
  }
  if (options.fuse_attention) internal::MergeAttentionGroups(g, options.attention_max_head_dim);
  absl::StatusOr<FusionPlan> plan = g.Finish();
  if (!plan.ok()) return plan.status();
  if (absl::Status s = VerifyFusionPlan(graph, *plan); !s.ok()) return s;
  return plan;
}

}  // namespace shapeshift::passes
