#include "passes/matmul_operand_scale.h"

#include <optional>
#include <vector>

#include "graph/builder.h"
#include "passes/graph_rewrite.h"

namespace shapeshift::passes {
namespace {

constexpr char kPass[] = "matmul-operand-scale";

// The unscaled operand and the scale of `v` = Mul(x, c) or Mul(c, x) with
// a constant f32 scalar c, read by `matmul` only and no wider than x.
struct ScaledOperand {
  Value* x = nullptr;
  double scale = 1;
  Node* mul = nullptr;
};

std::optional<ScaledOperand> AsScaled(const Graph& graph, Value* v, const Node* matmul) {
  Node* mul = ProducerIs(v, "Mul");
  if (mul == nullptr || SingleUser(v) != matmul || IsGraphOutput(graph, v)) return std::nullopt;
  for (int i = 0; i < 2; ++i) {
    Value* x = mul->input(i);
    std::optional<double> c = ConstantScalar(mul->input(1 - i));
    if (x != nullptr && c && x->type() == v->type() && x->type().dtype == DType::kF32) {
      return ScaledOperand{x, *c, mul};
    }
  }
  return std::nullopt;
}

}  // namespace

absl::StatusOr<bool> HoistMatmulOperandScales(Graph& graph, ShapeEnv& env) {
  bool changed = false;
  for (Node* matmul : graph.nodes()) {
    if (matmul->op_type() != "MatMul" || matmul->num_inputs() != 2) continue;
    std::optional<ScaledOperand> a = AsScaled(graph, matmul->input(0), matmul);
    std::optional<ScaledOperand> b = AsScaled(graph, matmul->input(1), matmul);
    if (!a && !b) continue;
    double scale = (a ? a->scale : 1.0) * (b ? b->scale : 1.0);
    GraphBuilder builder(graph, env);
    absl::StatusOr<Value*> product =
        builder.Op("MatMul", {a ? a->x : matmul->input(0), b ? b->x : matmul->input(1)});
    if (!product.ok()) return product.status();
    std::vector<Node*> dead;
    if (a) dead.push_back(a->mul);
    if (b && (!a || b->mul != a->mul)) dead.push_back(b->mul);
    dead.push_back(matmul);
    Value* c = graph.AddConstant("", Tensor::Scalar(static_cast<float>(scale)));
    absl::StatusOr<Node*> scaled =
        ReplaceWithNewNode(graph, env, matmul->output(0), dead, "Mul", {*product, c}, {}, kPass);
    if (!scaled.ok()) return scaled.status();
    changed = true;
  }
  return changed;
}

}  // namespace shapeshift::passes
