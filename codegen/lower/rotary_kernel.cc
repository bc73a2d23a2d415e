// The fused rotary embeddings (passes/rotary_embedding_recognition.h) as one
// row kernel over the last axis, the decomposed graph's arithmetic in its
// order, x*a + rotated*b with rotated = -x' or x' (graph/reference/rotary.cc):
//
//   RotateHalfMulAdd: two contiguous half loops over the rotary_dim = 2h
//   channels instead of a (j + h) mod 2h gather: the rotated operand is
//   -x[j + h] in the first half and x[j - h] in the second.
//   RotateEveryTwoMulAdd: one contiguous loop over the rotary_dim channels
//   whose partner x[j xor 1] (in the row: j + 1 - 2*(j mod 2)) is negated at
//   even j.
//   Both: then a copy loop over the channels past rotary_dim.
//
// Nothing is computed inline: x, a and b are buffers.
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "codegen/lower/element_emitter.h"
#include "codegen/lower/lower_group.h"
#include "codegen/lower/lower_util.h"
#include "codegen/lower/row_loop.h"

namespace shapeshift::codegen::lower {
namespace {

const char* OpOf(const passes::RotaryGroup& r) { return r.every_two ? "RotateEveryTwoMulAdd" : "RotateHalfMulAdd"; }

}  // namespace

absl::StatusOr<KernelCall> LowerRotary(const passes::Group& g, ShapeEnv* env) {
  const passes::RotaryGroup& r = g.rotary;
  const Node* node = g.nodes.size() == 1 && g.nodes[0]->op_type() == OpOf(r) ? g.nodes[0] : nullptr;
  auto fail = [&](absl::string_view why) { return GroupError(g, g.nodes.empty() ? nullptr : g.nodes.back(), why); };
  if (node == nullptr || r.x == nullptr || r.a == nullptr || r.b == nullptr || r.half <= 0) {
    return fail(absl::StrCat("no ", OpOf(r), " node"));
  }
  const int64_t rotated = 2 * r.half;
  const std::vector<SymExpr>& domain = node->output(0)->type().shape;
  std::optional<int64_t> d = domain.empty() ? std::nullopt : domain.back().AsConst();
  if (!d || *d < rotated || r.x->type().rank() == 0 || r.x->type().shape.back() != SymExpr(*d)) {
    return fail(absl::StrCat("the last dim of x and of the result must be at least ", rotated));
  }
  KernelBuilder b(env, {}, r.every_two ? "rotate_every_two_mul_add" : "rotate_half_mul_add");
  RowLoop loop = MakeRowLoop(&b.call->kernel, &b.em, domain, 1);
  const SymExpr j = loop.idx.back();
  auto with_last = [&](SymExpr last) {
    std::vector<SymExpr> idx = loop.idx;
    idx.back() = last;
    return idx;
  };
  // a and b broadcast to the rotated channels of the result.
  std::vector<SymExpr> rotated_domain = domain;
  rotated_domain.back() = SymExpr(rotated);
  SS_ASSIGN_OR_RETURN(x, b.em.EmitBroadcast(r.x, domain, loop.idx, node));
  SS_ASSIGN_OR_RETURN(cos_j, b.em.EmitBroadcast(r.a, rotated_domain, loop.idx, node));
  SS_ASSIGN_OR_RETURN(sin_j, b.em.EmitBroadcast(r.b, rotated_domain, loop.idx, node));
  SS_ASSIGN_OR_RETURN(y, b.em.OutputBuffer(node->output(0)));
  if (!r.every_two) {
    SS_ASSIGN_OR_RETURN(x_upper, b.em.EmitBroadcast(r.x, domain, with_last(j + r.half), node));
    SS_ASSIGN_OR_RETURN(x_lower, b.em.EmitBroadcast(r.x, domain, with_last(j - r.half), node));
    b.call->kernel.body = {
        Loop(kInnerVar, 0, r.half, {Store(y, loop.linear, x * cos_j + Unary(UnaryOp::kNeg, x_upper) * sin_j)}),
        Loop(kInnerVar, r.half, rotated, {Store(y, loop.linear, x * cos_j + x_lower * sin_j)}),
    };
  } else {
    const SymExpr parity = Mod(j, SymExpr(2));
    SS_ASSIGN_OR_RETURN(partner, b.em.EmitBroadcast(r.x, domain, with_last(j + 1 - parity * 2), node));
    Value even = Compare(CompareOp::kEq, IndexValue(parity), I64(0));
    Value rotated_j = Select(even, Unary(UnaryOp::kNeg, partner), partner);
    b.call->kernel.body = {Loop(kInnerVar, 0, rotated, {Store(y, loop.linear, x * cos_j + rotated_j * sin_j)})};
  }
  if (*d > rotated) b.call->kernel.body.push_back(Loop(kInnerVar, rotated, loop.n, {Store(y, loop.linear, x)}));
  return b.Take();
}

}  // namespace shapeshift::codegen::lower
