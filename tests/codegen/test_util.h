// Helpers shared by the codegen tests: deterministic data and tolerances.
#ifndef SHAPESHIFT_TESTS_CODEGEN_TEST_UTIL_H_
#define SHAPESHIFT_TESTS_CODEGEN_TEST_UTIL_H_

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace shapeshift::codegen::testing {

inline std::vector<float> RandomFloats(int64_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// |got - want| <= rtol * |want| + atol, and NaN only where NaN is expected.
inline bool Close(double got, double want, double rtol, double atol) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::abs(got - want) <= rtol * std::abs(want) + atol;
}

}  // namespace shapeshift::codegen::testing

#endif  // SHAPESHIFT_TESTS_CODEGEN_TEST_UTIL_H_
