#include "graph/onnx/cache_dims.h"

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "onnx/onnx_pb.h"

namespace shapeshift {

std::map<std::string, CacheDimSource> CacheLengthDims(const onnx::GraphProto& graph) {
  absl::flat_hash_set<std::string> initializers;
  for (const onnx::TensorProto& init : graph.initializer()) initializers.insert(init.name());
  // Graph inputs (not initializers, IR < 4 style) with a known rank.
  absl::flat_hash_map<std::string, const onnx::TensorShapeProto*> inputs;
  for (const onnx::ValueInfoProto& in : graph.input()) {
    if (initializers.contains(in.name()) || !in.type().has_tensor_type()) continue;
    if (!in.type().tensor_type().has_shape()) continue;
    inputs.emplace(in.name(), &in.type().tensor_type().shape());
  }
  std::map<std::string, CacheDimSource> dims;
  for (const onnx::NodeProto& node : graph.node()) {
    if (node.op_type() != "Concat" || !(node.domain().empty() || node.domain() == "ai.onnx")) continue;
    if (node.input_size() < 2) continue;
    auto past = inputs.find(node.input(0));
    if (past == inputs.end()) continue;
    // Another operand computed by the graph: the new positions.
    bool appends_computed = false;
    for (int i = 1; i < node.input_size(); ++i) {
      const std::string& name = node.input(i);
      appends_computed |= !name.empty() && !inputs.contains(name) && !initializers.contains(name);
    }
    if (!appends_computed) continue;
    int64_t axis = 0;
    bool has_axis = false;
    for (const onnx::AttributeProto& a : node.attribute()) {
      if (a.name() == "axis" && a.type() == onnx::AttributeProto::INT) {
        axis = a.i();
        has_axis = true;
      }
    }
    const int rank = past->second->dim_size();
    if (!has_axis || axis < -rank || axis >= rank) continue;  // the Concat's own rule reports it
    if (axis < 0) axis += rank;
    const onnx::TensorShapeProto::Dimension& dim = past->second->dim(static_cast<int>(axis));
    if (!dim.has_dim_param() || dim.dim_param().empty()) continue;
    dims.emplace(dim.dim_param(), CacheDimSource{.input = node.input(0), .axis = static_cast<int>(axis),
                                                 .node = node.name()});
  }
  return dims;
}

}  // namespace shapeshift
