#include "graph/onnx/node_attributes.h"

#include "absl/strings/str_cat.h"
#include "graph/tensor_proto.h"
#include "onnx/onnx_pb.h"

namespace shapeshift {

absl::StatusOr<Attributes> AttributesFromNode(const onnx::NodeProto& node, const std::string& base_dir) {
  Attributes attrs;
  for (const onnx::AttributeProto& a : node.attribute()) {
    std::string where = absl::StrCat("attribute '", a.name(), "' of node '", node.name(), "' (",
                                     node.op_type(), ")");
    switch (a.type()) {
      case onnx::AttributeProto::INT:
        attrs.Set(a.name(), static_cast<int64_t>(a.i()));
        break;
      case onnx::AttributeProto::FLOAT:
        attrs.Set(a.name(), a.f());
        break;
      case onnx::AttributeProto::STRING:
        attrs.Set(a.name(), a.s());
        break;
      case onnx::AttributeProto::INTS:
        attrs.Set(a.name(), std::vector<int64_t>(a.ints().begin(), a.ints().end()));
        break;
      case onnx::AttributeProto::FLOATS:
        attrs.Set(a.name(), std::vector<float>(a.floats().begin(), a.floats().end()));
        break;
      case onnx::AttributeProto::STRINGS:
        attrs.Set(a.name(), std::vector<std::string>(a.strings().begin(), a.strings().end()));
        break;
      case onnx::AttributeProto::TENSOR: {
        absl::StatusOr<Tensor> t = TensorFromProto(a.t(), base_dir, where);
        if (!t.ok()) return t.status();
        attrs.Set(a.name(), *std::move(t));
        break;
      }
      default:
        return absl::UnimplementedError(
            absl::StrCat(where, " has unsupported attribute type ",
                         onnx::AttributeProto::AttributeType_Name(a.type())));
    }
  }
  return attrs;
}

}  // namespace shapeshift
