#include "passes/op_classes.h"

#include "graph/op_table.h"
#include "passes/graph_rewrite.h"

namespace shapeshift::passes {
namespace {

OpClass ClassOf(const Node& node) {
  const OpInfo* info = FindOp(node.op_type());
  return info == nullptr ? OpClass::kOther : info->op_class;
}

}  // namespace

bool IsElementwiseOp(const Node& node) { return ClassOf(node) == OpClass::kElementwise; }

bool IsViewOp(const Node& node) { return ClassOf(node) == OpClass::kView; }

bool IsMatmulOp(const Node& node) { return ClassOf(node) == OpClass::kMatmul; }

bool IsShapeOperand(const Node& node, int index) {
  const OpInfo* info = FindOp(node.op_type());
  return info != nullptr && info->IsShapeOperand(index);
}

absl::flat_hash_set<const Node*> CompileTimeNodes(const Graph& graph) {
  absl::flat_hash_set<const Node*> compile_time;
  // Compile-time nodes whose outputs are only measured (read by Shape/Size
  // or by other measured-only nodes): they read nothing but their inputs'
  // types, so their inputs need no values either.
  absl::flat_hash_set<const Node*> measured_only;
  std::vector<Node*> nodes = graph.nodes();
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    const Node* node = *it;
    bool needed_at_runtime = false;
    bool only_measured = true;
    for (const Value* out : node->outputs()) {
      if (IsGraphOutput(graph, out)) needed_at_runtime = true;
      for (const Use& u : out->uses()) {
        const std::string& reader = u.user->op_type();
        bool type_only_reader = ((reader == "Shape" || reader == "Size") && compile_time.contains(u.user)) ||
                                measured_only.contains(u.user);
        bool reads_elements = IsShapeOperand(*u.user, u.input_index) || compile_time.contains(u.user);
        if (!type_only_reader) only_measured = false;
        if (!type_only_reader && !(reads_elements && out->elements())) needed_at_runtime = true;
      }
    }
    if (needed_at_runtime) continue;
    compile_time.insert(node);
    if (only_measured) measured_only.insert(node);
  }
  return compile_time;
}

}  // namespace shapeshift::passes
