#include "graph/onnx/model_summary.h"

#include "absl/strings/str_cat.h"
#include "graph/onnx/contrib_ops.h"
#include "graph/onnx/importer.h"
#include "graph/op_table.h"
#include "onnx/onnx_pb.h"

namespace shapeshift {

absl::StatusOr<ModelSummary> SummarizeOnnxFile(const std::string& path) {
  absl::StatusOr<OnnxFile> file = ParseOnnxFile(path);
  if (!file.ok()) return file.status();
  return SummarizeOnnxModel(*file->model);
}

ModelSummary SummarizeOnnxModel(const onnx::ModelProto& model) {
  ModelSummary summary;
  for (const onnx::OperatorSetIdProto& id : model.opset_import()) {
    if (id.domain().empty() || id.domain() == "ai.onnx") summary.opset = static_cast<int>(id.version());
  }
  summary.num_initializers = model.graph().initializer_size();
  for (const onnx::NodeProto& node : model.graph().node()) {
    bool default_domain = node.domain().empty() || node.domain() == "ai.onnx";
    std::string op = default_domain ? node.op_type() : absl::StrCat(node.domain(), "::", node.op_type());
    ++summary.op_histogram[op];
    if (default_domain ? FindOp(node.op_type()) == nullptr : !IsExpandableContribOp(node)) {
      summary.unsupported.push_back({op, node.name(), summary.opset});
    }
  }
  return summary;
}

}  // namespace shapeshift
