// On a real GPU (scripts/gpu-check.sh; not in ctest unless
// SHAPESHIFT_GPU_TESTS=ON): the device opens; the library kernels on the GPU
// agree with their host emulation at odd lengths; BERT and GPT-2 (KV cache)
// Device::kCuda programs agree with the CPU program, with and without CUDA
// graphs; every kernel of a program compiles without spills; copies per
// request are only the edges; the fused attention kernel on torch exports
// agrees with ONNX Runtime.
#include <memory>
#include <random>
#include <vector>

#include "codegen/cuda/device_api.h"
#include "codegen/kernel_library.h"
#include "examples/models/bert.h"
#include "examples/models/gpt2.h"
#include "gtest/gtest.h"
#include "runtime/session.h"
#include "tests/codegen/test_util.h"
#include "tests/graph/imported_model_util.h"
#include "tests/runtime/e2e_util.h"
#include "tests/support/cuda/emulated_steps.h"

namespace shapeshift {
namespace {

namespace cuda = codegen::cuda;
using ::shapeshift::testing::TensorsClose;

std::shared_ptr<cuda::DeviceApi> Gpu() {
  static std::shared_ptr<cuda::DeviceApi>* gpu = [] {
    absl::StatusOr<std::shared_ptr<cuda::DeviceApi>> d = cuda::OpenCudaDevice();
    EXPECT_TRUE(d.ok()) << d.status();
    return new std::shared_ptr<cuda::DeviceApi>(d.ok() ? *d : nullptr);
  }();
  return *gpu;
}

TEST(GpuTest, DeviceOpensAndDescribesItself) {
  ASSERT_NE(Gpu(), nullptr);
  std::cout << "device: " << Gpu()->info().Describe() << "\n";
  EXPECT_GE(Gpu()->info().compute_capability, 70);
}

// One kernel on the GPU through the DeviceApi, buffers copied in and out.
std::vector<std::vector<float>> RunOnGpu(const codegen::Kernel& kernel, std::vector<std::vector<float>> buffers,
                                         const std::vector<int64_t>& dims) {
  cuda::DeviceApi& api = *Gpu();
  auto source = cuda::EmitCudaKernel(kernel, "k");
  EXPECT_TRUE(source.ok());
  auto module = api.LoadModule(cuda::CudaPrelude() + source->function, kernel.name);
  EXPECT_TRUE(module.ok()) << module.status();
  for (const cuda::PtxasReport& r : (*module)->reports()) {
    EXPECT_EQ(r.spill_store_bytes, 0) << r.ToString();
  }
  cuda::StreamHandle stream = *api.CreateStream();
  std::vector<cuda::DevicePtr> ptrs;
  for (const auto& b : buffers) {
    cuda::DevicePtr p = *api.Allocate(b.size() * 4);
    EXPECT_TRUE(api.CopyToDevice(p, b.data(), b.size() * 4, stream).ok());
    ptrs.push_back(p);
  }
  cuda::DevicePtr params = *api.Allocate(8 * (ptrs.size() + dims.size()));
  std::vector<uint64_t> words(ptrs.begin(), ptrs.end());
  for (int64_t d : dims) words.push_back(static_cast<uint64_t>(d));
  EXPECT_TRUE(api.CopyToDevice(params, words.data(), words.size() * 8, stream).ok());
  codegen::Kernel k = kernel;
  Assignment a;
  for (size_t i = 0; i < k.dims.size(); ++i) a[k.dims[i]] = dims[i];
  cuda::LaunchShape shape =
      cuda::ChooseLaunch(source->mapping, source->work.Evaluate(a).value(), source->row_length.Evaluate(a).value());
  EXPECT_TRUE(api.Launch(**module, *(*module)->Function("k"), shape, stream, params, params + 8 * ptrs.size()).ok());
  for (size_t i = 0; i < buffers.size(); ++i) {
    EXPECT_TRUE(api.CopyToHost(buffers[i].data(), ptrs[i], buffers[i].size() * 4, stream).ok());
  }
  EXPECT_TRUE(api.Synchronize(stream).ok());
  for (cuda::DevicePtr p : ptrs) api.Free(p);
  api.Free(params);
  api.DestroyStream(stream);
  return buffers;
}

TEST(GpuTest, LibraryKernelsMatchTheirHostEmulationAtOddLengths) {
  ASSERT_NE(Gpu(), nullptr);
  for (int64_t n : {1, 7, 17, 33, 97, 511, 513, 4097}) {
    SCOPED_TRACE(n);
    const int64_t rows = 6;
    std::vector<float> x = codegen::testing::RandomFloats(rows * n, 1, 3.0f);
    std::vector<float> gamma = codegen::testing::RandomFloats(n, 2), beta = codegen::testing::RandomFloats(n, 3);
    std::vector<float> mask(rows / 3 * n, 0.0f);
    struct Case {
      codegen::Kernel kernel;
      std::vector<std::vector<float>> buffers;
      std::vector<int64_t> dims;
    };
    for (Case c : {Case{codegen::SoftmaxKernel(0.125f), {x, mask, std::vector<float>(rows * n)}, {rows, n, 3}},
                   Case{codegen::LayerNormKernel(1e-5f), {x, gamma, beta, std::vector<float>(rows * n)}, {rows, n}},
                   Case{codegen::BiasGeluKernel(codegen::GeluForm::kErf), {x, gamma, std::vector<float>(rows * n)},
                        {rows, n}}}) {
      std::vector<std::vector<float>> gpu = RunOnGpu(c.kernel, c.buffers, c.dims);
      std::vector<void*> host;
      for (auto& b : c.buffers) host.push_back(b.data());
      ASSERT_TRUE(cuda::testing::RunKernelEmulated(c.kernel, host, c.dims).ok());
      const std::vector<float>& want = c.buffers.back();
      const std::vector<float>& got = gpu.back();
      for (size_t i = 0; i < want.size(); ++i) {
        ASSERT_TRUE(codegen::testing::Close(got[i], want[i], 1e-5, 1e-6)) << c.kernel.name << " " << i;
      }
    }
  }
}

runtime::CompileOptions OnGpu(bool graphs, std::string graph_symbol = "") {
  runtime::CompileOptions options;
  options.device = runtime::Device::kCuda;
  options.cuda.device = Gpu();
  options.cuda.graphs = graphs;
  options.cuda.graph_symbol = std::move(graph_symbol);
  return options;
}

template <typename Config, typename Build>
std::unique_ptr<runtime::Session> Make(const Config& config, Build build, const runtime::CompileOptions& options) {
  absl::StatusOr<ImportedModel> model = build(config);
  EXPECT_TRUE(model.ok()) << model.status();
  auto session = runtime::Session::Create(runtime::ModelSource::Built(std::move(model->graph), std::move(model->env)),
                                          options);
  EXPECT_TRUE(session.ok()) << session.status();
  return session.ok() ? *std::move(session) : nullptr;
}

TEST(GpuTest, BertOnTheGpuMatchesTheCpuWithAndWithoutGraphs) {
  ASSERT_NE(Gpu(), nullptr);
  examples::BertConfig config;  // builtin:bert
  auto gpu = Make(config, examples::BuildBert, OnGpu(true));
  auto direct = Make(config, examples::BuildBert, OnGpu(false));
  auto cpu = Make(config, examples::BuildBert, {});
  ASSERT_NE(gpu, nullptr);
  for (const runtime::DeviceStats& s : {*gpu->program()->device_stats()}) {
    for (const cuda::PtxasReport& r : s.ptxas) EXPECT_EQ(r.spill_store_bytes, 0) << r.ToString();
  }
  std::mt19937_64 rng(1);
  for (int i = 0; i < 60; ++i) {
    int64_t batch = 1 + i % 3, seq = i < 8 ? 100 + i : std::uniform_int_distribution<int64_t>(1, 512)(rng);
    SCOPED_TRACE(absl::StrCat(batch, "x", seq));
    std::vector<Tensor> in = examples::MakeBertInputs(config, batch, seq, i, /*padded=*/true);
    auto g = gpu->Run(in);
    auto d = direct->Run(in);
    auto c = cpu->Run(in);
    ASSERT_TRUE(g.ok()) << g.status();
    ASSERT_TRUE(d.ok()) << d.status();
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_TRUE(TensorsClose((*g)[0], (*c)[0], 1e-3, 1e-3));
    EXPECT_TRUE(TensorsClose((*g)[0], (*d)[0], 1e-4, 1e-4));
  }
  runtime::DeviceStats s = *gpu->program()->device_stats();
  std::cout << gpu->program()->device_report();
  EXPECT_GT(s.graph_replays, 0);
  EXPECT_EQ(s.device_to_host_copies, 2 * s.requests);
}

TEST(GpuTest, Gpt2DecodeOnTheGpuMatchesTheCpu) {
  ASSERT_NE(Gpu(), nullptr);
  examples::Gpt2Config config;
  config.kv_cache = true;  // builtin:gpt2-kv
  // seq and past have equally wide ranges here; decode steps vary past.
  auto gpu = Make(config, examples::BuildGpt2, OnGpu(true, "past"));
  auto cpu = Make(config, examples::BuildGpt2, {});
  ASSERT_NE(gpu, nullptr);
  for (int64_t past = 0; past < 70; past += 3) {
    for (int64_t batch : {1, 4}) {
      SCOPED_TRACE(absl::StrCat(batch, " past ", past));
      std::vector<Tensor> in = examples::MakeGpt2Inputs(config, batch, 1, past, past);
      auto g = gpu->Run(in);
      auto c = cpu->Run(in);
      ASSERT_TRUE(g.ok()) << g.status();
      ASSERT_TRUE(c.ok()) << c.status();
      for (size_t o = 0; o < g->size(); ++o) EXPECT_TRUE(TensorsClose((*g)[o], (*c)[o], 1e-3, 1e-3)) << o;
    }
  }
  std::cout << gpu->program()->device_report();
  EXPECT_GT(gpu->program()->device_stats()->graph_replays, 0);
}

// The fused attention kernel on the GPU (codegen/cuda/attention_kernel.h):
// one per layer's attention of encoder, causal, grouped-query and
// with-past exports, outputs against ONNX Runtime's in the committed test
// data sets.
TEST(GpuTest, FusedAttentionExportsMatchOnnxRuntime) {
  ASSERT_NE(Gpu(), nullptr);
  for (const char* dir : {"bert-base-torchscript", "gpt2-dynamo", "bart-torchscript", "llama-dynamo",
                          "llama-past-dynamo", "gpt2-past-dynamo"}) {
    SCOPED_TRACE(dir);
    auto session = runtime::Session::Create(
        runtime::ModelSource::OnnxFile(absl::StrCat(SHAPESHIFT_SOURCE_DIR, "/tests/data/models/", dir, "/model.onnx")),
        OnGpu(true));
    ASSERT_TRUE(session.ok()) << session.status();
    EXPECT_GE((*session)->stats().program.attention_calls, 2);
    for (int set = 0; set < 4; ++set) {
      const std::string set_dir = absl::StrCat(SHAPESHIFT_SOURCE_DIR, "/tests/data/models/", dir, "/test_data_set_", set, "/");
      std::vector<Tensor> in = testing::ReadNumbered(set_dir, "input");
      if (in.empty()) continue;
      std::vector<Tensor> want = testing::ReadNumbered(set_dir, "output");
      auto got = (*session)->Run(in);
      ASSERT_TRUE(got.ok()) << got.status();
      ASSERT_EQ(got->size(), want.size());
      for (size_t o = 0; o < got->size(); ++o) EXPECT_TRUE(TensorsClose((*got)[o], want[o], 1e-3, 1e-3)) << set << "/" << o;
    }
  }
}

}  // namespace
}  // namespace shapeshift
