// The op set shapeshift supports: for each ONNX op type (default domain), its
// input/output arity and its symbolic shape rule. One table answers "is this
// op supported?" for the importer and `shapeshift inspect`.
//
// Opset differences (attributes that became inputs: Slice starts/ends at 10,
// Squeeze/Unsqueeze axes and ReduceSum axes and Split sizes at 13, the other
// Reduce* axes at 18, Clip min/max at 11) are handled inside the rules, which
// read `InferenceContext::opset()`.
#ifndef SHAPESHIFT_GRAPH_OP_REGISTRY_H_
#define SHAPESHIFT_GRAPH_OP_REGISTRY_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace shapeshift {

class InferenceContext;
using ShapeRule = absl::Status (*)(InferenceContext&);

struct OpSchema {
  std::string op_type;
  int min_inputs = 1;
  int max_inputs = 1;  // kVariadic for no limit
  int min_outputs = 1;
  int max_outputs = 1;
  ShapeRule infer = nullptr;

  static constexpr int kVariadic = 1 << 20;
};

// nullptr when `op_type` is not supported.
const OpSchema* FindOpSchema(absl::string_view op_type);
std::vector<std::string> SupportedOps();  // sorted

// Each ops/*.cc file contributes its ops through one of these (called once by
// the registry; explicit calls, so static-library linking cannot drop them).
void RegisterElementwiseOps(std::vector<OpSchema>& table);
void RegisterReductionOps(std::vector<OpSchema>& table);
void RegisterLinalgOps(std::vector<OpSchema>& table);
void RegisterShapeOps(std::vector<OpSchema>& table);
void RegisterIndexingOps(std::vector<OpSchema>& table);
void RegisterGatherNDOp(std::vector<OpSchema>& table);
void RegisterShapeValueOps(std::vector<OpSchema>& table);

}  // namespace shapeshift

#endif  // SHAPESHIFT_GRAPH_OP_REGISTRY_H_
