// The fuzz property of the model-file rewrite (graph/onnx/weights_left_in_file.h):
// whatever the bytes, the rewrite never changes what they mean. Where it
// rewrites, the bytes parse as a ModelProto exactly when the rewritten message
// does, and then the rewritten message is that model with each weight the
// rewrite reports turned into external data naming the model file at that
// weight's raw bytes — which must be the bytes of its raw_data. Where it
// declines, nothing is claimed: the caller parses the bytes whole. Checked
// by the ONNX import harness (onnx_import_check.h) on every input.
#ifndef SHAPESHIFT_TESTS_FUZZ_CHECKS_WEIGHTS_LEFT_IN_FILE_CHECK_H_
#define SHAPESHIFT_TESTS_FUZZ_CHECKS_WEIGHTS_LEFT_IN_FILE_CHECK_H_

#include <cstddef>

#include "absl/strings/string_view.h"
#include "tests/fuzz/checks/violation.h"

namespace shapeshift::fuzz {

// Raw data of this many bytes or more is left in the file: small, so that
// fuzz inputs (and test models) have weights to leave.
inline constexpr size_t kFuzzWeightMinBytes = 16;

Violation CheckWeightsLeftInFile(absl::string_view bytes);

}  // namespace shapeshift::fuzz

#endif  // SHAPESHIFT_TESTS_FUZZ_CHECKS_WEIGHTS_LEFT_IN_FILE_CHECK_H_
