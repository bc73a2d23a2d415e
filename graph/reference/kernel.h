// Reference kernels: plain, obviously correct implementations of every
// supported op on concrete tensors. They are the oracle the compiled code, the
// conformance suite and the guard fuzzer compare against: clarity over speed.
//
// One entry point dispatches on the op type through the op table
// (graph/op_table.h: `OpInfo::reference`); the graph interpreter
// (graph/interpreter.h) walks a Graph and calls it per node.
#ifndef SHAPESHIFT_GRAPH_REFERENCE_KERNEL_H_
#define SHAPESHIFT_GRAPH_REFERENCE_KERNEL_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/attributes.h"
#include "graph/tensor.h"

namespace shapeshift {

struct KernelArgs {
  std::string op_type;     // ONNX op type, default domain ("Add", "MatMul", ...)
  std::string node_name;   // for error messages
  int opset = 17;          // the model's default-domain opset version
  const Attributes* attrs = nullptr;
  std::vector<const Tensor*> inputs;  // nullptr for an absent optional input
  int num_outputs = 1;
};

// Runs one op. Errors name the node and op and say what is wrong (bad rank,
// unsupported dtype for this op, out-of-range index, ...).
absl::StatusOr<std::vector<Tensor>> RunReferenceKernel(const KernelArgs& args);

}  // namespace shapeshift

#endif  // SHAPESHIFT_GRAPH_REFERENCE_KERNEL_H_
