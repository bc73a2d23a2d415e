#include "passes/rotary_embedding_recognition.h"

#include <algorithm>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "passes/graph_rewrite.h"

namespace shapeshift::passes {
namespace {

constexpr char kPass[] = "rotary-embedding-recognition";

struct RopeMatch {
  const char* op = "RotateHalfMulAdd";
  Value* x = nullptr;
  Value* a = nullptr;  // multiplies x (cos)
  Value* b = nullptr;  // multiplies rotate(x) (sin)
  int64_t rotary_dim = 0;    // the channels of x that rotate
  Value* result = nullptr;   // the value the new node replaces
  std::vector<Node*> nodes;  // topological order
};

// Which rotation a match found.
struct Rotated {
  Value* x = nullptr;
  bool every_two = false;
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

// True when `node` is Slice(x, begin, end, step) over x's last axis (of size
// d), exactly [begin, end) after normalization (the steps operand may be
// left out for step 1).
bool IsLastAxisSlice(const Node& node, const Value* x, int64_t d, int64_t begin, int64_t end, int64_t step = 1) {
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
  const bool has_steps = node.num_inputs() > 4 && node.input(4) != nullptr;
  if ((has_steps ? OneConstant(node, 4) : std::optional<int64_t>(1)) != step) return false;
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

// Unsqueeze(in) at the new last axis (axes as the opset-13 input or the
// older attribute).
bool IsLastAxisUnsqueeze(const Node* node, const Value* in) {
  if (node == nullptr || node->op_type() != "Unsqueeze" || node->input(0) != in) return false;
  const int64_t out_rank = in->type().rank() + 1;
  std::optional<int64_t> axis;
  if (node->num_inputs() > 1 && node->input(1) != nullptr) {
    axis = OneConstant(*node, 1);
  } else if (absl::StatusOr<std::vector<int64_t>> axes = node->attrs().GetInts("axes"); axes.ok() && axes->size() == 1) {
    axis = (*axes)[0];
  }
  return axis && (*axis == -1 || *axis == out_rank - 1);
}

// rotate_every_two(x) as both exporters write GPT-J's
//   Reshape(Concat(Unsqueeze(Neg(Slice(x, 1::2)), -1), Unsqueeze(Slice(x, 0::2), -1), -1), x's shape)
// (torch.stack((-x2, x1), -1).flatten(-2)), every intermediate read only
// inside; x is read from the slices. The Reshape must give x's shape, which
// with the stacked shape [..., d/2, 2] makes it the flatten of the last two
// axes (an env question). Appends the nodes to `nodes`.
Value* MatchRotateEveryTwo(const Graph& graph, ShapeEnv& env, Node* reshape, std::vector<Node*>& nodes) {
  if (reshape == nullptr || reshape->op_type() != "Reshape" || reshape->input(0) == nullptr) return nullptr;
  Node* stack = reshape->input(0)->producer();
  if (stack == nullptr || stack->op_type() != "Concat" || stack->num_inputs() != 2) return nullptr;
  const int64_t rank = stack->output(0)->type().rank();
  absl::StatusOr<int64_t> axis = stack->attrs().GetInt("axis");
  if (!axis.ok() || rank < 2 || (*axis != -1 && *axis != rank - 1)) return nullptr;
  Node* neg_u = stack->input(0)->producer();
  Node* even_u = stack->input(1)->producer();
  if (neg_u == nullptr || even_u == nullptr || neg_u->input(0) == nullptr || even_u->input(0) == nullptr) return nullptr;
  Node* neg = neg_u->input(0)->producer();
  Node* even = even_u->input(0)->producer();
  if (neg == nullptr || even == nullptr || neg->op_type() != "Neg" || neg->input(0) == nullptr) return nullptr;
  Node* odd = neg->input(0)->producer();
  if (odd == nullptr || even->num_inputs() < 1 || even->input(0) == nullptr) return nullptr;
  Value* x = even->input(0);
  if (x->type().dtype != DType::kF32 || x->type().rank() != rank - 1) return nullptr;
  std::optional<int64_t> d = x->type().shape.back().AsConst();
  if (!d || *d < 2 || *d % 2 != 0) return nullptr;
  if (!IsLastAxisSlice(*even, x, *d, 0, *d, 2) || !IsLastAxisSlice(*odd, x, *d, 1, *d, 2) ||
      !IsLastAxisUnsqueeze(neg_u, neg->output(0)) || !IsLastAxisUnsqueeze(even_u, even->output(0))) {
    return nullptr;
  }
  if (!OnlyReadBy(graph, even->output(0), even_u) || !OnlyReadBy(graph, odd->output(0), neg) ||
      !OnlyReadBy(graph, neg->output(0), neg_u) || !OnlyReadBy(graph, neg_u->output(0), stack) ||
      !OnlyReadBy(graph, even_u->output(0), stack) || !OnlyReadBy(graph, stack->output(0), reshape)) {
    return nullptr;
  }
  if (!ShapesEqual(env, reshape->output(0)->type().shape, x->type().shape,
                   Provenance{kPass, reshape->name(), "rotate_every_two flattens the pairs back to x's shape"})) {
    return nullptr;
  }
  nodes.insert(nodes.end(), {even, odd, neg, neg_u, even_u, stack, reshape});
  return x;
}

// Partial rotary (GPT-J, GPT-NeoX, Phi): the rope `m` of x' = Slice(X, 0:r) is concatenated
// with the pass-through Slice(X, r:d) over the last axis, x' read only inside
// the pattern and the pass-through only by the Concat. Then the new node
// rotates X's first r channels and replaces the Concat.
void AbsorbPassThrough(const Graph& graph, RopeMatch& m) {
  Node* head = m.x->producer();
  Node* cat = SingleUser(m.result);
  if (head == nullptr || cat == nullptr || head->op_type() != "Slice" || head->num_inputs() < 1 ||
      cat->op_type() != "Concat" || cat->num_inputs() != 2 || cat->input(0) != m.result ||
      IsGraphOutput(graph, m.result) || m.result->uses().size() != 1) {
    return;
  }
  Value* full = head->input(0);
  const int64_t rank = full == nullptr ? 0 : full->type().rank();
  absl::StatusOr<int64_t> axis = cat->attrs().GetInt("axis");
  if (rank == 0 || full->type().dtype != DType::kF32 || !axis.ok() || (*axis != -1 && *axis != rank - 1)) return;
  std::optional<int64_t> d = full->type().shape.back().AsConst();
  const int64_t r = m.rotary_dim;
  Node* tail = cat->input(1)->producer();
  if (!d || *d <= r || tail == nullptr || !IsLastAxisSlice(*head, full, *d, 0, r) ||
      !IsLastAxisSlice(*tail, full, *d, r, *d) || !OnlyReadBy(graph, tail->output(0), cat) ||
      IsGraphOutput(graph, m.x) || m.a == m.x || m.b == m.x) {
    return;  // (x' as cos or sin would stay read after the rewrite)
  }
  for (const auto& use : m.x->uses()) {
    if (std::find(m.nodes.begin(), m.nodes.end(), use.user) == m.nodes.end()) return;
  }
  m.nodes.insert(m.nodes.begin(), {head, tail});
  m.nodes.push_back(cat);
  m.x = full;
  m.result = cat->output(0);
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
      if (m.x == nullptr) {
        m.x = MatchRotateEveryTwo(graph, env, rotated->producer(), m.nodes);
        if (m.x == nullptr) continue;
        m.op = "RotateEveryTwoMulAdd";
      }
      m.rotary_dim = *m.x->type().shape.back().AsConst();
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
      m.result = add->output(0);
      AbsorbPassThrough(graph, m);
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
    Attributes attrs;
    // (RotateHalfMulAdd over all of x keeps its short form, without the attribute.)
    if (m->op != std::string_view("RotateHalfMulAdd") || m->rotary_dim != *m->x->type().shape.back().AsConst()) {
      attrs.Set("rotary_dim", m->rotary_dim);
    }
    absl::StatusOr<Node*> rope =
        ReplaceWithNewNode(graph, env, m->result, m->nodes, m->op, {m->x, m->a, m->b}, std::move(attrs), kPass);
    if (!rope.ok()) return rope.status();
    removed.insert(m->nodes.begin(), m->nodes.end());
    changed = true;
  }
  return changed;
}

}  // namespace shapeshift::passes
