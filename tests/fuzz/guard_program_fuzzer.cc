// libFuzzer entry point; the property is CheckGuardProgramText (checks/expr_checks.h).
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/checks/expr_checks.h"
#include "tests/fuzz/checks/violation.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view input(reinterpret_cast<const char*>(data), size);
  shapeshift::fuzz::AbortOnViolation(shapeshift::fuzz::CheckGuardProgramText(input));
  return 0;
}
