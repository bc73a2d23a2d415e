// When two tensors agree: the one comparison rule behind every "wrong
// result" shapeshift reports (`run --check`, trace replays, `fuzz`,
// `conformance`) and behind the tests that compare outputs.
//
// Why one rule: before it, `run --check` called a NaN on both sides a
// mismatch while `fuzz` accepted it, so the two commands disagreed about the
// same outputs, and a model whose outputs legitimately hold NaN or Inf (ONNX
// Runtime gives the same) could never pass `--check`. An element agrees when
//  - both are NaN (NaN positions must match exactly: a NaN against a number
//    is wrong, either way round);
//  - both are infinite with the same sign;
//  - both are finite and |actual - expected| <= atol + rtol * |expected|
//    (the default rtol = atol = 1e-3: the end-to-end tolerance for float32
//    models whose kernels reassociate sums).
// An infinity against a finite number never agrees, however large the
// number. Integer and bool elements must be equal. Tensors of another dtype
// or shape, and lists of another length, disagree outright.
#ifndef SHAPESHIFT_GRAPH_TENSOR_COMPARE_H_
#define SHAPESHIFT_GRAPH_TENSOR_COMPARE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "graph/tensor.h"

namespace shapeshift {

struct Tolerance {
  double rtol = 1e-3;
  double atol = 1e-3;
};
// The tolerance every command reports against unless it says otherwise.
inline constexpr Tolerance kDefaultTolerance{};

// One floating-point element under the rule above.
bool ElementsAgree(double actual, double expected, Tolerance tolerance = kDefaultTolerance);

struct TensorComparison {
  bool agree = true;
  // Largest |actual - expected| over the finite pairs; infinity when any
  // element disagrees with a non-finite value on either side, or when the
  // dtypes, shapes or output counts differ.
  double max_abs_error = 0;
  int64_t mismatches = 0;      // elements that disagree
  std::string first_mismatch;  // "output 1 element 7: nan, expected 0.5"; empty when agree
};

TensorComparison CompareTensors(const Tensor& actual, const Tensor& expected, Tolerance tolerance = kDefaultTolerance);
// Output lists, element by element; mismatch texts name the output index.
TensorComparison CompareTensorLists(const std::vector<Tensor>& actual, const std::vector<Tensor>& expected,
                                    Tolerance tolerance = kDefaultTolerance);

}  // namespace shapeshift

#endif  // SHAPESHIFT_GRAPH_TENSOR_COMPARE_H_
