// Conversion of onnx::AttributeProto lists into shapeshift Attributes.
// Graph-valued attributes (If/Loop/Scan bodies) and sparse tensors are not
// representable and are reported as errors naming the node and attribute.
#ifndef SHAPESHIFT_GRAPH_ONNX_NODE_ATTRIBUTES_H_
#define SHAPESHIFT_GRAPH_ONNX_NODE_ATTRIBUTES_H_

#include <string>

#include "absl/status/statusor.h"
#include "graph/attributes.h"

namespace onnx {
class NodeProto;
}

namespace shapeshift {

// `base_dir` resolves external data of tensor attributes.
absl::StatusOr<Attributes> AttributesFromNode(const onnx::NodeProto& node, const std::string& base_dir);

}  // namespace shapeshift

#endif  // SHAPESHIFT_GRAPH_ONNX_NODE_ATTRIBUTES_H_
