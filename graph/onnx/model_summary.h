// A cheap look at an ONNX file without importing it: op histogram and the
// ops shapeshift cannot handle. `shapeshift inspect` and `check` print it even
// when the import itself fails, so the user sees *every* unsupported op and
// how often each op occurs.
#ifndef SHAPESHIFT_GRAPH_ONNX_MODEL_SUMMARY_H_
#define SHAPESHIFT_GRAPH_ONNX_MODEL_SUMMARY_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace onnx {
class ModelProto;
}  // namespace onnx

namespace shapeshift {

struct UnsupportedOp {
  std::string op_type;  // `domain::Op` for a custom domain
  std::string node;
  int opset = 0;
};

struct ModelSummary {
  int opset = 0;  // default domain; 0 when not imported
  std::map<std::string, int> op_histogram;  // op type → node count
  std::vector<UnsupportedOp> unsupported;   // in node order
  int num_initializers = 0;
};

absl::StatusOr<ModelSummary> SummarizeOnnxFile(const std::string& path);
// The same for a message already parsed (by ParseOnnxFile), before it is
// imported: the file is then read once.
ModelSummary SummarizeOnnxModel(const onnx::ModelProto& model);

}  // namespace shapeshift

#endif  // SHAPESHIFT_GRAPH_ONNX_MODEL_SUMMARY_H_
