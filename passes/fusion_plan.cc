#include "passes/fusion_plan.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "passes/op_classes.h"

namespace shapeshift::passes {

const char* GroupKindName(GroupKind kind) {
  switch (kind) {
    case GroupKind::kMatmul: return "matmul";
    case GroupKind::kElementwise: return "elementwise";
    case GroupKind::kSoftmax: return "softmax";
    case GroupKind::kLayerNorm: return "layer_norm";
    case GroupKind::kReduction: return "reduction";
    case GroupKind::kTranspose: return "transpose";
    case GroupKind::kView: return "view";
    case GroupKind::kCopy: return "copy";
    case GroupKind::kGather: return "gather";
    case GroupKind::kConcat: return "concat";
    case GroupKind::kSlice: return "slice";
    case GroupKind::kScan: return "scan";
    case GroupKind::kRotary: return "rotary";
    case GroupKind::kAttention: return "attention";
    case GroupKind::kOther: return "other";
  }
  return "?";
}

const char* GeluFormName(GeluForm form) {
  switch (form) {
    case GeluForm::kNone: return "none";
    case GeluForm::kErf: return "gelu_erf";
    case GeluForm::kTanh: return "gelu_tanh";
  }
  return "?";
}

namespace {

std::string Names(const std::vector<Value*>& values) {
  return absl::StrJoin(values, ", ", [](std::string* out, const Value* v) { absl::StrAppend(out, "%", v->name()); });
}

std::string KindDetails(const Group& g) {
  std::vector<std::string> parts;
  switch (g.kind) {
    case GroupKind::kMatmul:
      if (g.matmul.transpose_b) parts.push_back("transpose_b");
      if (g.matmul.b_is_2d) parts.push_back("b_2d");
      if (g.matmul.scale != 1.0f) parts.push_back(absl::StrCat("scale=", g.matmul.scale));
      if (g.matmul.bias) parts.push_back(absl::StrCat("bias=%", g.matmul.bias->name()));
      if (g.matmul.activation != GeluForm::kNone) parts.push_back(GeluFormName(g.matmul.activation));
      if (g.matmul.residual) parts.push_back(absl::StrCat("residual=%", g.matmul.residual->name()));
      break;
    case GroupKind::kSoftmax:
      if (g.softmax.log) parts.push_back("log");
      if (g.softmax.x != nullptr && g.softmax.axis >= 0 &&
          (g.softmax.axis != g.softmax.x->type().rank() - 1 || g.softmax.axis_end != g.softmax.x->type().rank())) {
        parts.push_back(absl::StrCat("axes=", g.softmax.axis, "..", g.softmax.axis_end - 1));
      }
      if (g.softmax.scale != 1.0f) parts.push_back(absl::StrCat("scale=", g.softmax.scale));
      if (g.softmax.mask) parts.push_back(absl::StrCat("mask=%", g.softmax.mask->name()));
      if (g.softmax.bias) parts.push_back(absl::StrCat("bias=%", g.softmax.bias->name()));
      if (g.softmax.causal) {
        parts.push_back(absl::StrCat("causal fill=", g.softmax.fill));
        if (g.softmax.window > 0) parts.push_back(absl::StrCat("window=", g.softmax.window));
        if (g.softmax.select) parts.push_back("select");
        if (g.softmax.keep) {
          parts.push_back(absl::StrCat("keep fill=", g.softmax.keep_fill));
          if (g.softmax.keep_window > 0) parts.push_back(absl::StrCat("keep window=", g.softmax.keep_window));
        }
      }
      break;
    case GroupKind::kLayerNorm:
      if (g.layer_norm.rms) parts.push_back("rms");
      parts.push_back(absl::StrCat("epsilon=", g.layer_norm.epsilon));
      if (g.layer_norm.residual) parts.push_back(absl::StrCat("residual=%", g.layer_norm.residual->name()));
      if (g.layer_norm.sum_output) parts.push_back("stores_sum");
      break;
    case GroupKind::kElementwise:
      parts.push_back(absl::StrCat("domain=", ShapeToString(g.elementwise.domain)));
      break;
    case GroupKind::kReduction:
      if (g.reduction.noop) {
        parts.push_back(absl::StrCat(g.reduction.reduce->op_type(), " noop"));
      } else if (g.reduction.axes.empty()) {
        parts.push_back(absl::StrCat(g.reduction.reduce->op_type(), " last ", g.reduction.reduced_axes));
      } else {
        parts.push_back(absl::StrCat(g.reduction.reduce->op_type(), " axes=[", absl::StrJoin(g.reduction.axes, ","), "]"));
      }
      break;
    case GroupKind::kTranspose:
      parts.push_back(absl::StrCat("perm=[", absl::StrJoin(g.transpose.perm, ","), "]"));
      break;
    case GroupKind::kConcat:
      parts.push_back(absl::StrCat("axis=", g.concat.axis));
      break;
    case GroupKind::kRotary:
      parts.push_back(absl::StrCat("half=", g.rotary.half));
      if (g.rotary.every_two) parts.push_back("every_two");
      break;
    case GroupKind::kAttention: {
      const AttentionGroup& a = g.attention;
      auto layout = [](bool seq_major, const AttentionGroup::Source& source = {}) {
        if (source.value == nullptr) return std::string(seq_major ? "bshd" : "bhsd");
        return absl::StrCat("bshd in %", source.value->name(), "+", source.offset.ToString());
      };
      parts.push_back(absl::StrCat("q=", layout(a.q_seq_major, a.q_source), " k=", layout(a.k_seq_major, a.k_source),
                                   " v=", layout(a.v_seq_major, a.v_source), " out=", layout(a.out_seq_major)));
      if (a.scale != 1.0f) parts.push_back(absl::StrCat("scale=", a.scale));
      if (a.mask) parts.push_back(absl::StrCat("mask=%", a.mask->name()));
      if (a.causal) {
        parts.push_back(absl::StrCat("causal fill=", a.fill));
        if (a.window > 0) parts.push_back(absl::StrCat("window=", a.window));
      }
      if (a.nan_to_zero) parts.push_back("nan_to_zero");
      break;
    }
    case GroupKind::kSlice: {
      std::vector<std::string> starts;
      for (SymExpr s : g.slice.starts) starts.push_back(s.ToString());
      parts.push_back(absl::StrCat("starts=[", absl::StrJoin(starts, ","), "] steps=[",
                                   absl::StrJoin(g.slice.steps, ","), "]"));
      break;
    }
    default:
      break;
  }
  return parts.empty() ? "" : absl::StrCat("[", absl::StrJoin(parts, ", "), "]");
}

}  // namespace

std::vector<int64_t> ReducedAxes(const ReductionGroup& r, int64_t rank) {
  if (r.noop) return {};
  if (!r.axes.empty()) return r.axes;
  std::vector<int64_t> axes;
  for (int64_t d = rank - r.reduced_axes; d < rank; ++d) axes.push_back(d);
  return axes;
}

std::string Group::ToString() const {
  std::string nodes_text = absl::StrJoin(nodes, " ", [](std::string* out, const Node* n) {
    absl::StrAppend(out, n->op_type(), ":", n->name());
  });
  return absl::StrCat("#", id, " ", GroupKindName(kind), KindDetails(*this), " (", Names(inputs),
                      ") -> (", Names(outputs), ")  {", nodes_text, "}");
}

int FusionPlan::GroupOf(const Value* v) const {
  if (v == nullptr || v->id() < 0 || v->id() >= static_cast<int>(group_of_value.size())) return -1;
  return group_of_value[v->id()];
}

std::string FusionPlan::ToString() const {
  std::string out = absl::StrCat("fusion plan: ", groups.size(), " groups\n");
  for (const Group& g : groups) absl::StrAppend(&out, "  ", g.ToString(), "\n");
  return out;
}

absl::Status VerifyFusionPlan(const Graph& graph, const FusionPlan& plan) {
  absl::flat_hash_set<const Node*> compile_time = CompileTimeNodes(graph);
  absl::flat_hash_set<const Node*> seen;
  for (size_t gi = 0; gi < plan.groups.size(); ++gi) {
    const Group& g = plan.groups[gi];
    auto fail = [&](const std::string& what) {
      return absl::InternalError(absl::StrCat("fusion plan group #", gi, " (", GroupKindName(g.kind), "): ", what));
    };
    if (g.id != static_cast<int>(gi)) return fail("id does not match its position");
    if (g.nodes.empty()) return fail("has no nodes");
    if (g.nodes.size() > static_cast<size_t>(kMaxGroupNodes)) {
      return fail(absl::StrCat("has ", g.nodes.size(), " nodes, more than kMaxGroupNodes (", kMaxGroupNodes, ")"));
    }
    for (const Node* n : g.nodes) {
      if (!seen.insert(n).second) return fail(absl::StrCat("node '", n->name(), "' is in two groups"));
      if (compile_time.contains(n)) return fail(absl::StrCat("node '", n->name(), "' is compile-time"));
    }
    for (const Value* v : g.inputs) {
      int def = plan.GroupOf(v);
      if (def >= static_cast<int>(gi)) {
        return fail(absl::StrCat("input '", v->name(), "' is defined by group #", def, ", not an earlier one"));
      }
      if (def < 0 && !v->is_constant() && !v->is_graph_input()) {
        return fail(absl::StrCat("input '", v->name(), "' is defined by no group"));
      }
    }
    for (const Value* v : g.outputs) {
      if (plan.GroupOf(v) != static_cast<int>(gi)) {
        return fail(absl::StrCat("output '", v->name(), "' is not defined by this group"));
      }
    }
    bool single_output_kind = g.kind == GroupKind::kMatmul || g.kind == GroupKind::kSoftmax ||
                              g.kind == GroupKind::kTranspose || g.kind == GroupKind::kView ||
                              g.kind == GroupKind::kCopy || g.kind == GroupKind::kGather ||
                              g.kind == GroupKind::kConcat || g.kind == GroupKind::kSlice ||
                              g.kind == GroupKind::kScan || g.kind == GroupKind::kRotary ||
                              g.kind == GroupKind::kAttention;
    size_t allowed = g.kind == GroupKind::kLayerNorm && g.layer_norm.sum_output ? 2 : 1;
    if ((single_output_kind || g.kind == GroupKind::kLayerNorm) && g.outputs.size() > allowed) {
      return fail(absl::StrCat("has ", g.outputs.size(), " outputs; this kind writes ", allowed));
    }
  }
  for (const Node* n : graph.nodes()) {
    if (!compile_time.contains(n) && !seen.contains(n)) {
      return absl::InternalError(absl::StrCat("fusion plan: node '", n->name(), "' (", n->op_type(),
                                              ") is in no group"));
    }
  }
  return absl::OkStatus();
}

}  // namespace shapeshift::passes
