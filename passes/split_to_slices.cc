#include "passes/split_to_slices.h"

#include <optional>
#include <vector>

#include "graph/builder.h"
#include "passes/graph_rewrite.h"

namespace shapeshift::passes {

absl::StatusOr<bool> SplitToSlices(Graph& graph, ShapeEnv& env) {
  if (graph.opset() < 10) return false;  // Slice takes its bounds as inputs from opset 10
  bool changed = false;
  for (Node* node : graph.nodes()) {
    if (node->op_type() != "Split" || node->input(0) == nullptr) continue;
    const int64_t rank = node->input(0)->type().rank();
    int64_t axis = node->attrs().GetInt("axis", 0).value_or(rank);
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) continue;
    std::vector<int64_t> sizes;
    bool usable = true;
    for (const Value* out : node->outputs()) {
      std::optional<int64_t> size = out->type().shape[axis].AsConst();
      if (!size || IsGraphOutput(graph, out)) usable = false;
      sizes.push_back(size.value_or(0));
    }
    if (!usable) continue;
    GraphBuilder b(graph, env);
    Value* axes = b.Constant("", Tensor::FromVector<int64_t>(DType::kI64, {1}, {axis}));
    int64_t begin = 0;
    for (int i = 0; i < node->num_outputs(); ++i) {
      Value* starts = b.Constant("", Tensor::FromVector<int64_t>(DType::kI64, {1}, {begin}));
      Value* ends = b.Constant("", Tensor::FromVector<int64_t>(DType::kI64, {1}, {begin + sizes[i]}));
      begin += sizes[i];
      absl::StatusOr<Value*> slice = b.Op("Slice", {node->input(0), starts, ends, axes});
      if (!slice.ok()) return slice.status();
      graph.ReplaceAllUsesWith(node->output(i), *slice);
    }
    if (absl::Status s = graph.RemoveNode(node); !s.ok()) return s;
    changed = true;
  }
  if (changed) {
    graph.RemoveUnusedConstants();
    if (absl::Status s = graph.TopologicalSort(); !s.ok()) return s;
  }
  return changed;
}

}  // namespace shapeshift::passes
