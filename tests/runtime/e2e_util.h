// Helpers shared by the end-to-end tests: tensor comparison with rtol/atol
// that reports the first mismatching element, slicing of row-major tensors
// so a prefix of one run can be compared against another run, and one
// compiled request checked against the interpreter on the original graph.
#ifndef SHAPESHIFT_TESTS_RUNTIME_E2E_UTIL_H_
#define SHAPESHIFT_TESTS_RUNTIME_E2E_UTIL_H_

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "examples/models/bert.h"
#include "graph/interpreter.h"
#include "graph/tensor.h"
#include "graph/tensor_compare.h"
#include "gtest/gtest.h"
#include "runtime/session.h"

namespace shapeshift::testing {

// The one comparison rule (graph/tensor_compare.h) with the given
// tolerance: same shape and dtype, NaN where NaN is expected, infinities by
// sign, |actual - expected| <= atol + rtol * |expected| elsewhere; the
// failure message names the first bad element.
inline ::testing::AssertionResult TensorsClose(const Tensor& actual, const Tensor& expected, double rtol,
                                               double atol) {
  TensorComparison c = CompareTensors(actual, expected, Tolerance{.rtol = rtol, .atol = atol});
  if (c.agree) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << c.mismatches << " mismatch(es) in " << actual.DebugString(0) << ", first "
                                       << c.first_mismatch;
}

inline double MaxAbsDifference(const Tensor& a, const Tensor& b) { return CompareTensors(a, b).max_abs_error; }

// A 2-layer BERT 128 wide with a 512-wide FFN: every constant-weight GEMM
// class a real BERT has (Q/K/V, output + residual, FFN up + GELU, FFN down +
// residual), small enough to compile and tune in a second.
inline examples::BertConfig SmallBertConfig() {
  examples::BertConfig config;
  config.layers = 2;
  config.hidden = 128;
  config.heads = 2;
  config.intermediate = 512;
  config.vocab = 1024;
  return config;
}

// A Session over a model built from `config` (examples/models: BuildBert,
// BuildGpt2, ...); null, with a test failure naming the error, if the build
// or the compile fails.
template <typename Build, typename Config>
std::unique_ptr<runtime::Session> BuiltSession(Build build, const Config& config,
                                               const runtime::CompileOptions& options) {
  absl::StatusOr<ImportedModel> model = build(config);
  EXPECT_TRUE(model.ok()) << model.status();
  if (!model.ok()) return nullptr;
  absl::StatusOr<std::unique_ptr<runtime::Session>> session =
      runtime::Session::Create(runtime::ModelSource::Built(std::move(model->graph), std::move(model->env)), options);
  EXPECT_TRUE(session.ok()) << session.status();
  return session.ok() ? *std::move(session) : nullptr;
}

// The sub-tensor t[:, ..., lo:hi, ...] taken along `axis` (any dtype).
inline Tensor SliceAxis(const Tensor& t, int axis, int64_t lo, int64_t hi) {
  std::vector<int64_t> shape = t.shape();
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= shape[i];
  for (size_t i = axis + 1; i < shape.size(); ++i) inner *= shape[i];
  int64_t full = shape[axis];
  shape[axis] = hi - lo;
  Tensor out = Tensor::Zeros(t.dtype(), shape).value();
  const size_t row_bytes = static_cast<size_t>((hi - lo) * inner) * DTypeSize(t.dtype());
  const auto* src = static_cast<const std::byte*>(t.raw());
  auto* dst = static_cast<std::byte*>(out.mutable_raw());
  for (int64_t o = 0; o < outer; ++o) {
    std::memcpy(dst + o * row_bytes, src + static_cast<size_t>((o * full + lo) * inner) * DTypeSize(t.dtype()),
                row_bytes);
  }
  return out;
}

inline bool AllFinite(const Tensor& t) {
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    if (!std::isfinite(t.GetAsDouble(i))) return false;
  }
  return true;
}

// Runs `inputs` through the session and through the interpreter on
// `reference` (the model as built, before the compiler rewrote its copy) and
// compares every output.
inline ::testing::AssertionResult CompiledMatchesInterpreter(runtime::Session& session, const Graph& reference,
                                                             const std::vector<Tensor>& inputs, double rtol,
                                                             double atol) {
  absl::StatusOr<std::vector<Tensor>> got = session.Run(inputs);
  if (!got.ok()) return ::testing::AssertionFailure() << "compiled run: " << got.status();
  absl::StatusOr<std::vector<Tensor>> want = Interpret(reference, inputs);
  if (!want.ok()) return ::testing::AssertionFailure() << "interpreter: " << want.status();
  if (got->size() != want->size()) {
    return ::testing::AssertionFailure() << got->size() << " outputs, want " << want->size();
  }
  for (size_t i = 0; i < got->size(); ++i) {
    ::testing::AssertionResult close = TensorsClose((*got)[i], (*want)[i], rtol, atol);
    if (!close) return close << " (output " << i << ")";
  }
  return ::testing::AssertionSuccess();
}

}  // namespace shapeshift::testing

#endif  // SHAPESHIFT_TESTS_RUNTIME_E2E_UTIL_H_
