#include "passes/simplify.h"

#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
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

// Reshape(Transpose(Reshape(x))) where the first Reshape merges x's leading
// k dims into one, the Transpose keeps that merged dim first and the last
// Reshape splits it back into x's k dims → Transpose(x) with the permutation
// widened over the k dims. (The dynamo exporter's onnxscript optimizer writes
// attention's Kᵀ so: [B, H, T, D] → [B*H, T, D], perm [0, 2, 1], → [B, H, D, T].)
// The permutation is returned, or nullopt when the chain is not of that form.
std::optional<std::vector<int64_t>> MergedLeadingTranspose(ShapeEnv& env, const Node& outer) {
  Node* t = outer.op_type() == "Reshape" ? ProducerIs(outer.input(0), "Transpose") : nullptr;
  Node* inner = t == nullptr ? nullptr : ProducerIs(t->input(0), "Reshape");
  if (inner == nullptr || inner->input(0) == nullptr) return std::nullopt;
  std::optional<std::vector<int64_t>> p = Permutation(*t);
  const std::vector<SymExpr>& x = inner->input(0)->type().shape;
  const std::vector<SymExpr>& merged = inner->output(0)->type().shape;
  const int64_t m = static_cast<int64_t>(merged.size());
  const int64_t k = static_cast<int64_t>(x.size()) - m + 1;  // the leading dims merged
  if (!p || p->empty() || (*p)[0] != 0 || k < 2 || inner->input(0)->type().dtype != outer.output(0)->type().dtype) {
    return std::nullopt;
  }
  const Provenance why{kPass, outer.name(), "reshapes around a transpose merge and split the same leading dims"};
  std::vector<SymExpr> split(x.begin(), x.begin() + k);
  const std::vector<SymExpr>& transposed = t->output(0)->type().shape;
  split.insert(split.end(), transposed.begin() + 1, transposed.end());
  if (!ShapesEqual(env, std::vector<SymExpr>(merged.begin() + 1, merged.end()),
                   std::vector<SymExpr>(x.begin() + k, x.end()), why) ||
      !ShapesEqual(env, outer.output(0)->type().shape, split, why)) {
    return std::nullopt;
  }
  std::vector<int64_t> perm(k);
  std::iota(perm.begin(), perm.end(), 0);
  for (int64_t i = 1; i < m; ++i) perm.push_back(k - 1 + (*p)[i]);
  return perm;
}

// Rewrites every MergedLeadingTranspose chain into one Transpose.
absl::StatusOr<bool> UnmergeTransposes(Graph& graph, ShapeEnv& env) {
  bool changed = false;
  absl::flat_hash_set<const Node*> removed;  // by earlier rewrites in this sweep
  for (Node* outer : graph.nodes()) {
    if (removed.contains(outer) || outer->num_outputs() < 1) continue;
    if (!outer->output(0)->HasUses() && !IsGraphOutput(graph, outer->output(0))) continue;
    std::optional<std::vector<int64_t>> perm = MergedLeadingTranspose(env, *outer);
    if (!perm) continue;
    Node* t = outer->input(0)->producer();
    Node* inner = t->input(0)->producer();
    Value* x = inner->input(0);
    // The transpose and the first reshape go too when the chain is their only reader.
    std::vector<Node*> dead;
    if (SingleUser(t->output(0)) == outer && !IsGraphOutput(graph, t->output(0))) {
      if (SingleUser(inner->output(0)) == t && !IsGraphOutput(graph, inner->output(0))) dead.push_back(inner);
      dead.push_back(t);
    }
    dead.push_back(outer);
    Attributes attrs;
    attrs.Set("perm", *perm);
    absl::StatusOr<Node*> node = ReplaceWithNewNode(graph, env, outer->output(0), dead, "Transpose", {x},
                                                    std::move(attrs), kPass);
    if (!node.ok()) return node.status();
    removed.insert(dead.begin(), dead.end());
    changed = true;
  }
  return changed;
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
  absl::StatusOr<bool> unmerged = UnmergeTransposes(graph, env);
  if (!unmerged.ok()) return unmerged.status();
  return *unmerged || changed;
}

}  // namespace shapeshift::passes
