#include "python/src/errors.h"

#include <nanobind/nanobind.h>

#include <regex>

namespace shapeshift::python {

std::string InPythonTerms(const std::string& message) {
  // graph/shape_inference.cc's advice: `--dim NAME=LO..HI` (LO and HI numbers
  // or `lo`/`hi`), and `--dim ranges`.
  static const std::regex kDim(R"(--dim ([^ =]+)=(\w+)\.\.(\w+))");
  static const std::regex kRanges(R"(--dim ranges)");
  // The device layer's `--device cuda` / `--device cpu` (runtime/device,
  // codegen/cuda): in a session the device is the providers list.
  static const std::regex kCuda(R"(--device cuda)");
  static const std::regex kCpu(R"(--device cpu)");
  std::string text = std::regex_replace(message, kDim, "dims={'$1': ($2, $3)}");
  text = std::regex_replace(text, kRanges, "dims ranges");
  text = std::regex_replace(text, kCuda, "providers=['CUDAExecutionProvider']");
  return std::regex_replace(text, kCpu, "providers=['CPUExecutionProvider']");
}

void ThrowAs(PyObject* type, const std::string& message) {
  PyErr_SetString(type, message.c_str());
  throw nanobind::python_error();
}

void ThrowStatus(const absl::Status& status) {
  PyObject* type = PyExc_RuntimeError;
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kFailedPrecondition:
      type = PyExc_ValueError;
      break;
    case absl::StatusCode::kNotFound:
      type = PyExc_FileNotFoundError;
      break;
    case absl::StatusCode::kUnimplemented:
      type = PyExc_NotImplementedError;
      break;
    default:
      break;
  }
  ThrowAs(type, InPythonTerms(std::string(status.message())));
}

}  // namespace shapeshift::python
