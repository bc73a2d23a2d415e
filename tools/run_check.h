// Comparing a compiled model's outputs with the reference interpreter's, for
// `shapeshift run --check` and the sampled checks of a trace replay.
//
// Why one definition: "wrong result" must mean the same thing in every
// command that reports it. An element is right when
// |actual - expected| <= kCheckAtol + kCheckRtol * |expected| (rtol = atol =
// 1e-3, the end-to-end tests' tolerance for float32 models whose kernels
// reassociate sums); outputs of another count or shape are wrong outright.
#ifndef SHAPESHIFT_TOOLS_RUN_CHECK_H_
#define SHAPESHIFT_TOOLS_RUN_CHECK_H_

#include <cmath>
#include <vector>

#include "graph/tensor.h"

namespace shapeshift::tools {

constexpr double kCheckRtol = 1e-3;
constexpr double kCheckAtol = 1e-3;

// One element within the tolerance; a NaN on either side is not (callers
// that accept NaN for NaN say so before asking).
inline bool WithinTolerance(double actual, double expected) {
  return std::abs(actual - expected) <= kCheckAtol + kCheckRtol * std::abs(expected);
}

struct ReferenceCheck {
  double max_abs_error = 0;  // infinity when a shape or the output count differs
  bool within_tolerance = true;
};

ReferenceCheck CheckAgainstReference(const std::vector<Tensor>& actual, const std::vector<Tensor>& expected);

}  // namespace shapeshift::tools

#endif  // SHAPESHIFT_TOOLS_RUN_CHECK_H_
