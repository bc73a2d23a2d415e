// Data-indexed ops in Device::kCuda Programs on the host-emulated device
// (tests/support/cuda): the per-request index checks, which on a device are a kernel reading
// the indices in device memory: a bad index fails the request naming the
// node, the index and its axis, exactly as on the CPU.
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "graph/interpreter.h"
#include "graph/tensor_compare.h"
#include "gtest/gtest.h"
#include "runtime/session.h"
#include "tests/runtime/runtime_test_util.h"
#include "tests/support/cuda/emulated_device.h"
#ifdef SHAPESHIFT_HAVE_CUDA
#include "codegen/cuda/nvrtc_compiler.h"
#endif

namespace shapeshift::runtime {
namespace {

using ::testing::HasSubstr;
using testing::BuiltModel;
using testing::ModelBuilder;

constexpr char kNode[] = "under_test";

// The emulated GPU, keeping the module text so the test can hand it to NVRTC.
class RecordingDevice : public codegen::cuda::testing::EmulatedDevice {
 public:
  using EmulatedDevice::EmulatedDevice;
  absl::StatusOr<std::unique_ptr<codegen::cuda::DeviceModule>> LoadModule(const std::string& source,
                                                                          const std::string& name) override {
    sources.push_back(source);
    return EmulatedDevice::LoadModule(source, name);
  }
  std::vector<std::string> sources;
};

struct DeviceFixture {
  std::unique_ptr<Graph> reference;
  std::shared_ptr<RecordingDevice> device;
  std::unique_ptr<Session> session;
};

DeviceFixture CompileForDevice(BuiltModel model, bool reverse, bool graphs) {
  DeviceFixture f;
  f.reference = model.graph->Clone();
  f.device = std::make_shared<RecordingDevice>(codegen::cuda::testing::EmulatedDeviceOptions{reverse});
  CompileOptions options;
  options.device = Device::kCuda;
  options.cuda.device = f.device;
  options.cuda.graphs = graphs;
  absl::StatusOr<std::unique_ptr<Session>> session =
      Session::Create(ModelSource::Built(std::move(model.graph), std::move(model.env)), options);
  EXPECT_TRUE(session.ok()) << session.status();
  if (session.ok()) f.session = *std::move(session);
  return f;
}

Tensor Floats(std::vector<int64_t> shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return Tensor::FromVector<float>(DType::kF32, shape, v);
}

void ExpectMatches(DeviceFixture& f, const std::vector<Tensor>& inputs, const std::string& where) {
  ASSERT_NE(f.session, nullptr);
  absl::StatusOr<std::vector<Tensor>> want = Interpret(*f.reference, inputs);
  ASSERT_TRUE(want.ok()) << where << ": " << want.status();
  absl::StatusOr<std::vector<Tensor>> got = f.session->Run(inputs);
  ASSERT_TRUE(got.ok()) << where << ": " << got.status();
  const TensorComparison cmp = CompareTensorLists(*got, *want);
  EXPECT_TRUE(cmp.agree) << where << ": " << cmp.first_mismatch;
}


// Gather on an inner axis by runtime indices (an input) and by indices a
// kernel computed on the device (an intermediate): the check reads them
// where they are and the message is the CPU's.
TEST(DeviceIndexingTest, AnIndexOutsideTheDataFailsTheRequestNamingNodeIndexAndAxis) {
  for (bool computed : {false, true}) {
    SCOPED_TRACE(computed ? "indices computed on the device" : "indices from the request");
    ModelBuilder m;
    SymExpr b = m.Dim("batch", 1, 4), s = m.Dim("seq", 1, 64), n = m.Dim("n", 1, 9);
    Value* x = m.In("x", {b, s, 8});
    Value* ids = m.In("ids", {n}, DType::kI64);
    if (computed) ids = m.Op("Add", {ids, m.Ints({1})});
    m.graph().AddOutput(m.NamedNode(kNode, "Gather", {x, ids}, ModelBuilder::Attr("axis", int64_t{1}))->output(0));
    DeviceFixture f = CompileForDevice(m.Finish(), /*reverse=*/false, /*graphs=*/false);
    ASSERT_NE(f.session, nullptr);
    const int64_t shift = computed ? 1 : 0;
    for (int64_t bad : {5, -6, 1000000}) {
      std::vector<Tensor> inputs = {Floats({2, 5, 8}, 3),
                                    Tensor::FromVector<int64_t>(DType::kI64, {3}, {0, bad - shift, 1})};
      absl::StatusOr<std::vector<Tensor>> got = f.session->Run(inputs);
      ASSERT_FALSE(got.ok()) << "index " << bad;
      EXPECT_THAT(got.status().message(),
                  HasSubstr(absl::StrCat("node '", kNode, "' (Gather): index ", bad, " at position 1")));
      EXPECT_THAT(got.status().message(), HasSubstr("axis 1 of size 5 (valid: -5 to 4)"));
      EXPECT_FALSE(Interpret(*f.reference, inputs).ok());
    }
    ExpectMatches(f, {Floats({2, 5, 8}, 3), Tensor::FromVector<int64_t>(DType::kI64, {2}, {4 - shift, -5 - shift})},
                  "boundary");
  }
}

}  // namespace
}  // namespace shapeshift::runtime
