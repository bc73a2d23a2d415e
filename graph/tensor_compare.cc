#include "graph/tensor_compare.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace shapeshift {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

std::string TypeText(const Tensor& t) { return absl::StrCat(DTypeName(t.dtype()), "[", absl::StrJoin(t.shape(), ","), "]"); }

// Compares into `result`; `prefix` names the output in mismatch texts.
void Accumulate(const Tensor& actual, const Tensor& expected, Tolerance tolerance, const std::string& prefix,
                TensorComparison& result) {
  if (actual.dtype() != expected.dtype() || actual.shape() != expected.shape()) {
    result.agree = false;
    result.max_abs_error = kInfinity;
    ++result.mismatches;
    if (result.first_mismatch.empty()) {
      result.first_mismatch = absl::StrCat(prefix, TypeText(actual), ", expected ", TypeText(expected));
    }
    return;
  }
  const bool is_float = IsFloat(expected.dtype());
  for (int64_t i = 0; i < expected.num_elements(); ++i) {
    bool agree;
    std::string a_text, e_text;
    if (is_float) {
      const double a = actual.GetAsDouble(i), e = expected.GetAsDouble(i);
      agree = ElementsAgree(a, e, tolerance);
      if (std::isfinite(a) && std::isfinite(e)) {
        result.max_abs_error = std::max(result.max_abs_error, std::abs(a - e));
      } else if (!agree) {
        result.max_abs_error = kInfinity;
      }
      if (!agree) a_text = absl::StrCat(a), e_text = absl::StrCat(e);
    } else {
      const int64_t a = actual.GetAsInt64(i), e = expected.GetAsInt64(i);
      agree = a == e;
      if (!agree) {
        result.max_abs_error = std::max(result.max_abs_error, std::abs(static_cast<double>(a) - static_cast<double>(e)));
        a_text = absl::StrCat(a), e_text = absl::StrCat(e);
      }
    }
    if (agree) continue;
    result.agree = false;
    ++result.mismatches;
    if (result.first_mismatch.empty()) {
      result.first_mismatch = absl::StrCat(prefix, "element ", i, ": ", a_text, ", expected ", e_text);
    }
  }
}

}  // namespace

bool ElementsAgree(double actual, double expected, Tolerance tolerance) {
  if (std::isnan(actual) || std::isnan(expected)) return std::isnan(actual) && std::isnan(expected);
  if (std::isinf(actual) || std::isinf(expected)) return actual == expected;
  return std::abs(actual - expected) <= tolerance.atol + tolerance.rtol * std::abs(expected);
}

TensorComparison CompareTensors(const Tensor& actual, const Tensor& expected, Tolerance tolerance) {
  TensorComparison result;
  Accumulate(actual, expected, tolerance, "", result);
  return result;
}

TensorComparison CompareTensorLists(const std::vector<Tensor>& actual, const std::vector<Tensor>& expected,
                                    Tolerance tolerance) {
  TensorComparison result;
  if (actual.size() != expected.size()) {
    result.agree = false;
    result.max_abs_error = kInfinity;
    result.mismatches = 1;
    result.first_mismatch = absl::StrCat(actual.size(), " outputs, expected ", expected.size());
    return result;
  }
  for (size_t o = 0; o < actual.size(); ++o) {
    Accumulate(actual[o], expected[o], tolerance, absl::StrCat("output ", o, " "), result);
  }
  return result;
}

}  // namespace shapeshift
