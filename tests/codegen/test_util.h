// Helpers shared by the codegen tests: deterministic data and tolerances.
#ifndef SHAPESHIFT_TESTS_CODEGEN_TEST_UTIL_H_
#define SHAPESHIFT_TESTS_CODEGEN_TEST_UTIL_H_

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "codegen/kernel_ir.h"

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

// y[p] = v_steps, v_0 = x[p], v_{k+1} = v_k * v_k - v_k: every value is read
// twice, so the expression is a DAG of 2*steps + 2 nodes and 2^steps times
// larger as a tree. Values stay in [-0.25, 0.75] for x in [-0.5, 0.5].
inline Kernel SharedChainKernel(int steps, const std::string& name = "shared_chain") {
  Kernel k;
  k.name = name;
  BufferRef x = k.AddInput("x");
  BufferRef y = k.AddOutput("y");
  k.parallel_extent = k.AddDim("n");
  Value v = Load(x, k.ParallelVar());
  for (int i = 0; i < steps; ++i) v = v * v - v;
  k.body = {Store(y, k.ParallelVar(), v)};
  return k;
}

// SharedChainKernel's result, computed the same way in float.
inline float SharedChainReference(int steps, float x) {
  for (int i = 0; i < steps; ++i) x = x * x - x;
  return x;
}

}  // namespace shapeshift::codegen::testing

#endif  // SHAPESHIFT_TESTS_CODEGEN_TEST_UTIL_H_
