#include "graph/op_registry.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"

namespace shapeshift {
namespace {

const absl::flat_hash_map<std::string, OpSchema>& Table() {
  static const auto* table = [] {
    std::vector<OpSchema> list;
    RegisterElementwiseOps(list);
    RegisterReductionOps(list);
    RegisterLinalgOps(list);
    RegisterShapeOps(list);
    RegisterIndexingOps(list);
    RegisterGatherNDOp(list);
    RegisterShapeValueOps(list);
    auto* map = new absl::flat_hash_map<std::string, OpSchema>();
    for (OpSchema& s : list) (*map)[s.op_type] = std::move(s);
    return map;
  }();
  return *table;
}

}  // namespace

const OpSchema* FindOpSchema(absl::string_view op_type) {
  auto it = Table().find(op_type);
  return it == Table().end() ? nullptr : &it->second;
}

std::vector<std::string> SupportedOps() {
  std::vector<std::string> out;
  for (const auto& [name, schema] : Table()) out.push_back(name);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace shapeshift
