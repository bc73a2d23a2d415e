#include "passes/constant_folding.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "graph/op_table.h"
#include "graph/reference/kernel.h"
#include "passes/graph_rewrite.h"

namespace shapeshift::passes {
namespace {

bool AllInputsConstant(const Node& node) {
  return std::all_of(node.inputs().begin(), node.inputs().end(),
                     [](const Value* v) { return v == nullptr || v->is_constant(); });
}

// Every output has a static shape of at most `cap` elements and is not a
// graph output (folding would rename it).
bool OutputsFoldable(const Graph& graph, const Node& node, int64_t cap) {
  for (const Value* out : node.outputs()) {
    if (IsGraphOutput(graph, out) || !out->type().IsStatic()) return false;
    if (*out->type().NumElements().AsConst() > cap) return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<bool> FoldConstants(Graph& graph, int64_t max_folded_elements) {
  bool changed = false;
  for (Node* node : graph.nodes()) {
    if (!AllInputsConstant(*node) || FindOp(node->op_type()) == nullptr ||
        !OutputsFoldable(graph, *node, max_folded_elements)) {
      continue;
    }
    if (std::none_of(node->outputs().begin(), node->outputs().end(),
                     [](const Value* v) { return v->HasUses(); })) {
      continue;
    }
    KernelArgs args;
    args.op_type = node->op_type();
    args.node_name = node->name();
    args.opset = graph.opset();
    args.attrs = &node->attrs();
    args.num_outputs = node->num_outputs();
    for (Value* in : node->inputs()) args.inputs.push_back(in ? in->constant() : nullptr);
    absl::StatusOr<std::vector<Tensor>> results = RunReferenceKernel(args);
    if (!results.ok()) {
      return absl::Status(results.status().code(),
                          absl::StrCat("folding node '", node->name(), "': ", results.status().message()));
    }
    for (int i = 0; i < node->num_outputs(); ++i) {
      Value* out = node->output(i);
      if (!out->HasUses()) continue;
      Tensor& t = (*results)[i];
      const auto& shape = out->type().shape;
      bool same_shape = t.dtype() == out->type().dtype && t.rank() == out->type().rank();
      for (int64_t d = 0; same_shape && d < t.rank(); ++d) {
        same_shape = *shape[d].AsConst() == t.shape()[d];
      }
      if (!same_shape) {
        return absl::InternalError(absl::StrCat("folding node '", node->name(), "' gave ",
                                                t.DebugString(0), " but its output '", out->name(),
                                                "' is typed ", out->type().ToString()));
      }
      Value* folded = graph.AddConstant("", std::move(t));
      graph.ReplaceAllUsesWith(out, folded);
      changed = true;
    }
  }
  return changed;
}

}  // namespace shapeshift::passes
