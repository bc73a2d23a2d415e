#include "passes/shape_value_folding.h"

#include <optional>
#include <vector>

#include "absl/container/flat_hash_set.h"

#include "absl/strings/str_cat.h"
#include "graph/shape_inference.h"
#include "graph/builder.h"
#include "passes/graph_rewrite.h"
#include "passes/op_classes.h"

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

// True when `v` is (a view of) a one-element Range: already a generator.
bool IsGenerated(const Value* v) {
  const Node* p = v->producer();
  if (p != nullptr && (p->op_type() == "Reshape" || p->op_type() == "Squeeze" || p->op_type() == "Unsqueeze")) {
    p = p->input(0)->producer();
  }
  return p != nullptr && p->op_type() == "Range";
}

// A one-element integer shape value that a runtime node reads as data (the
// position offset `past_sequence` added to a Range) becomes
// Reshape(Range(e, e + 1, 1), shape): a generator kernels compute from the
// dims, so no Shape/Gather chain has to run. Returns whether it rewrote.
absl::StatusOr<bool> GenerateRuntimeScalar(Graph& graph, ShapeEnv& env, Value* v,
                                           const absl::flat_hash_set<const Node*>& compile_time) {
  if (!v->elements() || v->elements()->size() != 1 || v->is_constant() || IsGenerated(v) ||
      (v->type().dtype != DType::kI64 && v->type().dtype != DType::kI32)) {
    return false;
  }
  std::vector<Use> runtime_uses;
  for (const Use& u : v->uses()) {
    if (!compile_time.contains(u.user) && !IsShapeOperand(*u.user, u.input_index)) runtime_uses.push_back(u);
  }
  if (runtime_uses.empty()) return false;
  GraphBuilder b(graph, env);
  Value* one = v->type().dtype == DType::kI64 ? b.Constant("", Tensor::FromVector<int64_t>(DType::kI64, {}, {1}))
                                              : b.Constant("", Tensor::FromVector<int32_t>(DType::kI32, {}, {1}));
  absl::StatusOr<Value*> start = v;
  if (v->type().rank() != 0) start = b.Op("Reshape", {v, b.Constant("", Tensor::FromVector<int64_t>(DType::kI64, {0}, {}))});
  if (!start.ok()) return start.status();
  absl::StatusOr<Value*> limit = b.Op("Add", {*start, one});
  if (!limit.ok()) return limit.status();
  absl::StatusOr<Value*> range = b.Op("Range", {*start, *limit, one});
  if (!range.ok()) return range.status();
  std::vector<int64_t> dims;
  for (SymExpr d : v->type().shape) dims.push_back(*d.AsConst());
  absl::StatusOr<Value*> shaped = b.Op(
      "Reshape", {*range, b.Constant("", Tensor::FromVector<int64_t>(DType::kI64, {static_cast<int64_t>(dims.size())}, dims))});
  if (!shaped.ok()) return shaped.status();
  for (const Use& u : runtime_uses) u.user->SetInput(u.input_index, *shaped);
  return true;
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
  absl::flat_hash_set<const Node*> compile_time = CompileTimeNodes(graph);
  bool generated = false;
  for (Node* node : graph.nodes()) {
    for (Value* out : node->outputs()) {
      absl::StatusOr<bool> g = GenerateRuntimeScalar(graph, env, out, compile_time);
      if (!g.ok()) return g.status();
      generated = generated || *g;
    }
  }
  if (generated) {
    if (absl::Status s = graph.TopologicalSort(); !s.ok()) return s;
  }
  return changed || generated;
}

}  // namespace shapeshift::passes
