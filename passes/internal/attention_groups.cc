#include "passes/internal/attention_groups.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "passes/graph_rewrite.h"

namespace shapeshift::passes::internal {
namespace {

// The value a single-result group computes last (its one output).
Value* Result(Grouping& g, int gid) { return g.group(gid).nodes.back()->output(0); }

int ProducerGroup(Grouping& g, const Value* v) {
  return v->producer() == nullptr ? -1 : g.GroupOfNode(v->producer());
}

bool IsHeadTranspose(const Node& n) {
  if (n.op_type() != "Transpose") return false;
  absl::StatusOr<std::vector<int64_t>> perm = n.attrs().GetInts("perm");
  return perm.ok() && *perm == std::vector<int64_t>{0, 2, 1, 3};
}

// The one-node head-transpose group producing `v`, read by nothing outside
// `reader`; -1 when there is none.
int AbsorbableInputTranspose(Grouping& g, const Value* v, int reader) {
  const int t = ProducerGroup(g, v);
  if (t < 0) return -1;
  const Group& group = g.group(t);
  if (group.kind != GroupKind::kTranspose || group.nodes.size() != 1 || !IsHeadTranspose(*group.nodes[0])) return -1;
  return g.ReadOnlyBy(v, reader) ? t : -1;
}

// The one-node head-transpose group that is the only reader of `v`.
int AbsorbableOutputTranspose(Grouping& g, const Value* v) {
  if (IsGraphOutput(g.graph(), v)) return -1;
  Node* user = SingleUser(v);
  if (user == nullptr || !IsHeadTranspose(*user)) return -1;
  const int t = g.GroupOfNode(user);
  if (t < 0) return -1;
  const Group& group = g.group(t);
  if (group.kind != GroupKind::kTranspose || group.nodes.size() != 1) return -1;
  for (const Use& u : v->uses()) {
    if (u.user != user) return -1;
  }
  return t;
}

bool PlainBatchedMatmul(const Group& group) {
  const MatmulGroup& m = group.matmul;
  return group.kind == GroupKind::kMatmul && !m.b_is_2d && m.bias == nullptr && m.residual == nullptr &&
         m.activation == GeluForm::kNone && m.a->type().rank() == 4 && m.b->type().rank() == 4 &&
         m.a->type().dtype == DType::kF32 && m.b->type().dtype == DType::kF32;
}

// Only the softmax, its mask's Add and its scale: nothing the fused kernel
// would have to recompute (relative positions, an ALiBi bias, views).
bool PlainSoftmax(const Group& group) {
  const SoftmaxGroup& sm = group.softmax;
  if (group.kind != GroupKind::kSoftmax || sm.log || sm.select || sm.keep || sm.bias != nullptr) return false;
  if (sm.x == nullptr || sm.x->type().rank() != 4 || sm.axis != 3 || sm.axis_end != 4) return false;
  if (sm.mask != nullptr && sm.mask->type().dtype != DType::kF32) return false;
  for (const Node* n : group.nodes) {
    const std::string& op = n->op_type();
    if (op != "Softmax" && op != "CausalSoftmax" && op != "Add" && op != "Mul" && op != "Div") return false;
  }
  return true;
}

// True when group `gid` is exactly Where(IsNaN(p), 0, p) and the only reader of p.
bool NanToZeroGroup(Grouping& g, int gid, const Value* p) {
  const Group& group = g.group(gid);
  if (group.kind != GroupKind::kElementwise || group.nodes.size() != 2) return false;
  const Node* is_nan = group.nodes[0];
  const Node* where = group.nodes[1];
  return is_nan->op_type() == "IsNaN" && is_nan->input(0) == p && where->op_type() == "Where" &&
         where->input(0) == is_nan->output(0) && IsConstantFilledWith(where->input(1), 0.0) &&
         ConstantScalar(where->input(1)).has_value() && where->input(2) == p && g.ReadOnlyBy(p, gid);
}

bool ConstantDim(SymExpr d) { return d.AsConst().has_value(); }

// Every dim of the mask (right-aligned) is 1 or provably the scores' dim.
bool MaskBroadcasts(Grouping& g, const Value* mask, const std::vector<SymExpr>& scores, const Node& at) {
  const std::vector<SymExpr>& shape = mask->type().shape;
  if (shape.size() > scores.size()) return false;
  const size_t shift = scores.size() - shape.size();
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i].AsConst() == std::optional<int64_t>(1)) continue;
    if (!DimsEqual(g.env(), shape[i], scores[shift + i],
                   Provenance{"fusion", at.name(), "the attention mask's dim is the scores' dim"})) {
      return false;
    }
  }
  return true;
}

// A group that is one Reshape (a kView: its output aliases its input).
bool IsReshapeView(Grouping& g, int gid) {
  if (gid < 0) return false;
  const Group& group = g.group(gid);
  return group.kind == GroupKind::kView && group.nodes.size() == 1 && group.nodes[0]->op_type() == "Reshape";
}

// The grouped-query form (passes/grouped_query_matmul.h): `grouped` is
// `plain` [b, H, m, x] read as [b, G, R·m, x], G = kv_heads, H = G·R — query
// head g·R + r is grouped row block r of key/value head g, which is the fused
// kernel's head-to-key/value-head rule.
bool Regroups(Grouping& g, const Value* plain, const Value* grouped, int64_t kv_heads, const Node& at) {
  const std::vector<SymExpr>& ps = plain->type().shape;
  const std::vector<SymExpr>& gs = grouped->type().shape;
  if (ps.size() != 4 || gs.size() != 4 || gs[1].AsConst() != kv_heads) return false;
  std::optional<int64_t> heads = ps[1].AsConst();
  if (!heads || kv_heads < 1 || *heads % kv_heads != 0) return false;
  const Provenance why{"fusion", at.name(), "grouped-query attention regroups heads as rows"};
  return DimsEqual(g.env(), ps[0], gs[0], why) && DimsEqual(g.env(), gs[2], SymExpr(*heads / kv_heads) * ps[2], why) &&
         DimsEqual(g.env(), ps[3], gs[3], why);
}

// The view group that is the only reader of `v`: its output, or null.
Value* OnlyReaderView(Grouping& g, const Value* v, int* view) {
  Node* user = SingleUser(v);
  if (user == nullptr || IsGraphOutput(g.graph(), v)) return nullptr;
  for (const Use& u : v->uses()) {
    if (u.user != user) return nullptr;
  }
  *view = g.GroupOfNode(user);
  return IsReshapeView(g, *view) && user->input(0) == v ? user->output(0) : nullptr;
}

// `value` (a seq-major operand [b, S, h, d] read only by group `reader`) as
// the Reshape of a slice of a wider tensor's last axis — [b, S, W] →
// Slice [:, :, c : c + h·d] → Reshape [b, S, h, d], each result read only
// by the next, c a constant — so the attention can read its rows in place,
// W apart. The source and the view and slice groups (to merge), or false.
bool SliceSourceOf(Grouping& g, const Value* value, int reader, const Node& at, AttentionGroup::Source* source,
                   int* view, int* slice) {
  *view = ProducerGroup(g, value);
  if (!IsReshapeView(g, *view) || Result(g, *view) != value || !g.ReadOnlyBy(value, reader)) return false;
  const Value* sliced = g.group(*view).nodes[0]->input(0);
  *slice = ProducerGroup(g, sliced);
  if (*slice < 0) return false;
  const Group& group = g.group(*slice);
  if (group.kind != GroupKind::kSlice || group.nodes.size() != 1 || Result(g, *slice) != sliced ||
      !g.ReadOnlyBy(sliced, *view)) {
    return false;
  }
  Value* wide = group.nodes[0]->input(0);
  const std::vector<SymExpr>& ws = wide->type().shape;
  const std::vector<SymExpr>& xs = sliced->type().shape;
  const std::vector<SymExpr>& vs = value->type().shape;
  const SliceGroup& fields = group.slice;
  if (ws.size() != 3 || xs.size() != 3 || vs.size() != 4 || wide->type().dtype != DType::kF32 ||
      fields.starts.size() != 3 || fields.steps != std::vector<int64_t>{1, 1, 1} ||
      fields.starts[0].AsConst() != 0 || fields.starts[1].AsConst() != 0 || !fields.starts[2].AsConst()) {
    return false;
  }
  // The slice keeps every batch and position and h·d columns; the view only
  // splits those columns into heads.
  std::optional<int64_t> columns = xs[2].AsConst(), heads = vs[2].AsConst(), dim = vs[3].AsConst();
  const Provenance why{"fusion", at.name(), "an attention operand is a slice of a wider tensor's columns"};
  if (!columns || !heads || !dim || *heads * *dim != *columns || !DimsEqual(g.env(), xs[0], ws[0], why) ||
      !DimsEqual(g.env(), xs[1], ws[1], why) || !DimsEqual(g.env(), vs[0], xs[0], why) ||
      !DimsEqual(g.env(), vs[1], xs[1], why)) {
    return false;
  }
  source->value = wide;
  source->offset = fields.starts[2];
  return true;
}

bool TryMerge(Grouping& g, int sid, int64_t max_head_dim) {
  const Group& softmax = g.group(sid);
  if (!PlainSoftmax(softmax)) return false;
  const SoftmaxGroup sm = softmax.softmax;
  Node* softmax_node = softmax.nodes.back();
  if (!g.ReadOnlyBy(sm.x, sid)) return false;
  std::vector<int> merged;
  // The scores: the Q·Kᵀ matmul's result, or — grouped-query attention — a
  // view of it ([b, G, R·m, n] as [b, H, m, n]).
  int m1 = ProducerGroup(g, sm.x);
  const bool grouped = IsReshapeView(g, m1);
  if (grouped) {
    merged.push_back(m1);
    Value* grouped_scores = g.group(m1).nodes[0]->input(0);
    const int view = m1;
    m1 = ProducerGroup(g, grouped_scores);
    if (m1 < 0 || Result(g, m1) != grouped_scores || !g.ReadOnlyBy(grouped_scores, view)) return false;
  }
  if (m1 < 0 || !PlainBatchedMatmul(g.group(m1)) || !g.group(m1).matmul.transpose_b) return false;
  if (!grouped && Result(g, m1) != sm.x) return false;
  const MatmulGroup& qk = g.group(m1).matmul;
  Value* q = qk.a;
  Value* k = qk.b;
  int q_reader = m1;  // the group that reads Q
  const int64_t kv_heads = k->type().shape[1].AsConst().value_or(0);
  if (grouped) {
    // Q read through the view that groups its heads.
    q_reader = ProducerGroup(g, q);
    if (!IsReshapeView(g, q_reader) || !g.ReadOnlyBy(q, m1)) return false;
    merged.push_back(q_reader);
    Value* plain_q = g.group(q_reader).nodes[0]->input(0);
    if (!Regroups(g, plain_q, q, kv_heads, *softmax_node) ||
        !Regroups(g, sm.x, Result(g, m1), kv_heads, *softmax_node)) {
      return false;
    }
    q = plain_q;
  }
  // The probabilities, through torch SDPA's NaN-to-zero Where if present.
  Value* p = softmax_node->output(0);
  if (IsGraphOutput(g.graph(), p)) return false;
  if (p->uses().empty()) return false;
  // p is read by IsNaN and the Where (NanToZeroGroup checks that is all), or by one matmul.
  Node* user = p->uses().front().user;
  int nan_group = -1;
  if (user->op_type() == "IsNaN") {
    nan_group = g.GroupOfNode(user);
    if (nan_group < 0 || !NanToZeroGroup(g, nan_group, p)) return false;
    p = g.group(nan_group).nodes[1]->output(0);
    if (IsGraphOutput(g.graph(), p)) return false;
  }
  // Grouped-query form: the value `v`'s only reader is a view regrouping it
  // (to the grouped layout, or back from it); its output, with the view merged.
  auto through_view = [&](Value* v, bool to_grouped) -> Value* {
    int view = -1;
    Value* w = OnlyReaderView(g, v, &view);
    if (w == nullptr || !Regroups(g, to_grouped ? v : w, to_grouped ? w : v, kv_heads, *softmax_node)) return nullptr;
    merged.push_back(view);
    return w;
  };
  if (grouped && (p = through_view(p, /*to_grouped=*/true)) == nullptr) return false;
  user = SingleUser(p);
  if (user == nullptr) return false;
  const int m2 = g.GroupOfNode(user);
  if (m2 < 0 || !PlainBatchedMatmul(g.group(m2))) return false;
  const MatmulGroup& pv = g.group(m2).matmul;
  if (pv.transpose_b || pv.scale != 1.0f || pv.a != p || g.group(m2).nodes.size() != 1 || !g.ReadOnlyBy(p, m2)) {
    return false;
  }
  Value* out = Result(g, m2);
  if (grouped && (out = through_view(out, /*to_grouped=*/false)) == nullptr) return false;
  Value* v = pv.b;
  const std::vector<SymExpr>& qs = q->type().shape;
  const std::vector<SymExpr>& ks = k->type().shape;
  const std::vector<SymExpr>& vs = v->type().shape;
  if (!ConstantDim(qs[3]) || !ConstantDim(vs[3]) || ks[3] != qs[3] ||
      (max_head_dim > 0 && (*qs[3].AsConst() > max_head_dim || *vs[3].AsConst() > max_head_dim)) ||
      !DimsEqual(g.env(), ks[2], vs[2], Provenance{"fusion", user->name(), "keys and values have one length"})) {
    return false;
  }
  // One batch; K and V have the same heads, which divide Q's (equal but for
  // the grouped-query form): no head or batch the matmuls broadcast.
  const Provenance batch_why{"fusion", user->name(), "queries, keys and values have one batch"};
  std::optional<int64_t> q_heads = qs[1].AsConst();
  if (!q_heads || kv_heads < 1 || vs[1].AsConst() != kv_heads || (grouped ? *q_heads % kv_heads : *q_heads - kv_heads) != 0 ||
      !DimsEqual(g.env(), qs[0], ks[0], batch_why) || !DimsEqual(g.env(), qs[0], vs[0], batch_why)) {
    return false;
  }
  if (sm.mask != nullptr && !MaskBroadcasts(g, sm.mask, sm.x->type().shape, *softmax_node)) return false;

  AttentionGroup a;
  a.scale = qk.scale * sm.scale;
  a.mask = sm.mask;
  a.causal = sm.causal;
  a.window = sm.window;
  a.fill = sm.fill;
  a.nan_to_zero = nan_group >= 0;
  merged.push_back(m1);
  if (nan_group >= 0) merged.push_back(nan_group);
  merged.push_back(m2);
  // Q and K may be one value (X·Xᵀ): both then read the one absorbed
  // transpose's input (and slice).
  auto merge = [&](int gid) {
    if (std::find(merged.begin(), merged.end(), gid) == merged.end()) merged.push_back(gid);
  };
  auto absorb_input = [&](Value*& value, bool& seq_major, AttentionGroup::Source& source, int reader) {
    const int t = AbsorbableInputTranspose(g, value, reader);
    if (t < 0) return;
    merge(t);
    value = g.group(t).nodes[0]->input(0);
    seq_major = true;
    int view = -1, slice = -1;
    if (SliceSourceOf(g, value, t, *softmax_node, &source, &view, &slice)) {
      merge(view);
      merge(slice);
    }
  };
  a.q = q;
  a.k = k;
  a.v = v;
  absorb_input(a.q, a.q_seq_major, a.q_source, q_reader);
  absorb_input(a.k, a.k_seq_major, a.k_source, m1);
  absorb_input(a.v, a.v_seq_major, a.v_source, m2);
  a.out = out;
  if (int t = AbsorbableOutputTranspose(g, a.out); t >= 0) {
    merged.push_back(t);
    a.out = g.group(t).nodes[0]->output(0);
    a.out_seq_major = true;
  }
  for (int gid : merged) g.MergeInto(gid, sid);
  Group& group = g.group(sid);
  group.kind = GroupKind::kAttention;
  group.attention = a;
  return true;
}

}  // namespace

int MergeAttentionGroups(Grouping& g, int64_t max_head_dim) {
  int merged = 0;
  const int count = g.num_groups();
  for (int gid = 0; gid < count; ++gid) {
    if (g.group(gid).kind == GroupKind::kSoftmax && TryMerge(g, gid, max_head_dim)) ++merged;
  }
  return merged;
}

}  // namespace shapeshift::passes::internal
