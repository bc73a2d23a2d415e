#include "graph/shape_inference.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "graph/op_registry.h"

namespace shapeshift {

const std::optional<std::vector<SymExpr>>& InferenceContext::input_elements(int i) const {
  return node_.input(i)->elements();
}

std::optional<std::vector<int64_t>> InferenceContext::input_constant_ints(int i) const {
  if (!HasInput(i)) return std::nullopt;
  const auto& elements = input_elements(i);
  if (!elements) return std::nullopt;
  std::vector<int64_t> out;
  for (SymExpr e : *elements) {
    std::optional<int64_t> c = e.AsConst();
    if (!c) return std::nullopt;
    out.push_back(*c);
  }
  return out;
}

const Tensor* InferenceContext::input_constant(int i) const {
  return HasInput(i) ? node_.input(i)->constant() : nullptr;
}

void InferenceContext::SetOutput(int i, TensorType type, std::optional<std::vector<SymExpr>> elements) {
  Value* out = node_.output(i);
  if (elements) {
    std::optional<int64_t> n = type.NumElements().AsConst();
    if (!n || *n != static_cast<int64_t>(elements->size())) elements.reset();
  }
  out->set_type(std::move(type));
  out->set_elements(std::move(elements));
}

absl::Status InferenceContext::Error(absl::string_view message) const {
  return absl::InvalidArgumentError(
      absl::StrCat("node '", node_.name(), "' (", node_.op_type(), "): ", message));
}

Answer InferenceContext::Ask(const Predicate& question, absl::string_view reason) {
  return env_.Query(question, Provenance{"shape-inference", node_.name(), std::string(reason)});
}

absl::StatusOr<bool> InferenceContext::Decide(const Predicate& question, absl::string_view reason) {
  Answer a = Ask(question, reason);
  if (a == Answer::kUnknown) {
    return Error(absl::StrCat("cannot decide whether ", question.ToString(), " (", reason,
                              ") over the declared ranges; declare narrower --dim ranges or "
                              "specialize"));
  }
  return IsTrue(a);
}

SymExpr InferenceContext::SimplifiedMin(SymExpr a, SymExpr b) {
  if (a == b) return a;
  if (a.IsConst() && b.IsConst()) return std::min(*a.AsConst(), *b.AsConst());
  if (env_.CanProve(Predicate::Le(a, b))) return a;
  if (env_.CanProve(Predicate::Le(b, a))) return b;
  return Min(a, b);
}

SymExpr InferenceContext::SimplifiedMax(SymExpr a, SymExpr b) {
  if (a == b) return a;
  if (a.IsConst() && b.IsConst()) return std::max(*a.AsConst(), *b.AsConst());
  if (env_.CanProve(Predicate::Ge(a, b))) return a;
  if (env_.CanProve(Predicate::Ge(b, a))) return b;
  return Max(a, b);
}

SymExpr InferenceContext::DataDependentDim() {
  return env_.FreshSymbol("dyn", 0, std::numeric_limits<int32_t>::max());
}

absl::Status InferNode(Node& node, ShapeEnv& env, int opset) {
  const OpSchema* schema = FindOpSchema(node.op_type());
  InferenceContext ctx(node, env, opset);
  if (schema == nullptr) return ctx.Error(absl::StrCat("unsupported op at opset ", opset));
  int present = node.num_inputs();
  while (present > 0 && node.input(present - 1) == nullptr) --present;
  if (present < schema->min_inputs || present > schema->max_inputs) {
    return ctx.Error(absl::StrCat("expects ", schema->min_inputs,
                                  schema->max_inputs == OpSchema::kVariadic
                                      ? std::string(" or more")
                                      : absl::StrCat("..", schema->max_inputs),
                                  " inputs, got ", present));
  }
  for (int i = 0; i < schema->min_inputs; ++i) {
    if (node.input(i) == nullptr) return ctx.Error(absl::StrCat("required input ", i, " is missing"));
  }
  if (node.num_outputs() < schema->min_outputs || node.num_outputs() > schema->max_outputs) {
    return ctx.Error(absl::StrCat("expects ", schema->min_outputs, "..", schema->max_outputs,
                                  " outputs, got ", node.num_outputs()));
  }
  if (absl::Status s = schema->infer(ctx); !s.ok()) return s;
  // Catch-all for bad attribute/input values (negative repeats, shapes, ...):
  // no rule may produce a provably negative dim.
  for (const Value* out : node.outputs()) {
    for (SymExpr d : out->type().shape) {
      if (std::optional<int64_t> c = d.AsConst(); c && *c < 0) {
        return ctx.Error(absl::StrCat("output '", out->name(), "' would have a negative dim: ",
                                      out->type().ToString()));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status InferShapes(Graph& graph, ShapeEnv& env) {
  for (Node* node : graph.nodes()) {
    if (absl::Status s = InferNode(*node, env, graph.opset()); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace shapeshift
