#include "runtime/specialization/pin_dims.h"

#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace shapeshift::runtime {
namespace {

using Substitution = absl::flat_hash_map<std::string, SymExpr>;

absl::Status PinValue(Value& v, const Substitution& map) {
  TensorType type = v.type();
  for (size_t k = 0; k < type.shape.size(); ++k) {
    type.shape[k] = type.shape[k].Substitute(map);
    if (std::optional<int64_t> c = type.shape[k].AsConst(); c && *c < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("pinning dims: value '", v.name(), "' dim ", k, " becomes ", *c));
    }
  }
  v.set_type(std::move(type));
  if (const std::optional<std::vector<SymExpr>>& elements = v.elements()) {
    std::vector<SymExpr> pinned;
    pinned.reserve(elements->size());
    for (const SymExpr& e : *elements) pinned.push_back(e.Substitute(map));
    v.set_elements(std::move(pinned));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status PinDims(Graph& graph, const std::map<std::string, int64_t>& pins) {
  Substitution map;
  for (const auto& [name, value] : pins) map.emplace(name, SymExpr(value));
  for (Value* v : graph.inputs()) {
    if (absl::Status s = PinValue(*v, map); !s.ok()) return s;
  }
  for (Value* v : graph.constants()) {
    if (absl::Status s = PinValue(*v, map); !s.ok()) return s;
  }
  for (Node* n : graph.nodes()) {
    for (Value* v : n->outputs()) {
      if (absl::Status s = PinValue(*v, map); !s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace shapeshift::runtime
