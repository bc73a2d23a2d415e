#include "graph/onnx/model_summary.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "graph/op_registry.h"
#include "onnx/onnx_pb.h"

namespace shapeshift {

absl::StatusOr<ModelSummary> SummarizeOnnxFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return absl::NotFoundError(absl::StrCat(path, ": cannot open the model file"));
  std::ostringstream buffer;
  buffer << file.rdbuf();
  onnx::ModelProto model;
  if (!model.ParseFromString(buffer.str())) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a valid ONNX model (protobuf parsing failed; truncated or not a model file)"));
  }
  ModelSummary summary;
  for (const onnx::OperatorSetIdProto& id : model.opset_import()) {
    if (id.domain().empty() || id.domain() == "ai.onnx") summary.opset = static_cast<int>(id.version());
  }
  summary.num_initializers = model.graph().initializer_size();
  for (const onnx::NodeProto& node : model.graph().node()) {
    bool default_domain = node.domain().empty() || node.domain() == "ai.onnx";
    std::string op = default_domain ? node.op_type() : absl::StrCat(node.domain(), "::", node.op_type());
    ++summary.op_histogram[op];
    if (!default_domain || FindOpSchema(node.op_type()) == nullptr) {
      summary.unsupported.push_back({op, node.name(), summary.opset});
    }
  }
  return summary;
}

}  // namespace shapeshift
