// `shapeshift run --inputs-from DIR --save-outputs DIR`: a request's tensors
// as files, in the layout of ONNX's backend test data (`input_0.pb`,
// `output_0.pb`: one serialized TensorProto each). This is how other engines'
// inputs reach the CLI and its outputs leave it, so agreement with ONNX
// Runtime and torch is measured on the very same tensors
// (bench/peers/shapeshift_bench.py).
#ifndef SHAPESHIFT_TOOLS_RUN_IO_H_
#define SHAPESHIFT_TOOLS_RUN_IO_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/tensor.h"
#include "tools/model_loader.h"

namespace shapeshift::tools {

// Tensors read from DIR/input_0.pb, input_1.pb, ... (until the first missing
// index), returned in the order of `recipes` (the graph inputs). A file whose
// TensorProto names a graph input goes to that input; unnamed files go by
// position. Errors name the file: unreadable, unknown name, a graph input
// left without a file, a file left over, a dtype other than the input's.
absl::StatusOr<std::vector<Tensor>> ReadInputsFromDir(const std::string& dir,
                                                      const std::vector<InputRecipe>& recipes);

// `name=AxBxC` for each tensor: the --input form, so the request's dims are
// bound (and checked against the declared ranges) exactly as for --input.
std::vector<std::string> InputShapeFlags(const std::vector<InputRecipe>& recipes,
                                         const std::vector<Tensor>& inputs);

// Writes DIR/output_K.pb (TensorProto named after the output) for each
// output; creates DIR. Written to a temporary name and renamed, so a reader
// never sees half a file.
absl::Status WriteOutputsToDir(const std::string& dir, const std::vector<std::string>& names,
                               const std::vector<Tensor>& outputs);

}  // namespace shapeshift::tools

#endif  // SHAPESHIFT_TOOLS_RUN_IO_H_
