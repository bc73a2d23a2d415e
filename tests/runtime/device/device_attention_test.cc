// Fused attention in Device::kCuda Programs (codegen/cuda/attention_kernel.h)
// on the host-emulated device: on the torch exports whose attentions fusion
// merges — encoders with a padding mask, causal decoders, BART's encoder,
// decoder and cross attention, head-major Q and K, grouped-query and
// multi-query attention — the device program runs one attention kernel per
// layer's attention and its outputs match ONNX Runtime's in the committed
// test data sets, the CPU program's, and the device program without fusion.
// Decode through CUDA graphs per past bucket replays exactly what direct
// runs compute. Head dims past the kernel's shared memory stay unfused on
// the device (two GEMMs and a softmax), while the CPU fuses them.
#include <algorithm>
#include <cstring>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "examples/models/bert.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/session.h"
#include "tests/graph/imported_model_util.h"
#include "tests/runtime/e2e_util.h"
#include "tests/support/cuda/emulated_device.h"

namespace shapeshift::runtime {
namespace {

using ::shapeshift::testing::TensorsClose;

struct Case {
  const char* dir;
  int attentions;  // fused steps per request
};

CompileOptions Emulated(bool fuse_attention) {
  CompileOptions options;
  options.device = Device::kCuda;
  options.cuda.device = std::make_shared<codegen::cuda::testing::EmulatedDevice>(
      codegen::cuda::testing::EmulatedDeviceOptions{.reverse_threads = true});
  options.fuse_attention = fuse_attention;
  return options;
}

class DeviceAttentionTest : public ::testing::TestWithParam<Case> {};

TEST_P(DeviceAttentionTest, OneKernelPerAttentionMatchingOnnxRuntimeTheCpuAndTheUnfusedDevice) {
  const std::string dir = GetParam().dir;
  const std::string path = shapeshift::testing::ExportPath(dir);
  absl::StatusOr<std::unique_ptr<Session>> fused = Session::Create(ModelSource::OnnxFile(path), Emulated(true));
  ASSERT_TRUE(fused.ok()) << fused.status();
  absl::StatusOr<std::unique_ptr<Session>> unfused = Session::Create(ModelSource::OnnxFile(path), Emulated(false));
  ASSERT_TRUE(unfused.ok()) << unfused.status();
  absl::StatusOr<std::unique_ptr<Session>> cpu = Session::Create(ModelSource::OnnxFile(path), CompileOptions{});
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  EXPECT_EQ((*fused)->stats().program.device, "cuda");
  EXPECT_EQ((*fused)->stats().program.attention_calls, GetParam().attentions);
  EXPECT_EQ((*unfused)->stats().program.attention_calls, 0);
  EXPECT_EQ((*cpu)->stats().program.attention_calls, GetParam().attentions);
  // Per attention: two cuBLASLt GEMMs fewer.
  EXPECT_EQ((*fused)->stats().program.gemm_calls, (*unfused)->stats().program.gemm_calls - 2 * GetParam().attentions);
  int sets = 0;
  for (int set = 0; set < 4; ++set) {
    const std::string set_dir = absl::StrCat(SHAPESHIFT_SOURCE_DIR, "/tests/data/models/", dir, "/test_data_set_", set, "/");
    std::vector<Tensor> in = shapeshift::testing::ReadNumbered(set_dir, "input");
    if (in.empty()) continue;  // not every export has every set
    ++sets;
    SCOPED_TRACE(absl::StrCat(dir, " test_data_set_", set));
    std::vector<Tensor> ort = shapeshift::testing::ReadNumbered(set_dir, "output");
    absl::StatusOr<std::vector<Tensor>> got = (*fused)->Run(in);
    absl::StatusOr<std::vector<Tensor>> plain = (*unfused)->Run(in);
    absl::StatusOr<std::vector<Tensor>> host = (*cpu)->Run(in);
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_TRUE(plain.ok()) << plain.status();
    ASSERT_TRUE(host.ok()) << host.status();
    ASSERT_EQ(got->size(), ort.size());
    for (size_t o = 0; o < got->size(); ++o) {
      EXPECT_TRUE(TensorsClose((*got)[o], ort[o], 1e-4, 1e-4)) << "output " << o << " vs ONNX Runtime";
      EXPECT_TRUE(TensorsClose((*got)[o], (*host)[o], 1e-4, 1e-4)) << "output " << o << " vs the CPU program";
      EXPECT_TRUE(TensorsClose((*got)[o], (*plain)[o], 1e-4, 1e-4)) << "output " << o << " vs the unfused device";
    }
  }
  EXPECT_GE(sets, 3);
  EXPECT_EQ((*fused)->stats().compiles, 1);
}

INSTANTIATE_TEST_SUITE_P(Exports, DeviceAttentionTest,
                         ::testing::Values(Case{"bert-base-torchscript", 2}, Case{"gpt2-dynamo", 2},
                                           Case{"bart-torchscript", 6}, Case{"gpt-neox-torchscript", 2},
                                           Case{"llama-dynamo", 2}, Case{"falcon-torchscript", 2},
                                           Case{"llama-past-dynamo", 2}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           std::string name = info.param.dir;
                           for (char& c : name) c = c == '-' ? '_' : c;
                           return name;
                         });

// Greedy decode from an empty cache through CUDA graphs bucketed by the
// past: the attention kernel reads the presents, whose allocations are the
// bucket's largest while its dims are the request's. Every step's logits are
// the direct device run's bit for bit and the CPU program's within 1e-4.
class DeviceAttentionDecodeTest : public ::testing::TestWithParam<const char*> {};

TEST_P(DeviceAttentionDecodeTest, GraphReplaysPerPastBucketComputeWhatDirectRunsDo) {
  const std::string path = shapeshift::testing::ExportPath(GetParam());
  auto open = [&](CompileOptions options, bool graphs) -> std::unique_ptr<Session> {
    options.dims = {{"batch", {1, 4}}, {"sequence", {1, 64}}, {"past_sequence", {0, 128}}};
    options.cuda.graphs = graphs;
    absl::StatusOr<std::unique_ptr<Session>> s = Session::Create(ModelSource::OnnxFile(path), options);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? *std::move(s) : nullptr;
  };
  std::unique_ptr<Session> graphs = open(Emulated(true), true);
  std::unique_ptr<Session> direct = open(Emulated(true), false);
  std::unique_ptr<Session> cpu = open(CompileOptions{}, false);
  ASSERT_NE(graphs, nullptr);
  ASSERT_NE(direct, nullptr);
  ASSERT_NE(cpu, nullptr);
  EXPECT_EQ(graphs->stats().program.attention_calls, 2);
  EXPECT_THAT(graphs->program()->device_report(), ::testing::HasSubstr("bucketed by past_sequence"));
  const std::vector<SymExpr>& past = graphs->graph().inputs()[2]->type().shape;  // [batch, kv heads, past, head dim]
  ASSERT_TRUE(past[1].IsConst() && past[3].IsConst());
  const std::vector<int64_t> empty = {1, *past[1].AsConst(), 0, *past[3].AsConst()};
  std::vector<Tensor> caches;
  for (int i = 0; i < 4; ++i) caches.push_back(Tensor::FromVector(DType::kF32, empty, std::vector<float>{}));
  int64_t token = 7;
  for (int step = 0; step < 40; ++step) {
    SCOPED_TRACE(absl::StrCat("step ", step));
    std::vector<Tensor> in = {Tensor::FromVector(DType::kI64, {1, 1}, std::vector<int64_t>{token}),
                              Tensor::FromVector(DType::kI64, {1, step + 1}, std::vector<int64_t>(step + 1, 1))};
    for (const Tensor& t : caches) in.push_back(t);
    absl::StatusOr<std::vector<Tensor>> g = graphs->Run(in);
    absl::StatusOr<std::vector<Tensor>> d = direct->Run(in);
    absl::StatusOr<std::vector<Tensor>> c = cpu->Run(in);
    ASSERT_TRUE(g.ok()) << g.status();
    ASSERT_TRUE(d.ok()) << d.status();
    ASSERT_TRUE(c.ok()) << c.status();
    for (size_t o = 0; o < g->size(); ++o) {
      ASSERT_EQ(std::memcmp((*g)[o].raw(), (*d)[o].raw(), (*g)[o].byte_size()), 0) << "output " << o;
      ASSERT_TRUE(TensorsClose((*g)[o], (*c)[o], 1e-4, 1e-4)) << "output " << o;
    }
    const Tensor& logits = (*c)[0];
    const int64_t vocab = logits.shape().back();
    const float* last = logits.data<float>() + logits.num_elements() - vocab;
    token = std::max_element(last, last + vocab) - last;
    caches.assign(std::make_move_iterator(c->begin() + 1), std::make_move_iterator(c->end()));
  }
  DeviceStats s = *graphs->program()->device_stats();
  EXPECT_GE(s.graph_captures, 4);  // past buckets 2, 3..4, 5..8, 9..16, 17..32, 33..64
  EXPECT_GE(s.graph_replays, 20);
}

INSTANTIATE_TEST_SUITE_P(Exports, DeviceAttentionDecodeTest,
                         ::testing::Values("gpt2-past-dynamo", "llama-past-dynamo"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string name = info.param;
                           for (char& c : name) c = c == '-' ? '_' : c;
                           return name;
                         });

// Head dims past codegen::cuda::kAttentionMaxHeadDim: fusion leaves the
// device program's attentions as two GEMMs and a softmax (the same answer),
// while the CPU program fuses them.
TEST(DeviceAttentionHeadDimTest, HeadDimsPastTheKernelsLimitStayUnfusedOnTheDevice) {
  examples::BertConfig config;
  config.layers = 1;
  config.heads = 1;
  config.hidden = 264;  // one head of 264 > 256
  config.intermediate = 64;
  config.vocab = 100;
  config.max_position = 64;
  config.batch = {1, 2};
  config.seq = {1, 64};
  std::unique_ptr<Session> device = shapeshift::testing::BuiltSession(examples::BuildBert, config, Emulated(true));
  std::unique_ptr<Session> cpu = shapeshift::testing::BuiltSession(examples::BuildBert, config, {});
  ASSERT_NE(device, nullptr);
  ASSERT_NE(cpu, nullptr);
  EXPECT_EQ(device->stats().program.attention_calls, 0);
  EXPECT_EQ(cpu->stats().program.attention_calls, 1);
  std::vector<Tensor> in = examples::MakeBertInputs(config, 2, 19, 3, /*padded=*/true);
  absl::StatusOr<std::vector<Tensor>> got = device->Run(in);
  absl::StatusOr<std::vector<Tensor>> want = cpu->Run(in);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_TRUE(want.ok()) << want.status();
  EXPECT_TRUE(TensorsClose((*got)[0], (*want)[0], 1e-4, 1e-4));
}

}  // namespace
}  // namespace shapeshift::runtime
