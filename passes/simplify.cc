#include "passes/simplify.h"

#include <numeric>
#include <optional>
#include <string>

#include "graph/shape_inference.h"
#include "passes/graph_rewrite.h"

namespace shapeshift::passes {
namespace {

constexpr char kPass[] = "simplify";

// The value `node`'s single output can be replaced by, or nullptr.
Value* ForwardedOperand(ShapeEnv& env, const Node& node) {
  const std::string& op = node.op_type();
  auto same_type_as = [&](Value* x, const char* reason) -> Value* {
    const TensorType& out = node.output(0)->type();
    if (x == nullptr || x->type().dtype != out.dtype) return nullptr;
    return ShapesEqual(env, x->type().shape, out.shape, Provenance{kPass, node.name(), reason}) ? x
                                                                                                : nullptr;
  };
  Value* a = node.input(0);
  Value* b = node.input(1);
  if (op == "Identity") return a;
  if (op == "Dropout") {
    if (node.num_outputs() > 1 && node.output(1)->HasUses()) return nullptr;
    Value* training = node.input(2);
    if (training != nullptr && !IsConstantFilledWith(training, 0)) return nullptr;
    return a;
  }
  if (op == "Add" || op == "Mul") {
    double unit = op == "Add" ? 0 : 1;
    if (IsConstantFilledWith(b, unit)) return same_type_as(a, "x op unit keeps x's shape");
    if (IsConstantFilledWith(a, unit)) return same_type_as(b, "unit op x keeps x's shape");
    return nullptr;
  }
  if (op == "Sub" || op == "Div") {
    double unit = op == "Sub" ? 0 : 1;
    return IsConstantFilledWith(b, unit) ? same_type_as(a, "x op unit keeps x's shape") : nullptr;
  }
  if (op == "Reshape") return same_type_as(a, "reshape to the same shape");
  if (op == "Expand") return same_type_as(a, "expand to the same shape");
  if (op == "Cast") return same_type_as(a, "cast to the same type");
  if (op == "Concat" && node.num_inputs() == 1) return same_type_as(a, "concat of one input");
  return nullptr;
}

std::optional<std::vector<int64_t>> Permutation(const Node& transpose) {
  int64_t rank = transpose.input(0)->type().rank();
  std::vector<int64_t> perm(rank);
  std::iota(perm.rbegin(), perm.rend(), 0);  // the default reverses the dims
  if (transpose.attrs().Has("perm")) {
    absl::StatusOr<std::vector<int64_t>> p = transpose.attrs().GetInts("perm");
    if (!p.ok() || static_cast<int64_t>(p->size()) != rank) return std::nullopt;
    perm = *p;
  }
  return perm;
}

bool IsIdentityPermutation(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

// Rewires `node`'s data input to `source` when re-inference proves the
// output shape unchanged; reverts otherwise.
bool RewireKeepingShape(Graph& graph, ShapeEnv& env, Node* node, Value* source, const char* reason) {
  Value* old = node->input(0);
  TensorType old_type = node->output(0)->type();
  node->SetInput(0, source);
  bool same = InferNode(*node, env, graph.opset()).ok() &&
              ShapesEqual(env, node->output(0)->type().shape, old_type.shape,
                          Provenance{kPass, node->name(), reason});
  if (!same) node->SetInput(0, old);
  node->output(0)->set_type(old_type);
  return same;
}

// Transpose(Transpose(x)) → one transpose of x (or x). Returns true if rewritten.
bool ComposeTransposes(Graph& graph, Node* outer) {
  Node* inner = ProducerIs(outer->input(0), "Transpose");
  std::optional<std::vector<int64_t>> p2 = Permutation(*outer);
  if (inner == nullptr || !p2) return false;
  std::optional<std::vector<int64_t>> p1 = Permutation(*inner);
  if (!p1) return false;
  std::vector<int64_t> composed;
  for (int64_t i : *p2) composed.push_back((*p1)[i]);
  outer->SetInput(0, inner->input(0));
  outer->mutable_attrs().Set("perm", composed);
  return true;
}

}  // namespace

absl::StatusOr<bool> SimplifyAlgebra(Graph& graph, ShapeEnv& env) {
  bool changed = false;
  for (Node* node : graph.nodes()) {
    if (node->num_outputs() < 1 || !node->output(0)->HasUses()) continue;
    Value* out = node->output(0);
    if (node->op_type() == "Transpose") {
      changed = ComposeTransposes(graph, node) || changed;
      std::optional<std::vector<int64_t>> perm = Permutation(*node);
      if (perm && IsIdentityPermutation(*perm) && !IsGraphOutput(graph, out)) {
        graph.ReplaceAllUsesWith(out, node->input(0));
        changed = true;
      }
      continue;
    }
    if (node->op_type() == "Reshape") {
      if (Node* inner = ProducerIs(node->input(0), "Reshape")) {
        changed = RewireKeepingShape(graph, env, node, inner->input(0), "reshape of a reshape") || changed;
      }
    }
    if (IsGraphOutput(graph, out)) continue;
    if (Value* forwarded = ForwardedOperand(env, *node)) {
      graph.ReplaceAllUsesWith(out, forwarded);
      changed = true;
    }
  }
  return changed;
}

}  // namespace shapeshift::passes
