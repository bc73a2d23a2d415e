// The kernel-producing group lowerings: elementwise DAGs (also transposes and
// reshape copies, which are index remaps), softmax and log-softmax, layer
// norm, concat and slice copies (the rotary embeddings: rotary_kernel.cc; the
// reductions: reduce_kernel.cc).
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "codegen/lower/element_emitter.h"
#include "codegen/lower/lower_group.h"
#include "codegen/lower/lower_util.h"
#include "codegen/lower/row_loop.h"

namespace shapeshift::codegen::lower {
namespace {

absl::Status GroupError(const passes::Group& g, absl::string_view why) {
  return lower::GroupError(g, g.nodes.empty() ? nullptr : g.nodes.back(), why);
}

const Node* FindOp(const passes::Group& g, absl::string_view op) {
  for (const Node* n : g.nodes) {
    if (n->op_type() == op) return n;
  }
  return nullptr;
}

bool SameShape(ShapeEnv* env, const std::vector<SymExpr>& a, const std::vector<SymExpr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i] && !env->CanProveEqual(a[i], b[i])) return false;
  }
  return true;
}

using Builder = KernelBuilder;

std::string KernelName(const passes::Group& g) {
  return absl::StrCat("fused_", g.nodes.empty() ? "" : g.nodes.back()->op_type());
}

Value F32Var(absl::string_view name) { return Var(name, ScalarType::kF32); }

// `allowed(i, j) ? value : fill` of a causal softmax (passes::SoftmaxGroup:
// its mask stage with window and fill, or its keep stage with keep_window
// and keep_fill), i and j the last two indices of `idx` over kernel dims
// `dims`: the mask tensor the graph built from position vectors or sliced
// from a table, as a compare of indices.
Value CausalSelect(int64_t window, float fill_value, const std::vector<SymExpr>& dims, const std::vector<SymExpr>& idx,
                   Value value) {
  const size_t rank = dims.size();
  const SymExpr last_allowed = idx[rank - 2] + dims[rank - 1] - dims[rank - 2];  // i + past
  const Value j = IndexValue(idx[rank - 1]);
  const Value fill = F32(fill_value);
  Value v = Select(Compare(CompareOp::kLe, j, IndexValue(last_allowed)), value, fill);
  if (window > 0) v = Select(Compare(CompareOp::kGt, j, IndexValue(last_allowed - window)), v, fill);
  return v;
}

}  // namespace

absl::StatusOr<KernelCall> LowerElementwise(const passes::Group& g, ShapeEnv* env) {
  if (g.outputs.empty()) return GroupError(g, "the group has no outputs");
  std::vector<SymExpr> domain =
      g.kind == passes::GroupKind::kElementwise ? g.elementwise.domain : g.outputs[0]->type().shape;
  Builder b(env, g.nodes, KernelName(g));
  RowLoop loop = MakeRowLoop(&b.call->kernel, &b.em, domain, 1);
  std::vector<Stmt> stores;
  for (const GraphValue* out : g.outputs) {
    if (!SameShape(env, out->type().shape, domain)) {
      return GroupError(g, absl::StrCat("output '", out->name(), "' does not have the group's domain shape"));
    }
    SS_ASSIGN_OR_RETURN(value, b.em.Emit(out, loop.idx));
    SS_ASSIGN_OR_RETURN(buffer, b.em.OutputBuffer(out));
    stores.push_back(Store(buffer, loop.linear, value));
  }
  b.call->kernel.body = {Loop(kInnerVar, 0, loop.n, std::move(stores))};
  return b.Take();
}

absl::StatusOr<KernelCall> LowerSoftmax(const passes::Group& g, ShapeEnv* env) {
  const passes::SoftmaxGroup& s = g.softmax;
  const char* op = s.causal ? "CausalSoftmax" : s.log ? "LogSoftmax" : "Softmax";
  const Node* softmax = FindOp(g, op);
  if (softmax == nullptr || s.x == nullptr) return GroupError(g, absl::StrCat("no ", op, " node"));
  const std::vector<SymExpr>& domain = s.x->type().shape;
  if (domain.empty()) return GroupError(g, "softmax of a scalar");
  if (s.causal && domain.size() < 2) return GroupError(g, "causal softmax of rank < 2");
  const int64_t rank = static_cast<int64_t>(domain.size());
  const int64_t axis = s.axis < 0 ? rank - 1 : s.axis;
  const int64_t axis_end = s.axis_end < 0 ? rank : s.axis_end;
  if (axis >= axis_end || axis_end > rank || (s.causal && axis != rank - 1)) {
    return GroupError(g, "the softmax's axes are outside its input");
  }
  std::vector<int64_t> line;
  for (int64_t a = axis; a < axis_end; ++a) line.push_back(a);
  Builder b(env, g.nodes, s.causal ? "causal_softmax" : s.log ? "log_softmax" : "softmax");
  // The last axis: a contiguous row; another axis: a line read at its stride.
  RowLoop loop = MakeLineLoop(&b.call->kernel, &b.em, domain, line);
  SS_ASSIGN_OR_RETURN(logit, b.em.Emit(s.x, loop.idx));
  if (s.scale != 1.0f) logit = logit * F32(s.scale);
  if (s.causal && s.keep) logit = CausalSelect(s.keep_window, s.keep_fill, b.em.dims().Bind(domain), loop.idx, logit);
  Value mask = s.causal ? F32(0) : nullptr;
  if (s.mask != nullptr) {
    SS_ASSIGN_OR_RETURN(tensor, b.em.EmitBroadcast(s.mask, domain, loop.idx, softmax));
    mask = tensor;
  }
  if (s.causal && s.select) {
    // (allowed and mask) ? logit : fill: the causal bound selects the
    // masked logit, the fill elsewhere (no addition anywhere).
    logit = CausalSelect(s.window, s.fill, b.em.dims().Bind(domain), loop.idx, Select(mask, logit, F32(s.fill)));
  } else {
    if (s.causal) mask = CausalSelect(s.window, s.fill, b.em.dims().Bind(domain), loop.idx, mask);
    if (mask != nullptr) logit = logit + mask;
  }
  SS_ASSIGN_OR_RETURN(y, b.em.OutputBuffer(softmax->output(0)));
  if (s.log) {
    // (x - max) - log(sum(exp(x - max))), the reference's order of operations.
    b.call->kernel.body = {
        Accumulator("row_max", F32(-std::numeric_limits<double>::infinity())),
        Loop(kInnerVar, 0, loop.n, {Accumulate("row_max", ReduceOp::kMax, logit)}),
        Accumulator("row_sum", F32(0)),
        Loop(kInnerVar, 0, loop.n, {Accumulate("row_sum", ReduceOp::kSum, Exp(logit - F32Var("row_max")))}),
        Let("log_sum", Unary(UnaryOp::kLog, F32Var("row_sum"))),
        Loop(kInnerVar, 0, loop.n, {Store(y, loop.linear, (logit - F32Var("row_max")) - F32Var("log_sum"))}),
    };
    return b.Take();
  }
  b.call->kernel.body = {
      Accumulator("row_max", F32(-std::numeric_limits<double>::infinity())),
      Loop(kInnerVar, 0, loop.n, {Accumulate("row_max", ReduceOp::kMax, logit)}),
      Accumulator("row_sum", F32(0)),
      Loop(kInnerVar, 0, loop.n,
           {Let("e", Exp(logit - F32Var("row_max"))), Store(y, loop.linear, F32Var("e")),
            Accumulate("row_sum", ReduceOp::kSum, F32Var("e"))}),
      Let("inv_sum", Unary(UnaryOp::kRecip, F32Var("row_sum"))),
      Loop(kInnerVar, 0, loop.n, {Store(y, loop.linear, Load(y, loop.linear) * F32Var("inv_sum"))}),
  };
  return b.Take();
}

absl::StatusOr<KernelCall> LowerLayerNorm(const passes::Group& g, ShapeEnv* env) {
  const passes::LayerNormGroup& s = g.layer_norm;
  const Node* ln = FindOp(g, s.rms ? "RMSNormalization" : "LayerNormalization");
  if (ln == nullptr || s.x == nullptr || s.gamma == nullptr) {
    return GroupError(g, s.rms ? "no RMSNormalization node" : "no LayerNormalization node");
  }
  const std::vector<SymExpr>& domain = s.x->type().shape;
  if (domain.empty()) return GroupError(g, "layer norm of a scalar");
  Builder b(env, g.nodes, s.rms ? "rms_norm" : "layer_norm");
  RowLoop loop = MakeRowLoop(&b.call->kernel, &b.em, domain, 1);
  SS_ASSIGN_OR_RETURN(x, b.em.Emit(s.x, loop.idx));
  if (s.residual != nullptr) {
    SS_ASSIGN_OR_RETURN(r, b.em.EmitBroadcast(s.residual, domain, loop.idx, ln));
    x = x + r;
  }
  SS_ASSIGN_OR_RETURN(gamma, b.em.EmitBroadcast(s.gamma, domain, loop.idx, ln));
  Value beta = F32(0);
  if (s.beta != nullptr) {
    SS_ASSIGN_OR_RETURN(beta_value, b.em.EmitBroadcast(s.beta, domain, loop.idx, ln));
    beta = beta_value;
  }
  // The mean sums x * (1/n), not x, and is clamped to the row's [min, max]
  // (rounding can push a row of FLT_MAX past it): it never overflows, while
  // x - mean and the sum of squares overflow to +inf as f32 must (the
  // variance is then +inf, the row B, or NaN where x - mean is infinite).
  // graph/reference/normalization.cc has the same semantics, and so has
  // ONNX Runtime's vectorized kernel.
  std::vector<Stmt> sum_loop = {Let("v", x), Accumulate("mean_sum", ReduceOp::kSum, F32Var("v") * F32Var("inv_n")),
                                Accumulate("x_max", ReduceOp::kMax, F32Var("v")),
                                Accumulate("x_neg_min", ReduceOp::kMax, Unary(UnaryOp::kNeg, F32Var("v")))};
  if (s.sum_output != nullptr) {
    SS_ASSIGN_OR_RETURN(sum_buffer, b.em.OutputBuffer(s.sum_output));
    sum_loop.insert(sum_loop.begin() + 1, Store(sum_buffer, loop.linear, F32Var("v")));
  }
  SS_ASSIGN_OR_RETURN(y, b.em.OutputBuffer(ln->output(0)));
  Value n_f32 = Cast(ScalarType::kF32, IndexValue(loop.n));
  if (s.rms) {
    // One pass for the sum of squares (which overflows to +inf as f32 must:
    // the row is then x * 0, graph/reference/normalization.cc), one for y.
    std::vector<Stmt> rms_sum = {Let("v", x), Accumulate("sum_sq", ReduceOp::kSum, F32Var("v") * F32Var("v"))};
    if (s.sum_output != nullptr) {
      SS_ASSIGN_OR_RETURN(sum_buffer, b.em.OutputBuffer(s.sum_output));
      rms_sum.push_back(Store(sum_buffer, loop.linear, F32Var("v")));
    }
    b.call->kernel.body = {
        Accumulator("sum_sq", F32(0)),
        Loop(kInnerVar, 0, loop.n, std::move(rms_sum)),
        Let("inv_rms", Unary(UnaryOp::kRsqrt, F32Var("sum_sq") * Unary(UnaryOp::kRecip, n_f32) + F32(s.epsilon))),
        Loop(kInnerVar, 0, loop.n, {Store(y, loop.linear, x * F32Var("inv_rms") * gamma)}),
    };
    return b.Take();
  }
  Value centered = x - F32Var("mean");
  b.call->kernel.body = {
      Let("inv_n", Unary(UnaryOp::kRecip, n_f32)),
      Accumulator("mean_sum", F32(0)),
      Accumulator("x_max", F32(-std::numeric_limits<double>::infinity())),
      Accumulator("x_neg_min", F32(-std::numeric_limits<double>::infinity())),
      Loop(kInnerVar, 0, loop.n, std::move(sum_loop)),
      Let("mean", Binary(BinaryOp::kMin, Max(F32Var("mean_sum"), Unary(UnaryOp::kNeg, F32Var("x_neg_min"))),
                         F32Var("x_max"))),
      Accumulator("sum_sq", F32(0)),
      Loop(kInnerVar, 0, loop.n, {Let("c", centered), Accumulate("sum_sq", ReduceOp::kSum, F32Var("c") * F32Var("c"))}),
      Let("inv_std", Unary(UnaryOp::kRsqrt, F32Var("sum_sq") * F32Var("inv_n") + F32(s.epsilon))),
      Loop(kInnerVar, 0, loop.n, {Store(y, loop.linear, centered * F32Var("inv_std") * gamma + beta)}),
  };
  return b.Take();
}

absl::StatusOr<std::vector<LoweredStep>> LowerConcat(const passes::Group& g, ShapeEnv* env) {
  if (g.nodes.size() != 1 || g.outputs.size() != 1) return GroupError(g, "expects one Concat node");
  const Node* concat = g.nodes[0];
  const GraphValue* out = g.outputs[0];
  int64_t axis = g.concat.axis;
  std::vector<LoweredStep> steps;
  SymExpr offset = 0;
  // One copy kernel per input, each writing its slab of the output; the
  // kernels of equally shaped inputs (K and V caches) are the same kernel.
  int input = -1;
  for (const GraphValue* in : concat->inputs()) {
    ++input;
    if (in == nullptr) continue;
    Builder b(env, {}, "concat_copy");
    RowLoop loop = MakeRowLoop(&b.call->kernel, &b.em, in->type().shape, 1);
    SS_ASSIGN_OR_RETURN(value, b.em.Emit(in, loop.idx));
    // The slab offset and the output's axis length are opaque dims, so the
    // copies of all equally shaped inputs are one kernel.
    std::vector<SymExpr> out_idx = loop.idx;
    KernelCall::ConcatSlab slab{input, -1, -1, axis};
    out_idx[axis] = out_idx[axis] + b.em.dims().BindOpaque(offset);
    slab.offset_dim = static_cast<int>(b.em.dims().dim_values().size()) - 1;
    std::vector<SymExpr> out_shape = in->type().shape;
    SymExpr out_axis = b.em.dims().BindOpaque(out->type().shape[axis]);
    slab.extent_dim = static_cast<int>(b.em.dims().dim_values().size()) - 1;
    b.call->concat_slab = slab;
    SymExpr out_linear = 0;
    SymExpr stride = 1;
    for (int k = static_cast<int>(out_shape.size()) - 1; k >= 0; --k) {
      out_linear = out_linear + out_idx[k] * stride;
      stride = stride * (k == axis ? out_axis : b.em.dims().Bind(out_shape[k]));
    }
    SS_ASSIGN_OR_RETURN(buffer, b.em.OutputBuffer(out));
    b.call->kernel.body = {Loop(kInnerVar, 0, loop.n, {Store(buffer, out_linear, value)})};
    offset = offset + in->type().shape[axis];
    steps.push_back(b.Take());
  }
  return steps;
}

absl::StatusOr<KernelCall> LowerSlice(const passes::Group& g, ShapeEnv* env) {
  if (g.nodes.size() != 1 || g.outputs.size() != 1) return GroupError(g, "expects one Slice node");
  const GraphValue* in = g.nodes[0]->input(0);
  const GraphValue* out = g.outputs[0];
  const passes::SliceGroup& s = g.slice;
  if (static_cast<int64_t>(s.starts.size()) != in->type().rank() || s.steps.size() != s.starts.size()) {
    return GroupError(g, "starts/steps do not cover every axis");
  }
  Builder b(env, {}, "slice_copy");
  RowLoop loop = MakeRowLoop(&b.call->kernel, &b.em, out->type().shape, 1);
  std::vector<SymExpr> in_idx(s.starts.size());
  for (size_t k = 0; k < s.starts.size(); ++k) in_idx[k] = b.em.dims().Bind(s.starts[k]) + loop.idx[k] * s.steps[k];
  SS_ASSIGN_OR_RETURN(value, b.em.Emit(in, in_idx));
  SS_ASSIGN_OR_RETURN(buffer, b.em.OutputBuffer(out));
  b.call->kernel.body = {Loop(kInnerVar, 0, loop.n, {Store(buffer, loop.linear, value)})};
  return b.Take();
}

}  // namespace shapeshift::codegen::lower
