// Data-indexed ops in Device::kCuda Programs on the host-emulated device
// (tests/support/cuda): ScatterND with repeated and negative index tuples
// (the later tuple wins, as in the interpreter and ONNX Runtime), with
// threads forward and reversed and through CUDA graph replays, its module
// compiled by NVRTC for sm_80 and sm_90 where the toolkit is present; and
// the per-request index checks, which on a device are a kernel reading
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

#ifdef SHAPESHIFT_HAVE_CUDA
void ExpectCubins(const std::string& module) {
  for (const char* arch : {"sm_80", "sm_90"}) {
    absl::StatusOr<codegen::cuda::Cubin> cubin = codegen::cuda::CompileToCubin(module, "indexing", arch);
    ASSERT_TRUE(cubin.ok()) << arch << ": " << cubin.status();
    EXPECT_FALSE(cubin->reports.empty()) << cubin->log;
  }
}
#endif

// A cache update: rows of a [batch, 16, 4] cache replaced at (batch,
// position) tuples; positions repeat within a request (the last tuple
// wins) and come as negatives too, batch indices as well.
BuiltModel ScatterModel() {
  ModelBuilder m;
  SymExpr b = m.Dim("batch", 1, 4), s = m.Dim("seq", 1, 32);
  Value* cache = m.In("cache", {b, 16, 4});
  Value* where = m.In("where", {b, s, 2}, DType::kI64);
  Value* rows = m.In("rows", {b, s, 4});
  m.graph().AddOutput(m.NamedNode(kNode, "ScatterND", {cache, where, rows})->output(0));
  return m.Finish();
}

Tensor RepeatedTuples(int64_t batch, int64_t seq) {
  Tensor pairs = Tensor::Zeros(DType::kI64, {batch, seq, 2}).value();
  int64_t* p = pairs.mutable_data<int64_t>();
  for (int64_t i = 0; i < batch; ++i) {
    for (int64_t t = 0; t < seq; ++t) {
      const int64_t position = (t * 7) % 5;  // five places: every place repeats once seq > 5
      p[(i * seq + t) * 2] = t % 3 == 0 ? i - batch : i;
      p[(i * seq + t) * 2 + 1] = t % 2 == 1 ? position - 16 : position;
    }
  }
  return pairs;
}

TEST(DeviceIndexingTest, ScatterNDWithRepeatedAndNegativeTuplesMatchesTheInterpreter) {
  for (bool reverse : {false, true}) {
    SCOPED_TRACE(reverse ? "threads reversed" : "threads forward");
    DeviceFixture f = CompileForDevice(ScatterModel(), reverse, /*graphs=*/false);
    ASSERT_NE(f.session, nullptr);
    ASSERT_EQ(f.session->stats().program.device, "cuda");
    ASSERT_EQ(f.device->sources.size(), 1u);
#ifdef SHAPESHIFT_HAVE_CUDA
    if (!reverse) ExpectCubins(f.device->sources.front());
#endif
    for (auto [batch, seq] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {1, 6}, {2, 7}, {3, 17}, {4, 32}}) {
      std::vector<Tensor> inputs = {Floats({batch, 16, 4}, seq), RepeatedTuples(batch, seq),
                                    Floats({batch, seq, 4}, batch + 100)};
      ExpectMatches(f, inputs, absl::StrCat(batch, "x", seq));
    }
  }
}

// Replays of a captured graph read the request's dims: the same scatter at
// several sizes of one bucket, each request checked.
TEST(DeviceIndexingTest, ScatterNDThroughCudaGraphReplaysMatchesTheInterpreter) {
  DeviceFixture f = CompileForDevice(ScatterModel(), /*reverse=*/false, /*graphs=*/true);
  ASSERT_NE(f.session, nullptr);
  for (int round = 0; round < 3; ++round) {
    for (int64_t seq : {17, 20, 32, 9}) {
      std::vector<Tensor> inputs = {Floats({2, 16, 4}, round * 10 + seq), RepeatedTuples(2, seq),
                                    Floats({2, seq, 4}, round)};
      ExpectMatches(f, inputs, absl::StrCat("round ", round, " seq ", seq));
    }
  }
  std::optional<DeviceStats> stats = f.session->program()->device_stats();
  ASSERT_TRUE(stats.has_value());
  EXPECT_GT(stats->graph_replays, 0) << f.session->program()->device_report();
}

TEST(DeviceIndexingTest, AnOutOfRangeScatterTupleFailsTheRequestNamingNodeAndIndex) {
  DeviceFixture f = CompileForDevice(ScatterModel(), /*reverse=*/false, /*graphs=*/false);
  ASSERT_NE(f.session, nullptr);
  for (auto [bad, position] : std::vector<std::pair<std::vector<int64_t>, int>>{{{0, 16}, 1}, {{0, -17}, 1}, {{1, 0}, 0}}) {
    std::vector<Tensor> inputs = {Floats({1, 16, 4}, 1), Tensor::FromVector<int64_t>(DType::kI64, {1, 1, 2}, bad),
                                  Floats({1, 1, 4}, 2)};
    absl::StatusOr<std::vector<Tensor>> got = f.session->Run(inputs);
    ASSERT_FALSE(got.ok()) << "tuple " << bad[0] << "," << bad[1];
    EXPECT_THAT(got.status().message(), HasSubstr(absl::StrCat("node '", kNode, "' (ScatterND): index ", bad[position],
                                                               " at position ", position)));
    EXPECT_FALSE(Interpret(*f.reference, inputs).ok());
  }
  // The program still serves good requests after bad ones.
  ExpectMatches(f, {Floats({2, 16, 4}, 5), RepeatedTuples(2, 9), Floats({2, 9, 4}, 6)}, "after the bad ones");
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
