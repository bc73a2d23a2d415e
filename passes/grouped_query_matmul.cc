#include "passes/grouped_query_matmul.h"

#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "graph/shape_inference.h"
#include "passes/graph_rewrite.h"

namespace shapeshift::passes {
namespace {

constexpr char kPass[] = "grouped-query-matmul";

// X[b, G, n, d] repeated R times along its heads, as the matmul's B reads it.
struct RepeatedHeads {
  Value* x = nullptr;       // [b, G, n, d]
  int64_t groups = 0;       // G
  int64_t repeats = 0;      // R
  bool transposed = false;  // B is [b, H, d, n] (keys) rather than [b, H, n, d]
};

bool Same(ShapeEnv& env, const SymExpr& a, const SymExpr& b, const Node& at, const char* what) {
  return DimsEqual(env, a, b, Provenance{kPass, at.name(), what});
}

bool SamePerm(const Node& t, const std::vector<int64_t>& perm) {
  absl::StatusOr<std::vector<int64_t>> p = t.attrs().GetInts("perm");
  return p.ok() && *p == perm;
}

// E = Expand(Unsqueeze(X, 2), [b, G, R, n, d]): X and R, or nullopt.
std::optional<RepeatedHeads> MatchExpand(ShapeEnv& env, Value* e) {
  Node* expand = ProducerIs(e, "Expand");
  if (expand == nullptr) return std::nullopt;
  Node* unsqueeze = ProducerIs(expand->input(0), "Unsqueeze");
  if (unsqueeze == nullptr) return std::nullopt;
  Value* x = unsqueeze->input(0);
  const std::vector<SymExpr>& xs = x->type().shape;
  const std::vector<SymExpr>& us = unsqueeze->output(0)->type().shape;
  const std::vector<SymExpr>& es = e->type().shape;
  if (xs.size() != 4 || us.size() != 5 || es.size() != 5) return std::nullopt;
  // Unsqueeze keeps the layout: only the shape says where the 1 went.
  std::optional<int64_t> one = us[2].AsConst(), groups = xs[1].AsConst(), repeats = es[2].AsConst();
  if (one != 1 || !groups || !repeats || *repeats < 1) return std::nullopt;
  for (auto [u, xd] : {std::pair{0, 0}, {1, 1}, {3, 2}, {4, 3}}) {
    if (!Same(env, us[u], xs[xd], *unsqueeze, "unsqueezed key/value heads keep their dims") ||
        !Same(env, es[u], xs[xd], *expand, "repeat_kv expands only the new dim")) {
      return std::nullopt;
    }
  }
  return RepeatedHeads{x, *groups, *repeats, false};
}

// B as one of the three forms in the header, or nullopt.
std::optional<RepeatedHeads> MatchRepeatedHeads(ShapeEnv& env, Value* b) {
  const std::vector<SymExpr>& bs = b->type().shape;
  if (bs.size() != 4) return std::nullopt;
  bool transposed = false;
  Value* merged = b;  // [b, H, n, d]
  if (Node* t = ProducerIs(b, "Transpose"); t != nullptr && SamePerm(*t, {0, 1, 3, 2})) {
    merged = t->input(0);
    transposed = true;
  } else if (Node* outer = ProducerIs(b, "Reshape")) {
    Node* t3 = ProducerIs(outer->input(0), "Transpose");
    if (t3 != nullptr && SamePerm(*t3, {0, 2, 1})) {  // dynamo: [b*H, n, d] -> [b*H, d, n] -> [b, H, d, n]
      Node* flat = ProducerIs(t3->input(0), "Reshape");
      if (flat == nullptr) return std::nullopt;
      std::optional<RepeatedHeads> r = MatchExpand(env, flat->input(0));
      if (!r) return std::nullopt;
      const std::vector<SymExpr>& xs = r->x->type().shape;
      const std::vector<SymExpr>& fs = flat->output(0)->type().shape;
      int64_t heads = r->groups * r->repeats;
      if (fs.size() != 3 || !Same(env, fs[0], xs[0] * SymExpr(heads), *flat, "repeat_kv flattens batch and heads") ||
          !Same(env, fs[1], xs[2], *flat, "repeat_kv keeps the sequence") ||
          !Same(env, fs[2], xs[3], *flat, "repeat_kv keeps the head dim") ||
          !Same(env, bs[0], xs[0], *outer, "repeat_kv keeps the batch") || bs[1].AsConst() != heads ||
          !Same(env, bs[2], xs[3], *outer, "transposed keys: head dim first") ||
          !Same(env, bs[3], xs[2], *outer, "transposed keys: sequence last")) {
        return std::nullopt;
      }
      r->transposed = true;
      return r;
    }
  }
  Node* reshape = ProducerIs(merged, "Reshape");
  if (reshape == nullptr) return std::nullopt;
  std::optional<RepeatedHeads> r = MatchExpand(env, reshape->input(0));
  if (!r) return std::nullopt;
  const std::vector<SymExpr>& xs = r->x->type().shape;
  const std::vector<SymExpr>& ms = merged->type().shape;
  if (ms.size() != 4 || !Same(env, ms[0], xs[0], *reshape, "repeat_kv keeps the batch") ||
      ms[1].AsConst() != r->groups * r->repeats || !Same(env, ms[2], xs[2], *reshape, "repeat_kv keeps the sequence") ||
      !Same(env, ms[3], xs[3], *reshape, "repeat_kv keeps the head dim")) {
    return std::nullopt;
  }
  r->transposed = transposed;
  return r;
}

// Multi-query attention (Falcon, StarCoder): B = [b, 1, k, n], one key/value
// head broadcast by the MatMul itself over A's H query heads; as repeat_kv
// with G = 1 and R = H, B read in place (nullopt unless A is [b, H, m, k]
// with H > 1 a constant and the batches agree).
std::optional<RepeatedHeads> MatchBroadcastHead(ShapeEnv& env, const Node& matmul) {
  Value* a = matmul.input(0);
  Value* b = matmul.input(1);
  const std::vector<SymExpr>& as = a->type().shape;
  const std::vector<SymExpr>& bs = b->type().shape;
  if (as.size() != 4 || bs.size() != 4 || bs[1].AsConst() != 1) return std::nullopt;
  std::optional<int64_t> heads = as[1].AsConst();
  if (!heads || *heads < 2 || !Same(env, as[0], bs[0], matmul, "query and key/value batch agree")) {
    return std::nullopt;
  }
  return RepeatedHeads{b, 1, *heads, false};
}

absl::StatusOr<Node*> AddInferred(Graph& graph, ShapeEnv& env, const std::string& op, std::vector<Value*> inputs,
                                  Attributes attrs = {}) {
  Node* node = graph.AddNode(op, std::move(inputs), 1, std::move(attrs));
  if (absl::Status s = InferNode(*node, env, graph.opset()); !s.ok()) {
    return absl::InternalError(absl::StrCat(kPass, ": ", s.message()));
  }
  return node;
}

Value* Ints(Graph& graph, std::vector<int64_t> v) {
  int64_t n = static_cast<int64_t>(v.size());
  return graph.AddConstant("", Tensor::FromVector<int64_t>(DType::kI64, {n}, v));
}

// Rewrites `matmul` (A[b, H, m, k] times the repeated heads). False, with the
// graph unchanged but for unused nodes DCE removes, when a shape does not
// come out as expected.
absl::StatusOr<bool> Rewrite(Graph& graph, ShapeEnv& env, Node* matmul, const RepeatedHeads& r) {
  Value* a = matmul->input(0);
  const std::vector<SymExpr>& as = a->type().shape;
  const std::vector<SymExpr>& xs = r.x->type().shape;
  const int64_t heads = r.groups * r.repeats;
  if (as.size() != 4 || as[1].AsConst() != heads ||
      !Same(env, as[0], xs[0], *matmul, "query and key/value batch agree")) {
    return false;
  }
  // [b, H, m, k] -> [b, G, R*m, k]: 0 copies a dim, -1 is inferred.
  SS_ASSIGN_OR_RETURN(grouped, AddInferred(graph, env, "Reshape", {a, Ints(graph, {0, r.groups, -1, 0})}));
  const std::vector<SymExpr> want = {as[0], r.groups, SymExpr(r.repeats) * as[2], as[3]};
  if (!ShapesEqual(env, grouped->output(0)->type().shape, want,
                   Provenance{kPass, matmul->name(), "query heads grouped by key/value head"})) {
    return false;
  }
  Value* b = r.x;
  if (r.transposed) {
    Attributes perm;
    perm.Set("perm", std::vector<int64_t>{0, 1, 3, 2});
    SS_ASSIGN_OR_RETURN(t, AddInferred(graph, env, "Transpose", {r.x}, perm));
    b = t->output(0);
  }
  SS_ASSIGN_OR_RETURN(product, AddInferred(graph, env, "MatMul", {grouped->output(0), b}));
  absl::StatusOr<Node*> back = ReplaceWithNewNode(graph, env, matmul->output(0), {matmul}, "Reshape",
                                                  {product->output(0), Ints(graph, {0, heads, -1, 0})}, {}, kPass);
  if (!back.ok()) return back.status();
  return true;
}

}  // namespace

absl::StatusOr<bool> GroupQueryMatmuls(Graph& graph, ShapeEnv& env) {
  bool changed = false;
  for (Node* matmul : graph.nodes()) {
    if (matmul->op_type() != "MatMul") continue;
    std::optional<RepeatedHeads> r = MatchRepeatedHeads(env, matmul->input(1));
    if (!r) r = MatchBroadcastHead(env, *matmul);
    if (!r || r->repeats == 1) continue;
    SS_ASSIGN_OR_RETURN(done, Rewrite(graph, env, matmul, *r));
    changed = changed || done;
  }
  if (changed) {
    if (absl::Status s = graph.TopologicalSort(); !s.ok()) return s;
  }
  return changed;
}

}  // namespace shapeshift::passes
