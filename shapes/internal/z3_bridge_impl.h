// The state behind one Z3Bridge: its own Z3 context (contexts are not
// thread-safe, so a bridge never shares one) and the translator caching
// SymExpr -> Z3 terms for it. Shared by the bridge's .cc files.
#ifndef SHAPESHIFT_SHAPES_INTERNAL_Z3_BRIDGE_IMPL_H_
#define SHAPESHIFT_SHAPES_INTERNAL_Z3_BRIDGE_IMPL_H_

#include <z3++.h>

#include "shapes/internal/z3_translator.h"
#include "shapes/z3_bridge.h"

namespace shapeshift {

struct Z3Bridge::Impl {
  z3::context ctx;
  internal::Z3Translator translator{&ctx};
};

}  // namespace shapeshift

#endif  // SHAPESHIFT_SHAPES_INTERNAL_Z3_BRIDGE_IMPL_H_
