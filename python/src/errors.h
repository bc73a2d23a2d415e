// How a failed absl::Status reaches Python: as the exception a Python user
// expects, with the C++ message (which names the input, dim, range or file)
// unchanged.
//
//   InvalidArgument, OutOfRange, FailedPrecondition -> ValueError
//   NotFound                                        -> FileNotFoundError
//   Unimplemented                                   -> NotImplementedError
//   everything else (a failed compile, the recompile limit, a device that
//   is not there)                                   -> RuntimeError
//
// A request whose only fault is an input's element type is a TypeError
// (the caller decides: ThrowStatusAs).
//
// One thing in a message is the CLI's and is said the Python way: the
// importer's advice to declare a dim's range, `declare --dim seq=1..32`,
// reads `declare dims={'seq': (1, 32)}` (InPythonTerms; the session's notes
// too), and the device error's `--device cuda` / `--device cpu` read
// `providers=['CUDAExecutionProvider']` / `providers=['CPUExecutionProvider']`.
#ifndef SHAPESHIFT_PYTHON_SRC_ERRORS_H_
#define SHAPESHIFT_PYTHON_SRC_ERRORS_H_

#include <Python.h>

#include <string>

#include "absl/status/status.h"

namespace shapeshift::python {

// Raises the exception for `status` (which must not be OK).
[[noreturn]] void ThrowStatus(const absl::Status& status);
// Raises `type` (a PyExc_*) with `message`.
[[noreturn]] void ThrowAs(PyObject* type, const std::string& message);
// `message` with the CLI's `--dim NAME=LO..HI` advice as the session's
// `dims=` argument and `--device cuda|cpu` as its `providers=` list.
std::string InPythonTerms(const std::string& message);

}  // namespace shapeshift::python

#endif  // SHAPESHIFT_PYTHON_SRC_ERRORS_H_
