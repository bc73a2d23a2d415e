#include "passes/rotary_embedding_recognition.h"

#include <optional>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "passes/graph_rewrite.h"

namespace shapeshift::passes {
namespace {

constexpr char kPass[] = "rotary-embedding-recognition";

struct RopeMatch {
  Value* x = nullptr;
  Value* a = nullptr;  // multiplies x (cos)
  Value* b = nullptr;  // multiplies rotate_half(x) (sin)
  std::vector<Node*> nodes;  // topological order
};

// The value is read by exactly one node, once, and is no graph output.
bool OnlyReadBy(const Graph& graph, const Value* v, const Node* reader) {
  return v->uses().size() == 1 && v->uses().front().user == reader && !IsGraphOutput(graph, v);
}

// The constant element of a one-element shape operand.
std::optional<int64_t> OneConstant(const Node& node, int input) {
  const Value* v = node.input(input);
  if (v == nullptr || !v->elements() || v->elements()->size() != 1) return std::nullopt;
  return (*v->elements())[0].AsConst();
}

// A Slice bound as ONNX normalizes it on an axis of size d: negative counts
// from the end, then clamped into [0, d].
int64_t ClampBound(int64_t v, int64_t d) {
  if (v < 0) v = v < -d ? 0 : v + d;
  return v > d ? d : v;
}

// True when `node` is Slice(x, begin, end) over x's last axis (of size d)
// with step 1, exactly [begin, end) after normalization.
bool IsLastAxisSlice(const Node& node, const Value* x, int64_t d, int64_t begin, int64_t end) {
  if (node.op_type() != "Slice" || node.num_inputs() < 3 || node.input(0) != x) return false;
  const int64_t rank = x->type().rank();
  std::optional<int64_t> starts = OneConstant(node, 1);
  std::optional<int64_t> ends = OneConstant(node, 2);
  if (!starts || !ends) return false;
  if (node.num_inputs() > 3 && node.input(3) != nullptr) {
    std::optional<int64_t> axis = OneConstant(node, 3);
    if (!axis || (*axis != -1 && *axis != rank - 1)) return false;
  } else if (rank != 1) {
    return false;  // no axes: the bound applies to axis 0
  }
  if (node.num_inputs() > 4 && node.input(4) != nullptr && OneConstant(node, 4) != 1) return false;
  return ClampBound(*starts, d) == begin && ClampBound(*ends, d) == end;
}

// Concat(Neg(Slice(x, h:d)), Slice(x, 0:h)) over the last axis, every
// intermediate read only inside; x is read from the slices. Appends the
// nodes (topological order) to `nodes`.
Value* MatchRotateHalf(const Graph& graph, Node* cat, std::vector<Node*>& nodes) {
  if (cat == nullptr || cat->op_type() != "Concat" || cat->num_inputs() != 2) return nullptr;
  const int64_t rank = cat->output(0)->type().rank();
  absl::StatusOr<int64_t> axis = cat->attrs().GetInt("axis");
  if (!axis.ok() || rank == 0 || (*axis != -1 && *axis != rank - 1)) return nullptr;
  Node* neg = cat->input(0)->producer();
  Node* first = cat->input(1)->producer();
  if (neg == nullptr || first == nullptr || neg->op_type() != "Neg" || neg->input(0) == nullptr) return nullptr;
  Node* second = neg->input(0)->producer();
  if (second == nullptr || first->num_inputs() < 1 || first->input(0) == nullptr) return nullptr;
  Value* x = first->input(0);
  if (x->type().dtype != DType::kF32 || x->type().rank() != rank) return nullptr;
  std::optional<int64_t> d = x->type().shape.back().AsConst();
  if (!d || *d < 2 || *d % 2 != 0) return nullptr;
  const int64_t h = *d / 2;
  if (!IsLastAxisSlice(*first, x, *d, 0, h) || !IsLastAxisSlice(*second, x, *d, h, *d)) return nullptr;
  if (!OnlyReadBy(graph, first->output(0), cat) || !OnlyReadBy(graph, second->output(0), neg) ||
      !OnlyReadBy(graph, neg->output(0), cat)) {
    return nullptr;
  }
  nodes.insert(nodes.end(), {first, second, neg, cat});
  return x;
}

std::optional<RopeMatch> MatchAt(const Graph& graph, ShapeEnv& env, Node* add) {
  if (add->op_type() != "Add" || add->num_inputs() != 2) return std::nullopt;
  for (int i = 0; i < 2; ++i) {
    Node* mul_x = add->input(i)->producer();
    Node* mul_r = add->input(1 - i)->producer();
    if (mul_x == nullptr || mul_r == nullptr || mul_x == mul_r || mul_x->op_type() != "Mul" ||
        mul_r->op_type() != "Mul" || !OnlyReadBy(graph, mul_x->output(0), add) ||
        !OnlyReadBy(graph, mul_r->output(0), add)) {
      continue;
    }
    for (int k = 0; k < 2; ++k) {
      Value* rotated = mul_r->input(k);
      RopeMatch m;
      if (!OnlyReadBy(graph, rotated, mul_r)) continue;
      m.x = MatchRotateHalf(graph, rotated->producer(), m.nodes);
      if (m.x == nullptr) continue;
      m.b = mul_r->input(1 - k);
      m.a = OtherOperand(*mul_x, m.x);
      if (m.a == nullptr || m.a->type().dtype != DType::kF32 || m.b->type().dtype != DType::kF32) continue;
      // a and b broadcast to x (cos [b|1, 1, s, d] against x [b, heads, s, d]):
      // the fused node then has x's shape, as the Add had.
      if (!ShapesEqual(env, add->output(0)->type().shape, m.x->type().shape,
                       Provenance{kPass, add->name(), "rotary embedding keeps x's shape"})) {
        continue;
      }
      m.nodes.insert(m.nodes.end(), {mul_x, mul_r, add});
      return m;
    }
  }
  return std::nullopt;
}

}  // namespace

absl::StatusOr<bool> RecognizeRotaryEmbedding(Graph& graph, ShapeEnv& env) {
  bool changed = false;
  absl::flat_hash_set<const Node*> removed;  // by earlier rewrites in this sweep
  for (Node* node : graph.nodes()) {
    if (removed.contains(node)) continue;
    std::optional<RopeMatch> m = MatchAt(graph, env, node);
    if (!m) continue;
    absl::StatusOr<Node*> rope = ReplaceWithNewNode(graph, env, node->output(0), m->nodes, "RotateHalfMulAdd",
                                                    {m->x, m->a, m->b}, Attributes(), kPass);
    if (!rope.ok()) return rope.status();
    removed.insert(m->nodes.begin(), m->nodes.end());
    changed = true;
  }
  return changed;
}

}  // namespace shapeshift::passes
