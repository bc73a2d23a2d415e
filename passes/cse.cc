#include "passes/cse.h"

#include <optional>
#include <string>
#include <variant>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "graph/printer.h"
#include "passes/graph_rewrite.h"

namespace shapeshift::passes {
namespace {

// Content key of a small constant: dtype, shape and raw bytes.
std::string ConstantKey(const Tensor& t) {
  std::string key = absl::StrCat(DTypeName(t.dtype()), "[");
  for (int64_t d : t.shape()) absl::StrAppend(&key, d, ",");
  key += "]";
  key.append(static_cast<const char*>(t.raw()), t.byte_size());
  return key;
}

// Key of a node: op type, attributes (printed, plus the exact bytes of any
// tensor attribute, which printing abbreviates), output count and input ids.
// nullopt for a node with a tensor attribute too large to compare.
std::optional<std::string> NodeKey(const Node& node) {
  std::string key = absl::StrCat(node.op_type(), "|", PrintAttributes(node.attrs()), "|");
  for (const auto& [name, value] : node.attrs().all()) {
    if (const Tensor* t = std::get_if<Tensor>(&value)) {
      if (t->num_elements() > kMaxCseConstantElements) return std::nullopt;
      absl::StrAppend(&key, name, "=", ConstantKey(*t), "|");
    }
  }
  absl::StrAppend(&key, node.num_outputs(), "|");
  for (Value* in : node.inputs()) absl::StrAppend(&key, in ? in->id() : -1, ",");
  return key;
}

}  // namespace

absl::StatusOr<bool> EliminateCommonSubexpressions(Graph& graph) {
  bool changed = false;
  absl::flat_hash_map<std::string, Value*> constants;
  for (Value* c : graph.constants()) {
    if (c->constant()->num_elements() > kMaxCseConstantElements || IsGraphOutput(graph, c)) continue;
    auto [it, inserted] = constants.try_emplace(ConstantKey(*c->constant()), c);
    if (!inserted && c->HasUses()) {
      graph.ReplaceAllUsesWith(c, it->second);
      changed = true;
    }
  }
  absl::flat_hash_map<std::string, Node*> seen;
  for (Node* node : graph.nodes()) {
    std::optional<std::string> key = NodeKey(*node);
    if (!key) continue;
    auto [it, inserted] = seen.try_emplace(*std::move(key), node);
    if (inserted) continue;
    for (int i = 0; i < node->num_outputs(); ++i) {
      Value* dup = node->output(i);
      if (IsGraphOutput(graph, dup) || !dup->HasUses()) continue;
      graph.ReplaceAllUsesWith(dup, it->second->output(i));
      changed = true;
    }
  }
  return changed;
}

}  // namespace shapeshift::passes
