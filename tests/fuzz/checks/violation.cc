#include "tests/fuzz/checks/violation.h"

#include <cstdio>
#include <cstdlib>

namespace shapeshift::fuzz {

void AbortOnViolation(const Violation& violation) {
  if (!violation.has_value()) return;
  std::fprintf(stderr, "PROPERTY VIOLATION: %s\n", violation->c_str());
  std::abort();
}

}  // namespace shapeshift::fuzz
