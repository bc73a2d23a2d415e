// T5's and DeBERTa-v2's relative positions (passes/relative_position_
// recognition.h) on the host-emulated GPU: each export compiled as a
// Device::kCuda program — the softmax kernels computing T5's bias from their
// loop indices and the gather kernels computing DeBERTa's indices (with the
// index check kernel reading the S + T - 1 positions) emitted as CUDA C —
// and run, threads forward and reversed, against ONNX Runtime's outputs.
// The CPU path of the same exports is the zoo test's (zoo_models_test.cc).
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/session.h"
#include "tests/graph/imported_model_util.h"
#include "tests/real_exports.h"
#include "tests/support/cuda/emulated_device.h"

namespace shapeshift::runtime {
namespace {

using ::shapeshift::testing::ReadNumbered;

double MaxAbsDiff(const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
  if (got.size() != want.size()) return std::numeric_limits<double>::infinity();
  double worst = 0;
  for (size_t t = 0; t < got.size(); ++t) {
    if (got[t].shape() != want[t].shape()) return std::numeric_limits<double>::infinity();
    for (int64_t i = 0; i < got[t].num_elements(); ++i) {
      const double d = std::abs(got[t].GetAsDouble(i) - want[t].GetAsDouble(i));
      if (std::isnan(d)) return std::numeric_limits<double>::infinity();
      worst = std::max(worst, d);
    }
  }
  return worst;
}

class RelativePositionDeviceTest : public ::testing::TestWithParam<const char*> {};

TEST_P(RelativePositionDeviceTest, MatchesOnnxRuntimeOnTheEmulatedGpu) {
  const std::string dir = std::string(SHAPESHIFT_SOURCE_DIR) + "/tests/data/models/" + GetParam() + "/";
  for (bool reverse : {false, true}) {
    SCOPED_TRACE(reverse ? "threads reversed" : "threads forward");
    CompileOptions options;
    options.device = Device::kCuda;
    options.cuda.device = std::make_shared<codegen::cuda::testing::EmulatedDevice>(
        codegen::cuda::testing::EmulatedDeviceOptions{reverse});
    options.cuda.graphs = false;
    absl::StatusOr<std::unique_ptr<Session>> session =
        Session::Create(ModelSource::OnnxFile(dir + "model.onnx"), options);
    ASSERT_TRUE(session.ok()) << session.status();
    ASSERT_EQ((*session)->stats().program.device, "cuda");
    // (1, 5) and (2, 37) with the second row padded: ONNX Runtime's outputs.
    for (const char* set : {"test_data_set_0/", "test_data_set_1/"}) {
      std::vector<Tensor> inputs = ReadNumbered(dir + set, "input");
      std::vector<Tensor> expected = ReadNumbered(dir + set, "output");
      ASSERT_FALSE(inputs.empty() || expected.empty()) << set;
      absl::StatusOr<std::vector<Tensor>> out = (*session)->Run(inputs);
      ASSERT_TRUE(out.ok()) << set << ": " << out.status();
      const double diff = MaxAbsDiff(*out, expected);
      EXPECT_LE(diff, 1e-4) << set << " against ONNX Runtime";
      std::printf("%s/%s: max abs diff vs ONNX Runtime %.3g (emulated GPU%s)\n", GetParam(), set, diff,
                  reverse ? ", threads reversed" : "");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Exports, RelativePositionDeviceTest,
                         ::testing::ValuesIn(shapeshift::testing::kRelativePositionExports),
                         shapeshift::testing::RealExportTestName);

}  // namespace
}  // namespace shapeshift::runtime
