#include "passes/internal/fusion_anchors.h"

#include <algorithm>
#include <optional>
#include <string>

#include "graph/op_table.h"
#include "passes/graph_rewrite.h"
#include "passes/op_classes.h"
#include "passes/relative_position_recognition.h"

namespace shapeshift::passes::internal {
namespace {

constexpr char kPass[] = "fusion";

// The single node reading `v` exactly once, unassigned and addable to `gid`.
Node* AbsorbableConsumer(Grouping& g, const Value* v, int gid) {
  if (v->uses().size() != 1 || IsGraphOutput(g.graph(), v)) return nullptr;
  Node* user = v->uses().front().user;
  return g.CanAdd(user, gid) ? user : nullptr;
}

// The producer of `v` when `v` is read only by `reader` and it can join `gid`.
Node* AbsorbableProducer(Grouping& g, const Value* v, const Node* reader, int gid) {
  Node* p = v->producer();
  if (p == nullptr || p->num_outputs() != 1 || !g.ReadOnlyBy(v, gid, reader)) return nullptr;
  return g.CanAdd(p, gid) ? p : nullptr;
}

// A scale from Mul(v, c) / Mul(c, v) / Div(v, c) with a constant scalar c.
std::optional<float> ScaleOf(const Node& node, const Value* v) {
  if (node.op_type() == "Mul") {
    if (std::optional<double> c = ConstantScalar(OtherOperand(node, v))) return static_cast<float>(*c);
  } else if (node.op_type() == "Div" && node.input(0) == v) {
    if (std::optional<double> c = ConstantScalar(node.input(1)); c && *c != 0) {
      return static_cast<float>(1.0 / *c);
    }
  }
  return std::nullopt;
}

bool SameShape(Grouping& g, const Value* a, const Value* b, const Node& node, const char* reason) {
  return ShapesEqual(g.env(), a->type().shape, b->type().shape, Provenance{kPass, node.name(), reason});
}

// Adds `nodes` (a value's producers, consumers first) to `gid` while each
// output is read only inside the group: the group then computes the value
// per element (relative_position_recognition.h).
void AbsorbRecomputed(Grouping& g, int gid, const std::vector<Node*>& nodes) {
  for (bool grew = true; grew;) {
    grew = false;
    for (Node* n : nodes) {
      if (!g.IsAssigned(n) && g.ReadOnlyBy(n->output(0), gid) && g.CanAdd(n, gid)) {
        g.Add(n, gid);
        grew = true;
      }
    }
  }
}

// An Add whose other operand is a relative-position mask the Softmax reading
// the Add computes per element: left to the softmax, not a matmul residual.
bool LeftToSoftmax(const Node& add, const Value* mask) {
  const Node* softmax = SingleUser(add.output(0));
  return softmax != nullptr && softmax->op_type() == "Softmax" &&
         !RelativePositionMaskNodes(mask, add.output(0)->type().shape).empty();
}

// True when perm swaps the last two dims and keeps the others.
bool SwapsLastTwo(const std::vector<int64_t>& perm) {
  int64_t r = static_cast<int64_t>(perm.size());
  if (r < 2) return false;
  for (int64_t i = 0; i + 2 < r; ++i) {
    if (perm[i] != i) return false;
  }
  return perm[r - 2] == r - 1 && perm[r - 1] == r - 2;
}

std::optional<std::vector<int64_t>> PermOf(const Node& t) {
  absl::StatusOr<std::vector<int64_t>> p = t.attrs().GetInts("perm");
  if (p.ok()) return *p;
  return std::nullopt;
}

// The post-op form of a Gelu node (its shape rule has checked the attribute).
std::optional<GeluForm> GeluFormOf(const Node& gelu) {
  absl::StatusOr<std::string> approximate = gelu.attrs().GetString("approximate", "none");
  if (!approximate.ok()) return std::nullopt;
  if (*approximate == "none") return GeluForm::kErf;
  if (*approximate == "tanh") return GeluForm::kTanh;
  return std::nullopt;
}

void AbsorbEpilogue(Grouping& g, int gid, Value* out) {
  MatmulGroup& mm = g.group(gid).matmul;
  Value* cur = out;
  // A Gemm's C input is already the bias: a scale or second bias after it
  // would not fit act(scale * A·B + bias).
  const bool has_bias = mm.bias != nullptr;
  if (Node* c = AbsorbableConsumer(g, cur, gid); c && !has_bias) {
    if (std::optional<float> s = ScaleOf(*c, cur); s && SameShape(g, c->output(0), out, *c, "scale keeps the shape")) {
      mm.scale *= *s;
      g.Add(c, gid);
      cur = c->output(0);
    }
  }
  const std::optional<int64_t> n = out->type().shape.back().AsConst();
  if (Node* c = AbsorbableConsumer(g, cur, gid); c && c->op_type() == "Add" && n && !has_bias) {
    Value* bias = OtherOperand(*c, cur);
    if (bias && bias->is_constant() && bias->type().dtype == DType::kF32 &&
        bias->constant()->num_elements() == *n && !bias->constant()->shape().empty() &&
        bias->constant()->shape().back() == *n && SameShape(g, c->output(0), out, *c, "bias add keeps the shape")) {
      mm.bias = bias;
      g.Add(c, gid);
      cur = c->output(0);
    }
  }
  if (Node* c = AbsorbableConsumer(g, cur, gid); c && c->op_type() == "Gelu") {
    if (std::optional<GeluForm> form = GeluFormOf(*c)) {
      mm.activation = *form;
      g.Add(c, gid);
      cur = c->output(0);
    }
  }
  if (Node* c = AbsorbableConsumer(g, cur, gid); c && c->op_type() == "Add") {
    Value* residual = OtherOperand(*c, cur);
    if (residual && residual != cur && residual->type().dtype == DType::kF32 && !LeftToSoftmax(*c, residual) &&
        SameShape(g, residual, out, *c, "residual has the matmul output's shape") &&
        SameShape(g, c->output(0), out, *c, "residual add keeps the shape")) {
      mm.residual = residual;
      g.Add(c, gid);
    }
  }
}

void BuildMatmul(Grouping& g, Node* node) {
  Value* a = node->input(0);
  Value* b = node->input(1);
  bool is_gemm = node->op_type() == "Gemm";
  bool supported = a->type().dtype == DType::kF32 && b->type().dtype == DType::kF32 &&
                   a->type().rank() >= 2 && b->type().rank() >= 2;
  bool b_is_2d = b->type().rank() == 2;
  if (supported && !b_is_2d) {
    const auto& sa = a->type().shape;
    const auto& sb = b->type().shape;
    supported = sa.size() == sb.size() &&
                ShapesEqual(g.env(), {sa.begin(), sa.end() - 2}, {sb.begin(), sb.end() - 2},
                            Provenance{kPass, node->name(), "batched matmul operands share batch dims"});
  }
  MatmulGroup mm;
  mm.a = a;
  mm.b = b;
  mm.b_is_2d = b_is_2d;
  if (supported && is_gemm) {
    const Attributes& at = node->attrs();
    mm.transpose_b = at.GetInt("transB", 0).value_or(0) != 0;
    mm.scale = at.GetFloat("alpha", 1.0f).value_or(1.0f);
    Value* c = node->input(2);
    std::optional<int64_t> n = node->output(0)->type().shape.back().AsConst();
    supported = at.GetInt("transA", 0).value_or(1) == 0 && b_is_2d && a->type().rank() == 2;
    if (c != nullptr) {
      supported = supported && at.GetFloat("beta", 1.0f).value_or(0) == 1.0f && c->is_constant() && n &&
                  c->constant()->num_elements() == *n && c->constant()->shape().back() == *n;
      mm.bias = c;
    }
  }
  int gid = g.NewGroup(supported ? GroupKind::kMatmul : GroupKind::kOther, node);
  if (!supported) return;
  if (!is_gemm) {
    Node* t = ProducerIs(b, "Transpose");
    std::optional<std::vector<int64_t>> perm = t ? PermOf(*t) : std::nullopt;
    if (t && perm && SwapsLastTwo(*perm) && b->uses().size() == 1 && !IsGraphOutput(g.graph(), b) &&
        g.CanAdd(t, gid)) {
      g.Add(t, gid);
      mm.b = t->input(0);
      mm.transpose_b = true;
    }
  }
  g.group(gid).matmul = mm;
  AbsorbEpilogue(g, gid, node->output(0));
}

int64_t NormalizedAxis(const Node& node, int64_t fallback, int64_t rank) {
  int64_t axis = node.attrs().GetInt("axis", fallback).value_or(fallback);
  return axis < 0 ? axis + rank : axis;
}

// ALiBi: the scores x (read by `reader`, the group's lowest node so far)
// are views of Add(scores, bias) with bias broadcasting to the scores (BLOOM:
// Reshape([b·h, S, T] + [b·h, 1, T]) → [b, h, S, T]; MPT: [b, h, S, T] +
// [1, h, 1, T]). The views and the Add join the group, which computes x
// through them (codegen/lower's element emitter, in the graph's order of
// operations), so the [b, h, S, T] sum is never stored and its kernel never
// runs. Views without such an Add under them are left alone.
void AbsorbSoftmaxBias(Grouping& g, int gid, const Node* reader) {
  std::vector<Node*> views;
  Value* v = g.group(gid).softmax.x;
  for (int depth = 0; depth < 8; ++depth) {
    Node* p = AbsorbableProducer(g, v, reader, gid);
    if (p == nullptr || !IsViewOp(*p) || v->type().dtype != DType::kF32) break;
    g.Add(p, gid);
    views.push_back(p);
    v = p->input(0);
    reader = p;
  }
  Node* add = ProducerIs(v, "Add");
  if (add != nullptr && AbsorbableProducer(g, v, reader, gid) == add) {
    for (int i = 0; i < 2; ++i) {
      Value* scores = add->input(i);
      Value* bias = add->input(1 - i);
      if (scores->type().dtype != DType::kF32 || bias->type().dtype != DType::kF32 || scores == bias ||
          !SameShape(g, scores, v, *add, "the scores under a softmax bias keep their shape")) {
        continue;
      }
      g.Add(add, gid);
      g.group(gid).softmax.bias = bias;
      return;
    }
  }
  for (auto it = views.rbegin(); it != views.rend(); ++it) g.Remove(*it);
}

void BuildSoftmax(Grouping& g, Node* node) {
  Value* x = node->input(0);
  int64_t rank = x->type().rank();
  const bool causal = node->op_type() == "CausalSoftmax";  // always over the last axis, at any opset
  const bool flatten = !causal && g.graph().opset() < 13;  // the line is every axis from `axis` on
  int64_t axis = causal ? rank - 1 : NormalizedAxis(*node, flatten ? 1 : -1, rank);
  bool supported = x->type().dtype == DType::kF32 && rank >= 1 && axis >= 0 && axis < rank;
  int gid = g.NewGroup(supported ? GroupKind::kSoftmax : GroupKind::kOther, node);
  if (!supported) return;
  SoftmaxGroup& sm = g.group(gid).softmax;
  sm.log = node->op_type() == "LogSoftmax";
  sm.axis = axis;
  sm.axis_end = flatten ? rank : axis + 1;
  if (sm.axis_end != rank || axis != rank - 1) {
    sm.x = x;  // a line across rows: no scale, mask or bias is fused
    return;
  }
  Node* reader = node;
  if (causal) {
    sm.causal = true;
    sm.mask = node->input(1);
    sm.select = sm.mask != nullptr && sm.mask->type().dtype == DType::kBool;
    sm.window = node->attrs().GetInt("window", 0).value_or(0);
    sm.fill = node->attrs().GetFloat("fill", 0.0f).value_or(0.0f);
    sm.keep = node->attrs().Has("keep_fill");
    sm.keep_window = node->attrs().GetInt("keep_window", 0).value_or(0);
    sm.keep_fill = node->attrs().GetFloat("keep_fill", 0.0f).value_or(0.0f);
  } else if (Node* add = ProducerIs(x, "Add"); add && AbsorbableProducer(g, x, reader, gid) == add) {
    // A relative-position mask is the mask whichever side it is on; the
    // group computes it per element (relative_position_recognition.h).
    std::vector<Node*> recomputed = RelativePositionMaskNodes(add->input(0), x->type().shape);
    const int first = recomputed.empty() ? 0 : 1;
    for (int k = 0; k < 2; ++k) {
      const int i = (first + k) % 2;
      Value* scores = add->input(i);
      Value* mask = add->input(1 - i);
      if (mask->type().dtype == DType::kF32 && SameShape(g, scores, x, *add, "softmax scores keep their shape")) {
        g.Add(add, gid);
        sm.mask = mask;
        x = scores;
        reader = add;
        AbsorbRecomputed(g, gid, RelativePositionMaskNodes(mask, x->type().shape));
        break;
      }
    }
  }
  if (Node* p = x->producer(); p && AbsorbableProducer(g, x, reader, gid) == p) {
    Value* other = nullptr;
    if (p->op_type() == "Mul") other = ConstantScalar(p->input(1)) ? p->input(0) : p->input(1);
    if (p->op_type() == "Div") other = p->input(0);
    std::optional<float> s = other ? ScaleOf(*p, other) : std::nullopt;
    if (s && SameShape(g, other, x, *p, "softmax scale keeps the shape")) {
      g.Add(p, gid);
      sm.scale = *s;
      x = other;
      reader = p;
    }
  }
  sm.x = x;
  AbsorbSoftmaxBias(g, gid, reader);
}

void BuildLayerNorm(Grouping& g, Node* node) {
  Value* x = node->input(0);
  int64_t rank = x->type().rank();
  bool extra_outputs_unused = true;
  for (int i = 1; i < node->num_outputs(); ++i) {
    extra_outputs_unused = extra_outputs_unused && !node->output(i)->HasUses() &&
                           !IsGraphOutput(g.graph(), node->output(i));
  }
  bool supported = x->type().dtype == DType::kF32 && rank >= 1 &&
                   NormalizedAxis(*node, -1, rank) == rank - 1 && extra_outputs_unused;
  int gid = g.NewGroup(supported ? GroupKind::kLayerNorm : GroupKind::kOther, node);
  if (!supported) return;
  LayerNormGroup& ln = g.group(gid).layer_norm;
  ln.rms = node->op_type() == "RMSNormalization";
  ln.x = x;
  ln.gamma = node->input(1);
  ln.beta = ln.rms ? nullptr : node->input(2);
  ln.epsilon = node->attrs().GetFloat("epsilon", 1e-5f).value_or(1e-5f);
  Node* add = ProducerIs(x, "Add");
  if (add && g.CanAdd(add, gid) && add->input(0)->type().dtype == DType::kF32 &&
      SameShape(g, add->input(0), x, *add, "residual operand has the normalized shape") &&
      SameShape(g, add->input(1), x, *add, "residual operand has the normalized shape")) {
    bool read_elsewhere = !g.ReadOnlyBy(x, gid, node);
    g.Add(add, gid);
    ln.x = add->input(0);
    ln.residual = add->input(1);
    if (read_elsewhere) ln.sum_output = x;
  }
}

bool IsArgReduce(const Node& node) { return node.op_type() == "ArgMax" || node.op_type() == "ArgMin"; }

// The axes a Reduce*, ArgMax or ArgMin node reduces (sorted, distinct), or
// nullopt when they are not known while compiling (an axes input computed
// from data). `noop`: noop_with_empty_axes with no axes, the identity. An
// axes input with no elements (ONNX's tests feed `[]` as a graph input) is
// no axes whatever its data.
std::optional<std::vector<int64_t>> ReductionAxesOf(const Node& node, int64_t rank, bool* noop) {
  *noop = false;
  if (IsArgReduce(node)) {
    const int64_t axis = node.attrs().GetInt("axis", 0).value_or(rank);
    if (axis < -rank || axis >= rank) return std::nullopt;
    return std::vector<int64_t>{axis < 0 ? axis + rank : axis};
  }
  const Value* axes_input = node.num_inputs() > 1 ? node.input(1) : nullptr;
  bool no_axes = !node.attrs().Has("axes");
  if (no_axes && axes_input != nullptr) {
    const std::optional<int64_t> count = axes_input->type().NumElements().AsConst();
    no_axes = count && *count == 0;
  }
  if (no_axes) {
    absl::StatusOr<int64_t> flag = node.attrs().GetInt("noop_with_empty_axes", 0);
    if (!flag.ok()) return std::nullopt;
    *noop = *flag != 0;
    std::vector<int64_t> all;
    for (int64_t d = 0; !*noop && d < rank; ++d) all.push_back(d);
    return all;
  }
  std::optional<std::vector<int64_t>> axes = ReduceAxes(node, rank);
  if (axes) axes->erase(std::unique(axes->begin(), axes->end()), axes->end());
  return axes;
}

// Elementwise producers of the reduced input that the group computes per
// element (mean pooling's x * mask): each output of the input's shape and
// read only inside the group, so no work is done twice.
void AbsorbPrologue(Grouping& g, int gid, Node* reduce) {
  const Value* in = reduce->input(0);
  std::vector<Node*> frontier = {reduce};
  while (!frontier.empty()) {
    Node* n = frontier.back();
    frontier.pop_back();
    for (int i = 0; i < n->num_inputs(); ++i) {
      Value* v = n->input(i);
      if (v == nullptr || IsShapeOperand(*n, i)) continue;
      Node* p = v->producer();
      if (p == nullptr || p->num_outputs() != 1 || !IsElementwiseOp(*p) || !g.ReadOnlyBy(v, gid) ||
          !g.CanAdd(p, gid) ||
          !ShapesEqual(g.env(), v->type().shape, in->type().shape,
                       Provenance{kPass, p->name(), "prologue has the reduced input's shape"})) {
        continue;
      }
      g.Add(p, gid);
      frontier.push_back(p);
    }
  }
}

void BuildReduction(Grouping& g, Node* node) {
  Value* x = node->input(0);
  int64_t rank = x->type().rank();
  bool noop = false;
  std::optional<std::vector<int64_t>> axes = ReductionAxesOf(*node, rank, &noop);
  int gid = g.NewGroup(axes ? GroupKind::kReduction : GroupKind::kOther, node);
  if (!axes) return;
  ReductionGroup& r = g.group(gid).reduction;
  r.reduce = node;
  r.noop = noop;
  bool trailing = !noop;
  for (size_t i = 0; trailing && i < axes->size(); ++i) {
    trailing = (*axes)[i] == rank - static_cast<int64_t>(axes->size()) + static_cast<int64_t>(i);
  }
  if (trailing) {
    r.reduced_axes = static_cast<int64_t>(axes->size());
  } else {
    r.axes = *axes;
  }
  r.keepdims = node->attrs().GetInt("keepdims", 1).value_or(1) != 0;
  Value* cur = node->output(0);
  while (Node* c = AbsorbableConsumer(g, cur, gid)) {
    if (!IsElementwiseOp(*c) || c->num_outputs() != 1 ||
        !SameShape(g, c->output(0), node->output(0), *c, "epilogue keeps the reduced shape")) {
      break;
    }
    g.Add(c, gid);
    cur = c->output(0);
  }
  AbsorbPrologue(g, gid, node);
}

// RotateHalfMulAdd or RotateEveryTwoMulAdd: one row kernel of its own (kOther
// when the lowering's conditions fail: f32, a constant even last dim, an even
// rotary_dim within it).
void BuildRotary(Grouping& g, Node* node) {
  Value* x = node->input(0);
  const bool every_two = node->op_type() == "RotateEveryTwoMulAdd";
  std::optional<int64_t> d = x->type().rank() == 0 ? std::nullopt : x->type().shape.back().AsConst();
  const int64_t rotated = d ? node->attrs().GetInt("rotary_dim", *d).value_or(0) : 0;
  bool supported = d && rotated >= 2 && rotated <= *d && rotated % 2 == 0 && *d % 2 == 0;
  for (int i = 0; i < 3; ++i) supported = supported && node->input(i)->type().dtype == DType::kF32;
  int gid = g.NewGroup(supported ? GroupKind::kRotary : GroupKind::kOther, node);
  if (!supported) return;
  RotaryGroup& r = g.group(gid).rotary;
  r.x = x;
  r.a = node->input(1);
  r.b = node->input(2);
  r.half = rotated / 2;
  r.every_two = every_two;
}

// Slice starts normalized and clamped for the whole domain; false when an
// answer is unknown (the slice is then kOther).
bool BuildSliceFields(Grouping& g, const Node& node, SliceGroup* out) {
  const auto& shape = node.input(0)->type().shape;
  int64_t rank = static_cast<int64_t>(shape.size());
  out->starts.assign(rank, SymExpr(0));
  out->steps.assign(rank, 1);
  auto elements = [&](int i) -> const std::optional<std::vector<SymExpr>>* {
    return node.input(i) ? &node.input(i)->elements() : nullptr;
  };
  const auto* starts = elements(1);
  if (starts == nullptr || !*starts) return false;
  std::vector<int64_t> axes;
  if (const auto* a = elements(3)) {
    if (!*a) return false;
    for (SymExpr e : **a) {
      if (!e.AsConst()) return false;
      axes.push_back(*e.AsConst() < 0 ? *e.AsConst() + rank : *e.AsConst());
    }
  } else {
    for (size_t i = 0; i < (*starts)->size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  const auto* steps = elements(4);
  if (steps && !*steps) return false;
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t axis = axes[i];
    if (axis < 0 || axis >= rank || i >= (*starts)->size()) return false;
    int64_t step = 1;
    if (steps) {
      if (!(**steps)[i].AsConst()) return false;
      step = *(**steps)[i].AsConst();
    }
    if (step <= 0) return false;
    SymExpr s = (**starts)[i];
    SymExpr dim = shape[axis];
    Provenance why{kPass, node.name(), "slice start within the axis"};
    if (IsTrue(g.env().Query(Predicate::Lt(s, 0), why))) s = s + dim;
    if (!IsTrue(g.env().Query(Predicate::Ge(s, 0), why))) return false;
    if (!IsTrue(g.env().Query(Predicate::Le(s, dim), why))) return false;
    out->starts[axis] = s;
    out->steps[axis] = step;
  }
  return true;
}

}  // namespace

bool BuildAnchoredGroup(Grouping& g, Node* node) {
  const std::string& op = node->op_type();
  if (op == "MatMul" || op == "Gemm") {
    BuildMatmul(g, node);
  } else if (op == "Softmax" || op == "LogSoftmax" || op == "CausalSoftmax") {
    BuildSoftmax(g, node);
  } else if (op == "LayerNormalization" || op == "RMSNormalization") {
    BuildLayerNorm(g, node);
  } else if (op == "RotateHalfMulAdd" || op == "RotateEveryTwoMulAdd") {
    BuildRotary(g, node);
  } else if (op.rfind("Reduce", 0) == 0 || IsArgReduce(*node)) {
    BuildReduction(g, node);
  } else if (op == "Transpose") {
    int gid = g.NewGroup(GroupKind::kTranspose, node);
    std::optional<std::vector<int64_t>> perm = PermOf(*node);
    if (!perm) {
      perm.emplace();
      for (int64_t d = node->input(0)->type().rank() - 1; d >= 0; --d) perm->push_back(d);
    }
    g.group(gid).transpose.perm = *perm;
  } else if (IsViewOp(*node)) {
    g.NewGroup(IsGraphOutput(g.graph(), node->output(0)) ? GroupKind::kCopy : GroupKind::kView, node);
  } else if (op == "Gather" || op == "GatherElements") {
    bool embedding =
        op == "Gather" && node->input(0)->is_constant() && node->attrs().GetInt("axis", 0).value_or(1) == 0;
    int gid = g.NewGroup(embedding ? GroupKind::kGather : GroupKind::kOther, node);
    // Indices expanded from relative positions: read per element from the
    // S + T - 1 positions, never stored (lower_indexing.cc).
    if (!embedding) AbsorbRecomputed(g, gid, RelativePositionIndexNodes(node->input(1), g.env()));
  } else if (op == "RelativePositionExpand") {
    return false;  // an index remap: computed by the group that reads it, or an elementwise group of its own
  } else if (op == "Concat") {
    int gid = g.NewGroup(GroupKind::kConcat, node);
    int64_t rank = node->output(0)->type().rank();
    g.group(gid).concat.axis = NormalizedAxis(*node, 0, rank);
  } else if (op == "Slice") {
    SliceGroup fields;
    bool ok = g.graph().opset() >= 10 && BuildSliceFields(g, *node, &fields);
    int gid = g.NewGroup(ok ? GroupKind::kSlice : GroupKind::kOther, node);
    g.group(gid).slice = fields;
  } else if (const OpInfo* info = FindOp(op); info != nullptr && info->op_class == OpClass::kScan) {
    g.NewGroup(GroupKind::kScan, node);  // codegen/lower/scan_kernel.cc decides what it compiles
  } else if (IsElementwiseOp(*node)) {
    return false;
  } else {
    g.NewGroup(GroupKind::kOther, node);
  }
  return true;
}

}  // namespace shapeshift::passes::internal
