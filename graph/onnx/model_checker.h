// Runs the ONNX checker on a model, including models newer than the linked
// libonnx.
//
// Why: Debian's libonnx 1.12 checker knows IR versions up to 8 and opsets up
// to 17, while torch's dynamo exporter writes IR 10 with opset 18.
//  - IR 9 and 10 added float8/int4 element types (IR 11 float4), the `overload` field of
//    nodes and functions, and `metadata_props` on nodes, values, graphs,
//    tensors and functions. A model using none of the new types and no new
//    field other than metadata (which nothing here reads) means the same
//    under IR 8, so it is checked as IR 8.
//  - Nodes of ops whose definition changed after the checker's newest opset
//    (Split's num_outputs, Reduce* axes as an input, ... in opset 18) would be
//    checked against the older definition and wrongly rejected; their schema
//    check is skipped (graph structure, names and tensors are still checked)
//    and shapeshift's own shape rules, which know opset 18, validate them.
// Either relaxation is reported in `notes` (ImportedModel::notes); a model
// that uses an IR-9+ feature is rejected naming it. Validation is never
// skipped silently.
#ifndef SHAPESHIFT_GRAPH_ONNX_MODEL_CHECKER_H_
#define SHAPESHIFT_GRAPH_ONNX_MODEL_CHECKER_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "onnx/onnx_pb.h"

namespace shapeshift {

// Checks `model` with onnx::checker; `model_dir` is where its external data
// are resolved. The model is modified only during the call (restored before
// returning). Appends one sentence per relaxation to `notes`.
absl::Status CheckOnnxModel(onnx::ModelProto& model, const std::string& model_dir, std::vector<std::string>* notes);

}  // namespace shapeshift

#endif  // SHAPESHIFT_GRAPH_ONNX_MODEL_CHECKER_H_
