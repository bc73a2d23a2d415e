#include "passes/matmul_layout.h"

#include <numeric>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "graph/shape_inference.h"
#include "passes/graph_rewrite.h"

namespace shapeshift::passes {

absl::StatusOr<bool> SplitMatmulOperandTransposes(Graph& graph, ShapeEnv& env) {
  bool changed = false;
  for (Node* matmul : graph.nodes()) {
    if (matmul->op_type() != "MatMul") continue;
    Value* b = matmul->input(1);
    Node* t = ProducerIs(b, "Transpose");
    if (t == nullptr || b->uses().size() != 1 || IsGraphOutput(graph, b)) continue;
    absl::StatusOr<std::vector<int64_t>> perm = t->attrs().GetInts("perm");
    if (!perm.ok() || perm->size() < 3) continue;
    std::vector<int64_t> layout = *perm;
    size_t r = layout.size();
    // Only when B's rows come from the input's innermost dim: then the split
    // leaves a transpose that keeps the innermost dim (contiguous rows).
    if (layout[r - 2] != static_cast<int64_t>(r) - 1) continue;
    std::swap(layout[r - 2], layout[r - 1]);
    std::vector<int64_t> identity(r);
    std::iota(identity.begin(), identity.end(), 0);
    if (layout == identity) continue;  // already a last-two swap
    std::vector<int64_t> swap = identity;
    std::swap(swap[r - 2], swap[r - 1]);
    Attributes first;
    first.Set("perm", layout);
    Node* relayout = graph.AddNode("Transpose", {t->input(0)}, 1, first, "", {""});
    if (absl::Status s = InferNode(*relayout, env, graph.opset()); !s.ok()) return s;
    Attributes second;
    second.Set("perm", swap);
    Node* swapped = graph.AddNode("Transpose", {relayout->output(0)}, 1, second, "", {""});
    if (absl::Status s = InferNode(*swapped, env, graph.opset()); !s.ok()) return s;
    if (!ShapesEqual(env, swapped->output(0)->type().shape, b->type().shape,
                     Provenance{"matmul-layout", t->name(), "split transpose keeps the shape"})) {
      return absl::InternalError(absl::StrCat("matmul-layout: splitting '", t->name(), "' changed its shape"));
    }
    swapped->output(0)->set_type(b->type());
    matmul->SetInput(1, swapped->output(0));
    changed = true;
  }
  if (changed) {
    if (absl::Status s = graph.TopologicalSort(); !s.ok()) return s;
  }
  return changed;
}

}  // namespace shapeshift::passes
