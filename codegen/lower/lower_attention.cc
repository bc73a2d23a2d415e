// A kAttention group (passes/fusion_plan.h) → one AttentionCall: the sizes
// and strides the fused core (codegen/cpu/fused_attention.h) reads, in
// model symbols.
#include <optional>

#include "absl/strings/str_cat.h"
#include "codegen/lower/lower_group.h"
#include "codegen/lower/lower_util.h"

namespace shapeshift::codegen::lower {
namespace {

// A rank-4 operand's {batch, head, row} strides and its heads and rows:
// [b, heads, rows, d] or, seq-major, [b, rows, heads, d].
struct Layout {
  std::array<SymExpr, 3> strides;
  SymExpr heads, rows;
};

Layout LayoutOf(const GraphValue* v, bool seq_major) {
  const std::vector<SymExpr>& s = v->type().shape;
  Layout l;
  l.heads = seq_major ? s[2] : s[1];
  l.rows = seq_major ? s[1] : s[2];
  const SymExpr d = s[3];
  l.strides = {s[1] * s[2] * d, seq_major ? d : l.rows * d, seq_major ? l.heads * d : d};
  return l;
}

// A seq-major operand read in place from `source` [b, S, W]: its rows W apart.
void ReadFrom(const passes::AttentionGroup::Source& source, Layout& l, const GraphValue*& buffer, SymExpr& offset) {
  if (source.value == nullptr) return;
  const std::vector<SymExpr>& w = source.value->type().shape;
  l.strides = {w[1] * w[2], l.strides[1], w[2]};
  buffer = source.value;
  offset = source.offset;
}

}  // namespace

absl::StatusOr<AttentionCall> LowerAttention(const passes::Group& g) {
  const passes::AttentionGroup& a = g.attention;
  const Node* softmax = nullptr;
  for (const Node* n : g.nodes) {
    if (n->op_type() == "Softmax" || n->op_type() == "CausalSoftmax") softmax = n;
  }
  auto error = [&](const std::string& why) { return GroupError(g, softmax, why); };
  for (const GraphValue* v : {a.q, a.k, a.v, a.out}) {
    if (v == nullptr || v->type().rank() != 4 || v->type().dtype != DType::kF32) {
      return error("an attention's Q, K, V and output must be rank-4 f32 tensors");
    }
  }
  if (a.mask != nullptr && (a.mask->type().dtype != DType::kF32 || a.mask->type().rank() > 4)) {
    return error("an attention's mask must be f32 of rank <= 4");
  }
  for (auto [source, seq_major] : {std::pair{&a.q_source, a.q_seq_major}, std::pair{&a.k_source, a.k_seq_major},
                                   std::pair{&a.v_source, a.v_seq_major}}) {
    if (source->value != nullptr && (!seq_major || source->value->type().rank() != 3)) {
      return error("an attention operand read in place from a wider tensor must be seq-major, from a rank-3 tensor");
    }
  }
  AttentionCall call;
  call.q = a.q, call.k = a.k, call.v = a.v, call.mask = a.mask, call.out = a.out;
  Layout q = LayoutOf(a.q, a.q_seq_major);
  Layout k = LayoutOf(a.k, a.k_seq_major);
  Layout v = LayoutOf(a.v, a.v_seq_major);
  ReadFrom(a.q_source, q, call.q, call.q_offset);
  ReadFrom(a.k_source, k, call.k, call.k_offset);
  ReadFrom(a.v_source, v, call.v, call.v_offset);
  const Layout o = LayoutOf(a.out, a.out_seq_major);
  std::optional<int64_t> d = a.q->type().shape[3].AsConst();
  std::optional<int64_t> dv = a.v->type().shape[3].AsConst();
  if (!d || !dv) return error("an attention's head dims must be constants");
  call.batch = a.q->type().shape[0];
  call.heads = q.heads;
  call.kv_heads = k.heads;
  call.q_len = q.rows;
  call.kv_len = k.rows;
  call.head_dim = *d;
  call.v_head_dim = *dv;
  call.k_seq_major = a.k_seq_major;
  call.v_seq_major = a.v_seq_major;
  call.q_strides = q.strides;
  call.k_strides = k.strides;
  call.v_strides = v.strides;
  call.out_strides = o.strides;
  if (a.mask != nullptr) {
    // Right-aligned to [b, h, S, T]; a dim of 1 broadcasts (stride 0).
    std::vector<SymExpr> shape = a.mask->type().shape;
    shape.insert(shape.begin(), 4 - shape.size(), SymExpr(1));
    auto stride = [&](size_t i) {
      return shape[i].AsConst() == std::optional<int64_t>(1) ? SymExpr(0) : Product(shape, i + 1, 4);
    };
    call.mask_strides = {stride(0), stride(1), stride(2)};
    call.mask_col_stride = shape[3].AsConst() == std::optional<int64_t>(1) ? 0 : 1;
  }
  call.scale = a.scale;
  call.causal = a.causal;
  call.window = a.window;
  call.fill = a.fill;
  call.nan_to_zero = a.nan_to_zero;
  call.node_name = softmax != nullptr ? softmax->name() : g.nodes.front()->name();
  return call;
}

}  // namespace shapeshift::codegen::lower
