#include "codegen/kernel_visitor.h"

#include <cstdio>
#include <cstdlib>

namespace shapeshift::codegen::internal {

void AbortOnInvalidKind(const char* what, int kind) {
  std::fprintf(stderr, "kernel IR: %s %d names no kind (a corrupted node?)\n", what, kind);
  std::abort();
}

}  // namespace shapeshift::codegen::internal
