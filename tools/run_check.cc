#include "tools/run_check.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace shapeshift::tools {

ReferenceCheck CheckAgainstReference(const std::vector<Tensor>& actual, const std::vector<Tensor>& expected) {
  ReferenceCheck result;
  if (actual.size() != expected.size()) return {std::numeric_limits<double>::infinity(), false};
  for (size_t o = 0; o < actual.size(); ++o) {
    if (actual[o].shape() != expected[o].shape()) return {std::numeric_limits<double>::infinity(), false};
    for (int64_t i = 0; i < actual[o].num_elements(); ++i) {
      const double a = actual[o].GetAsDouble(i), e = expected[o].GetAsDouble(i);
      const double error = std::abs(a - e);
      // NaN compares false both ways: a NaN where a number was expected is wrong.
      if (!WithinTolerance(a, e)) result.within_tolerance = false;
      result.max_abs_error = std::max(result.max_abs_error, std::isnan(error) ? std::numeric_limits<double>::infinity() : error);
    }
  }
  return result;
}

}  // namespace shapeshift::tools
