#include "passes/shape_value_folding.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "graph/shape_inference.h"
#include "passes/graph_rewrite.h"

namespace shapeshift::passes {
namespace {

constexpr char kPass[] = "shape-value-folding";

// The tensor holding `elements` (all constant) with `type`'s dtype and shape.
std::optional<Tensor> MaterializeElements(const TensorType& type, const std::vector<SymExpr>& elements) {
  if (!type.IsStatic()) return std::nullopt;
  std::vector<int64_t> shape;
  for (SymExpr d : type.shape) shape.push_back(*d.AsConst());
  absl::StatusOr<Tensor> t = Tensor::Zeros(type.dtype, shape);
  if (!t.ok() || t->num_elements() != static_cast<int64_t>(elements.size())) return std::nullopt;
  for (size_t i = 0; i < elements.size(); ++i) {
    std::optional<int64_t> v = elements[i].AsConst();
    if (!v) return std::nullopt;
    switch (type.dtype) {
      case DType::kI64: t->mutable_data<int64_t>()[i] = *v; break;
      case DType::kI32: t->mutable_data<int32_t>()[i] = static_cast<int32_t>(*v); break;
      case DType::kBool: t->mutable_data<uint8_t>()[i] = *v != 0; break;
      default: return std::nullopt;
    }
  }
  return *std::move(t);
}

// Replaces input `index` of `node` by a constant i64 vector, keeping the
// change only if re-inference gives a provably equal output shape.
absl::StatusOr<bool> TrySetShapeOperand(Graph& graph, ShapeEnv& env, Node* node, int index,
                                        const std::vector<int64_t>& codes) {
  Value* old_operand = node->input(index);
  TensorType old_type = node->output(0)->type();
  Value* encoded = graph.AddConstant(
      "", Tensor::FromVector<int64_t>(DType::kI64, {static_cast<int64_t>(codes.size())}, codes));
  node->SetInput(index, encoded);
  absl::Status inferred = InferNode(*node, env, graph.opset());
  bool same = inferred.ok() &&
              ShapesEqual(env, node->output(0)->type().shape, old_type.shape,
                          Provenance{kPass, node->name(), "constant target gives the same shape"});
  if (!same) node->SetInput(index, old_operand);
  node->output(0)->set_type(old_type);
  return same;
}

// Reshape target as constants: exact dims, 0 = same as input dim i, one -1.
std::optional<std::vector<int64_t>> EncodeReshapeTarget(ShapeEnv& env, const Node& node) {
  if (node.attrs().GetInt("allowzero", 0).value_or(1) != 0) return std::nullopt;
  const auto& in = node.input(0)->type().shape;
  const auto& out = node.output(0)->type().shape;
  std::vector<int64_t> codes;
  bool inferred_used = false;
  for (size_t i = 0; i < out.size(); ++i) {
    std::optional<int64_t> c = out[i].AsConst();
    if (c && *c > 0) {
      codes.push_back(*c);
    } else if (i < in.size() &&
               DimsEqual(env, in[i], out[i], Provenance{kPass, node.name(), "reshape keeps dim"})) {
      codes.push_back(0);
    } else if (!inferred_used && !c) {
      codes.push_back(-1);
      inferred_used = true;
    } else {
      return std::nullopt;
    }
  }
  return codes;
}

// Expand target as constants: exact dims, 1 where the input dim is kept.
std::optional<std::vector<int64_t>> EncodeExpandTarget(ShapeEnv& env, const Node& node) {
  const auto& in = node.input(0)->type().shape;
  const auto& out = node.output(0)->type().shape;
  if (out.size() < in.size()) return std::nullopt;
  size_t lead = out.size() - in.size();
  std::vector<int64_t> codes;
  for (size_t i = 0; i < out.size(); ++i) {
    std::optional<int64_t> c = out[i].AsConst();
    if (c && *c > 0) {
      codes.push_back(*c);
    } else if (i >= lead && DimsEqual(env, in[i - lead], out[i],
                                      Provenance{kPass, node.name(), "expand keeps dim"})) {
      codes.push_back(1);
    } else {
      return std::nullopt;
    }
  }
  return codes;
}

}  // namespace

absl::StatusOr<bool> FoldShapeValues(Graph& graph, ShapeEnv& env) {
  bool changed = false;
  for (Node* node : graph.nodes()) {
    for (Value* out : node->outputs()) {
      if (!out->elements() || !out->HasUses() || IsGraphOutput(graph, out)) continue;
      std::optional<Tensor> t = MaterializeElements(out->type(), *out->elements());
      if (!t) continue;
      graph.ReplaceAllUsesWith(out, graph.AddConstant("", *std::move(t)));
      changed = true;
    }
  }
  for (Node* node : graph.nodes()) {
    bool is_reshape = node->op_type() == "Reshape";
    if ((!is_reshape && node->op_type() != "Expand") || node->input(1) == nullptr ||
        node->input(1)->is_constant()) {
      continue;
    }
    std::optional<std::vector<int64_t>> codes =
        is_reshape ? EncodeReshapeTarget(env, *node) : EncodeExpandTarget(env, *node);
    if (!codes) continue;
    absl::StatusOr<bool> set = TrySetShapeOperand(graph, env, node, 1, *codes);
    if (!set.ok()) return set.status();
    changed = changed || *set;
  }
  return changed;
}

}  // namespace shapeshift::passes
