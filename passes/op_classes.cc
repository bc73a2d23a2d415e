#include "passes/op_classes.h"

#include <string>

#include "passes/graph_rewrite.h"

namespace shapeshift::passes {
namespace {

const absl::flat_hash_set<std::string>& ElementwiseOps() {
  static const auto* ops = new absl::flat_hash_set<std::string>{
      "Sqrt", "Reciprocal", "Exp", "Log", "Tanh", "Erf", "Sigmoid", "Floor", "Ceil", "Round", "Sin",
      "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Softplus",
      "Softsign", "Elu", "Selu", "LeakyRelu", "HardSigmoid", "HardSwish", "Celu", "Mish", "Gelu", "Neg",
      "Abs", "Relu", "Sign", "Not", "IsNaN", "IsInf", "Add", "Sub", "Mul", "Div", "Pow", "Mod",
      "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor", "PRelu",
      "Min", "Max", "Sum", "Mean", "Where", "Clip", "Cast", "Expand", "ConstantOfShape", "Range"};
  return *ops;
}

}  // namespace

bool IsElementwiseOp(const Node& node) { return ElementwiseOps().contains(node.op_type()); }

bool IsViewOp(const Node& node) {
  const std::string& op = node.op_type();
  return op == "Reshape" || op == "Squeeze" || op == "Unsqueeze" || op == "Flatten" || op == "Identity";
}

bool IsShapeOperand(const Node& node, int index) {
  const std::string& op = node.op_type();
  if (op == "Reshape" || op == "Expand" || op == "Tile" || op == "Squeeze" || op == "Unsqueeze" ||
      op == "Split" || op == "CumSum" || op == "Trilu") {
    return index == 1;
  }
  if (op.rfind("Reduce", 0) == 0) return index == 1;
  if (op == "ConstantOfShape") return index == 0;
  if (op == "Range") return index <= 2;
  if (op == "Slice") return index >= 1;
  return false;
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
