#include "passes/uniform_gather.h"

#include <cstring>
#include <optional>

#include "graph/builder.h"
#include "passes/graph_rewrite.h"

namespace shapeshift::passes {
namespace {

constexpr char kPass[] = "uniform-gather";

// The single element every entry of `v` equals: a constant filled with one
// value, or an Expand of one.
const Tensor* UniformSource(const Value* v) {
  if (const Node* expand = ProducerIs(v, "Expand")) v = expand->input(0);
  const Tensor* t = v->constant();
  if (t == nullptr || t->num_elements() == 0) return nullptr;
  return IsConstantFilledWith(v, t->GetAsDouble(0)) ? t : nullptr;
}

}  // namespace

absl::StatusOr<bool> RewriteUniformGathers(Graph& graph, ShapeEnv& env) {
  bool changed = false;
  for (Node* node : graph.nodes()) {
    const std::string& op = node->op_type();
    if (op != "GatherElements" || node->input(0) == nullptr || node->input(1) == nullptr ||
        IsGraphOutput(graph, node->output(0))) {
      continue;
    }
    const Tensor* source = UniformSource(node->input(0));
    if (source == nullptr) continue;
    absl::StatusOr<Tensor> fill = Tensor::Zeros(source->dtype(), {1});
    if (!fill.ok()) continue;
    std::memcpy(fill->mutable_raw(), source->raw(), DTypeSize(source->dtype()));
    GraphBuilder b(graph, env);
    absl::StatusOr<Value*> shape = b.Op("Shape", {node->input(1)});  // the result has the indices' shape
    if (!shape.ok()) return shape.status();
    Attributes attrs;
    attrs.Set("value", *std::move(fill));
    absl::StatusOr<Node*> replaced =
        ReplaceWithNewNode(graph, env, node->output(0), {node}, "ConstantOfShape", {*shape}, attrs, kPass);
    if (!replaced.ok()) return replaced.status();
    changed = true;
  }
  return changed;
}

}  // namespace shapeshift::passes
