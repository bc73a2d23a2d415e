// libFuzzer entry point; the property is CheckSymExprText (checks/expr_checks.h).
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/checks/expr_checks.h"
#include "tests/fuzz/checks/violation.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  shapeshift::fuzz::AbortOnViolation(
      shapeshift::fuzz::CheckSymExprText(absl::string_view(reinterpret_cast<const char*>(data), size)));
  return 0;
}
