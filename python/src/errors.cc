#include "python/src/errors.h"

#include <nanobind/nanobind.h>

namespace shapeshift::python {

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
  ThrowAs(type, std::string(status.message()));
}

}  // namespace shapeshift::python
