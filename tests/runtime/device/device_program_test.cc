// Device::kCuda Programs on the host-emulated device (tests/support/cuda):
// the generated CUDA C, the GEMM plans, the device arena placement, the
// parameter block, copies at the edges and CUDA graph buckets — everything
// a GPU run does except the driver and cuBLASLt calls themselves — against
// the CPU Program and the interpreter. Without a GPU, Device::kCuda with no
// injected device is a clear error.
#include <filesystem>
#include <memory>
#include <random>
#include <vector>

#include "examples/models/bert.h"
#include "examples/models/gpt2.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/session.h"
#include "tests/graph/imported_model_util.h"
#include "tests/runtime/e2e_util.h"
#include "runtime/device/cuda_graphs.h"
#include "tests/support/cuda/emulated_device.h"

namespace shapeshift::runtime {
namespace {

using ::shapeshift::testing::TensorsClose;
using ::testing::HasSubstr;
using ::testing::Not;

examples::BertConfig SmallBert() {
  examples::BertConfig config;
  config.layers = 2;
  config.hidden = 64;
  config.heads = 2;
  config.intermediate = 128;
  config.vocab = 500;
  config.max_position = 128;
  config.batch = {1, 4};
  config.seq = {1, 128};
  return config;
}

std::unique_ptr<Session> MakeSession(const examples::BertConfig& config, const CompileOptions& options) {
  return shapeshift::testing::BuiltSession(examples::BuildBert, config, options);
}

CompileOptions Cuda(std::shared_ptr<codegen::cuda::testing::EmulatedDevice> device, bool graphs = true) {
  CompileOptions options;
  options.device = Device::kCuda;
  options.cuda.device = std::move(device);
  options.cuda.graphs = graphs;
  return options;
}

TEST(DeviceProgramTest, WithoutAGpuDeviceCudaIsAnErrorNotACpuRun) {
  CompileOptions options;
  options.device = Device::kCuda;  // no injected device: the real GPU
  absl::StatusOr<ImportedModel> model = examples::BuildBert(SmallBert());
  ASSERT_TRUE(model.ok());
  absl::StatusOr<std::unique_ptr<Session>> session =
      Session::Create(ModelSource::Built(std::move(model->graph), std::move(model->env)), options);
  if (session.ok()) {
    // A machine with a GPU: the program says it runs there.
    EXPECT_EQ((*session)->stats().program.device, "cuda");
    EXPECT_THAT((*session)->program()->device_report(), Not(HasSubstr("emulation")));
    return;
  }
  EXPECT_EQ(session.status().code(), absl::StatusCode::kUnavailable) << session.status();
  EXPECT_THAT(std::string(session.status().message()), HasSubstr("--device cuda"));
  EXPECT_THAT(std::string(session.status().message()), HasSubstr("nothing runs on the CPU instead"));
}

TEST(DeviceProgramTest, BertMatchesTheCpuProgramAtOddShapesWithCopiesOnlyAtTheEdges) {
  examples::BertConfig config = SmallBert();
  auto device = std::make_shared<codegen::cuda::testing::EmulatedDevice>();
  std::unique_ptr<Session> gpu = MakeSession(config, Cuda(device, /*graphs=*/false));
  std::unique_ptr<Session> cpu = MakeSession(config, {});
  ASSERT_NE(gpu, nullptr);
  ASSERT_NE(cpu, nullptr);
  EXPECT_EQ(gpu->stats().program.device, "cuda");
  EXPECT_GT(gpu->stats().program.kernels, 3);
  EXPECT_EQ(gpu->stats().program.attention_calls, config.layers);  // the CUDA attention kernel
  std::optional<DeviceStats> before = gpu->program()->device_stats();
  ASSERT_TRUE(before.has_value());
  EXPECT_EQ(before->arch, "host emulation");
  EXPECT_GT(before->constant_bytes, 0);
  int requests = 0;
  for (auto [batch, seq] : {std::pair{1, 1}, {1, 7}, {2, 17}, {3, 33}, {1, 97}, {2, 128}}) {
    SCOPED_TRACE(absl::StrCat(batch, "x", seq));
    std::vector<Tensor> in = examples::MakeBertInputs(config, batch, seq, 11 + seq, /*padded=*/true);
    absl::StatusOr<std::vector<Tensor>> want = cpu->Run(in);
    absl::StatusOr<std::vector<Tensor>> got = gpu->Run(in);
    ASSERT_TRUE(want.ok()) << want.status();
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(got->size(), want->size());
    for (size_t o = 0; o < got->size(); ++o) EXPECT_TRUE(TensorsClose((*got)[o], (*want)[o], 1e-4, 1e-4));
    ++requests;
  }
  DeviceStats after = *gpu->program()->device_stats();
  EXPECT_EQ(after.requests, requests);
  EXPECT_EQ(after.direct_runs, requests);
  // Per request: the parameter block and the two inputs in; the output and
  // the embedding gathers' status words out.
  EXPECT_EQ(after.host_to_device_copies - before->host_to_device_copies, 3 * requests);
  EXPECT_EQ(after.device_to_host_copies - before->device_to_host_copies, 2 * requests);
  EXPECT_EQ(device->counters().captures.load(), 0);
}

TEST(DeviceProgramTest, GraphsPerBucketReplayExactlyWhatADirectRunComputes) {
  examples::BertConfig config = SmallBert();
  auto device = std::make_shared<codegen::cuda::testing::EmulatedDevice>();
  std::unique_ptr<Session> graphs = MakeSession(config, Cuda(device));
  std::unique_ptr<Session> direct = MakeSession(config, Cuda(device, /*graphs=*/false));
  std::unique_ptr<Session> cpu = MakeSession(config, {});
  ASSERT_NE(graphs, nullptr);
  std::string plan = graphs->program()->device_report();
  EXPECT_THAT(plan, HasSubstr("CUDA graphs: bucketed by seq in 1..128"));
  EXPECT_THAT(plan, HasSubstr("between segments"));
  // A variable-length trace; seq buckets 1, 2, 3..4, 5..8, ..., 65..128.
  std::mt19937_64 rng(3);
  int requests = 0;
  for (int i = 0; i < 40; ++i) {
    int64_t batch = 1 + i % 2;
    int64_t seq = std::uniform_int_distribution<int64_t>(1, 128)(rng);
    if (i < 6) seq = 70 + i;  // one hot bucket: 65..128, batch 1 and 2
    SCOPED_TRACE(absl::StrCat(batch, "x", seq));
    std::vector<Tensor> in = examples::MakeBertInputs(config, batch, seq, i, /*padded=*/true);
    absl::StatusOr<std::vector<Tensor>> g = graphs->Run(in);
    absl::StatusOr<std::vector<Tensor>> d = direct->Run(in);
    absl::StatusOr<std::vector<Tensor>> c = cpu->Run(in);
    ASSERT_TRUE(g.ok()) << g.status();
    ASSERT_TRUE(d.ok()) << d.status();
    ASSERT_TRUE(c.ok()) << c.status();
    // Padding the graph's GEMMs to the bucket's largest seq changes no bit
    // of the result; and both agree with the CPU.
    ASSERT_EQ((*g)[0].byte_size(), (*d)[0].byte_size());
    EXPECT_EQ(std::memcmp((*g)[0].raw(), (*d)[0].raw(), (*g)[0].byte_size()), 0);
    EXPECT_TRUE(TensorsClose((*g)[0], (*c)[0], 1e-4, 1e-4));
    ++requests;
  }
  DeviceStats s = *graphs->program()->device_stats();
  EXPECT_EQ(s.requests, requests);
  EXPECT_EQ(s.direct_runs + s.graph_captures + s.graph_replays, requests);
  EXPECT_GE(s.graph_captures, 2);  // 65..128 for batch 1 and for batch 2 at least
  EXPECT_GE(s.graph_replays, 2);
  std::string report = graphs->program()->device_report();
  EXPECT_THAT(report, HasSubstr("captured CUDA graph bucket 65..128 of seq (key 65..128 batch=1)"));
  EXPECT_THAT(report, HasSubstr("GEMMs between them"));
}

TEST(DeviceProgramTest, DeviceInputsAreUsedInPlace) {
  examples::BertConfig config = SmallBert();
  auto device = std::make_shared<codegen::cuda::testing::EmulatedDevice>();
  std::unique_ptr<Session> gpu = MakeSession(config, Cuda(device, /*graphs=*/false));
  std::unique_ptr<Session> cpu = MakeSession(config, {});
  ASSERT_NE(gpu, nullptr);
  std::vector<Tensor> in = examples::MakeBertInputs(config, 2, 9, 5);
  // The emulated device's memory is host memory: a host tensor is a valid
  // "device buffer" for it.
  std::vector<TensorView> views;
  for (const Tensor& t : in) {
    TensorView v = TensorView::Of(t);
    v.space = MemorySpace::kCuda;
    views.push_back(v);
  }
  int64_t h2d = device->counters().host_to_device.load();
  absl::StatusOr<std::vector<Tensor>> got = gpu->Run(views);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(device->counters().host_to_device.load() - h2d, 1) << "only the parameter block";
  EXPECT_TRUE(TensorsClose((*got)[0], (*cpu->Run(in))[0], 1e-4, 1e-4));
  // The CPU program refuses device memory instead of reading it.
  absl::StatusOr<std::vector<Tensor>> refused = cpu->Run(views);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("CUDA device memory"));
}

TEST(DeviceProgramTest, BadTokenIdsAreAnErrorNamingTheNode) {
  examples::BertConfig config = SmallBert();
  auto device = std::make_shared<codegen::cuda::testing::EmulatedDevice>();
  std::unique_ptr<Session> gpu = MakeSession(config, Cuda(device));
  ASSERT_NE(gpu, nullptr);
  std::vector<Tensor> in = examples::MakeBertInputs(config, 1, 5, 1);
  in[0].mutable_data<int64_t>()[3] = config.vocab + 7;
  absl::StatusOr<std::vector<Tensor>> got = gpu->Run(in);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(got.status().message()), HasSubstr("index 507 at position 3"));
  // The next request is served normally.
  EXPECT_TRUE(gpu->Run(examples::MakeBertInputs(config, 1, 5, 2)).ok());
}

TEST(DeviceProgramTest, Gpt2DecodeWithKvCacheMatchesTheCpu) {
  examples::Gpt2Config config;
  config.layers = 2;
  config.hidden = 64;
  config.heads = 2;
  config.vocab = 300;
  config.max_position = 256;
  config.kv_cache = true;
  config.batch = {1, 4};
  config.seq = {1, 64};
  config.past = {0, 128};
  auto build = [&](const CompileOptions& options) {
    return shapeshift::testing::BuiltSession(examples::BuildGpt2, config, options);
  };
  auto device = std::make_shared<codegen::cuda::testing::EmulatedDevice>(
      codegen::cuda::testing::EmulatedDeviceOptions{.reverse_threads = true});
  std::unique_ptr<Session> gpu = build(Cuda(device));
  std::unique_ptr<Session> cpu = build({});
  ASSERT_NE(gpu, nullptr);
  EXPECT_THAT(gpu->program()->device_report(), HasSubstr("bucketed by past"));
  EXPECT_EQ(gpu->stats().program.attention_calls, cpu->stats().program.attention_calls);
  // Decode steps at growing past (graphs per past bucket), then prefills.
  for (auto [batch, seq, past] : {std::tuple{1, 1, 0}, {1, 1, 1}, {1, 1, 5}, {1, 1, 6}, {1, 1, 7}, {2, 1, 33},
                                  {2, 1, 34}, {2, 1, 35}, {1, 7, 0}, {3, 17, 97}, {1, 1, 128}}) {
    SCOPED_TRACE(absl::StrCat(batch, "x", seq, " past ", past));
    std::vector<Tensor> in = examples::MakeGpt2Inputs(config, batch, seq, past, past + seq);
    absl::StatusOr<std::vector<Tensor>> got = gpu->Run(in);
    absl::StatusOr<std::vector<Tensor>> want = cpu->Run(in);
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_TRUE(want.ok()) << want.status();
    for (size_t o = 0; o < got->size(); ++o) EXPECT_TRUE(TensorsClose((*got)[o], (*want)[o], 1e-4, 1e-4)) << o;
  }
  DeviceStats s = *gpu->program()->device_stats();
  EXPECT_GE(s.graph_replays, 2);  // 5..8 and 33..64 for batch 2
}

// Runs every committed test data set of export `name` (test_data_set_K,
// ONNX Runtime's outputs) through `session`; how many there were.
int ExpectDataSetsMatch(Session& session, const std::string& name) {
  const std::string dir = std::string(SHAPESHIFT_SOURCE_DIR) + "/tests/data/models/" + name + "/";
  int sets = 0;
  for (int set = 0; set < 4; ++set) {
    const std::string set_dir = dir + "test_data_set_" + std::to_string(set) + "/";
    if (!std::filesystem::exists(set_dir)) continue;
    SCOPED_TRACE(set_dir);
    std::vector<Tensor> in = shapeshift::testing::ReadNumbered(set_dir, "input");
    std::vector<Tensor> want = shapeshift::testing::ReadNumbered(set_dir, "output");
    EXPECT_FALSE(in.empty());
    absl::StatusOr<std::vector<Tensor>> got = session.Run(in);
    EXPECT_TRUE(got.ok()) << got.status();
    if (!got.ok()) continue;
    EXPECT_EQ(got->size(), want.size());
    for (size_t o = 0; o < got->size() && o < want.size(); ++o) {
      EXPECT_TRUE(TensorsClose((*got)[o], want[o], 1e-4, 1e-4)) << "output " << o;
    }
    ++sets;
  }
  return sets;
}

// GPT-2's attention reads Q, K and V in place from its fused projection's
// [b, S, 3·hidden] output (AttentionGroup::Source: each operand's first
// column an offset into that buffer), prefill and decode, both exporters,
// against ONNX Runtime's outputs in the committed test data sets.
TEST(DeviceProgramTest, Gpt2ReadsItsFusedProjectionInPlaceAndMatchesOnnxRuntime) {
  for (const char* name : {"gpt2-torchscript", "gpt2-dynamo", "gpt2-past-torchscript", "gpt2-past-dynamo"}) {
    SCOPED_TRACE(name);
    auto device = std::make_shared<codegen::cuda::testing::EmulatedDevice>(
        codegen::cuda::testing::EmulatedDeviceOptions{.reverse_threads = true});
    absl::StatusOr<std::unique_ptr<Session>> gpu =
        Session::Create(ModelSource::OnnxFile(shapeshift::testing::ExportPath(name)), Cuda(device));
    ASSERT_TRUE(gpu.ok()) << gpu.status();
    EXPECT_EQ((*gpu)->stats().program.attention_calls, 2);
    EXPECT_EQ(ExpectDataSetsMatch(**gpu, name), 3);
  }
}

// A grouped-query RoPE decoder (the tiny Llama with past, dynamo export): its
// RMSNorm row kernels, the attention matmuls over unexpanded key/value heads
// (grouped-query-matmul) and the rotary kernels on the device, against ONNX
// Runtime's outputs in the committed test data sets (prefill and decode).
TEST(DeviceProgramTest, GroupedQueryLlamaWithPastMatchesOnnxRuntime) {
  auto device = std::make_shared<codegen::cuda::testing::EmulatedDevice>(
      codegen::cuda::testing::EmulatedDeviceOptions{.reverse_threads = true});
  absl::StatusOr<std::unique_ptr<Session>> gpu =
      Session::Create(ModelSource::OnnxFile(shapeshift::testing::ExportPath("llama-past-dynamo")), Cuda(device));
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  EXPECT_EQ(ExpectDataSetsMatch(**gpu, "llama-past-dynamo"), 4);
  EXPECT_EQ((*gpu)->stats().compiles, 1);
}

}  // namespace
}  // namespace shapeshift::runtime
