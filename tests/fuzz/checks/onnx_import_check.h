// The ONNX importer's fuzz property: arbitrary bytes given to
// ImportOnnxBytes come back as a Status — never a crash, a hang or an
// unbounded allocation (the harness runs under ASan/UBSan with libFuzzer's
// -rss_limit_mb and -timeout to catch those). Both ways the importer is
// reached are exercised: with the ONNX checker (the CLI's default) and
// without it (what tests and tools use for custom ops), the latter being
// the more hostile since nothing vets the proto first.
//
// Violations (wrong answers rather than crashes): a rejection with an empty
// message; an accepted model whose graph fails Graph::Verify. When a model
// is accepted, the reference interpreter also runs it on small generated
// inputs (every dim bound near 2, at most kMaxInterpretInputElements
// elements per input); its answer may be an error, never a crash. The same
// bytes as a model file go through the rewrite that leaves its weights in
// the file (weights_left_in_file_check.h).
#ifndef SHAPESHIFT_TESTS_FUZZ_CHECKS_ONNX_IMPORT_CHECK_H_
#define SHAPESHIFT_TESTS_FUZZ_CHECKS_ONNX_IMPORT_CHECK_H_

#include <cstdint>

#include "absl/strings/string_view.h"
#include "tests/fuzz/checks/violation.h"

namespace shapeshift::fuzz {

inline constexpr int64_t kMaxInterpretInputElements = 4096;

Violation CheckOnnxImport(absl::string_view bytes);

}  // namespace shapeshift::fuzz

#endif  // SHAPESHIFT_TESTS_FUZZ_CHECKS_ONNX_IMPORT_CHECK_H_
