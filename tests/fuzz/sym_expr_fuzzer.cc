// libFuzzer entry point; the property is CheckSymExprText (checks/expr_checks.h).
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/checks/expr_checks.h"
#include "tests/fuzz/checks/violation.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view input(reinterpret_cast<const char*>(data), size);
  shapeshift::fuzz::AbortOnViolation(shapeshift::fuzz::CheckSymExprText(input));
  return 0;
}
