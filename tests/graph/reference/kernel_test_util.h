// Helpers for the reference-kernel tests: build tensors in one line and run
// one op through the public dispatcher (RunReferenceKernel).
#ifndef SHAPESHIFT_TESTS_GRAPH_REFERENCE_KERNEL_TEST_UTIL_H_
#define SHAPESHIFT_TESTS_GRAPH_REFERENCE_KERNEL_TEST_UTIL_H_

#include <string>
#include <vector>

#include "graph/reference/kernel.h"

namespace shapeshift::kernel_testing {

inline Tensor F32(std::vector<int64_t> shape, const std::vector<float>& v) {
  return Tensor::FromVector<float>(DType::kF32, std::move(shape), v);
}
inline Tensor I64(std::vector<int64_t> shape, const std::vector<int64_t>& v) {
  return Tensor::FromVector<int64_t>(DType::kI64, std::move(shape), v);
}
inline Tensor I32(std::vector<int64_t> shape, const std::vector<int32_t>& v) {
  return Tensor::FromVector<int32_t>(DType::kI32, std::move(shape), v);
}
inline Tensor Bool(std::vector<int64_t> shape, const std::vector<uint8_t>& v) {
  return Tensor::FromVector<uint8_t>(DType::kBool, std::move(shape), v);
}

// Runs `op` on `inputs` (a default Tensor pointer list built from values;
// use RunOpWithAbsent for absent optional inputs).
inline absl::StatusOr<std::vector<Tensor>> RunOp(const std::string& op,
                                               const std::vector<Tensor>& inputs,
                                               const Attributes& attrs = {}, int opset = 17,
                                               int num_outputs = 1) {
  KernelArgs args;
  args.op_type = op;
  args.node_name = "test_node";
  args.opset = opset;
  args.attrs = &attrs;
  for (const Tensor& t : inputs) args.inputs.push_back(&t);
  args.num_outputs = num_outputs;
  return RunReferenceKernel(args);
}

// Like RunOp, with explicit pointers (nullptr = absent optional input).
inline absl::StatusOr<std::vector<Tensor>> RunOpWithAbsent(const std::string& op,
                                                         const std::vector<const Tensor*>& inputs,
                                                         const Attributes& attrs = {},
                                                         int opset = 17, int num_outputs = 1) {
  KernelArgs args;
  args.op_type = op;
  args.node_name = "test_node";
  args.opset = opset;
  args.attrs = &attrs;
  args.inputs = inputs;
  args.num_outputs = num_outputs;
  return RunReferenceKernel(args);
}

template <typename T>
std::vector<T> Values(const Tensor& t) {
  auto span = t.values<T>();
  return std::vector<T>(span.begin(), span.end());
}

}  // namespace shapeshift::kernel_testing

#endif  // SHAPESHIFT_TESTS_GRAPH_REFERENCE_KERNEL_TEST_UTIL_H_
