// NVRTC (with the CUDA toolkit): PTX and cubins, the compile error log, and
// the ptxas report parser (built everywhere). Every kernel kind is compiled
// to cubins in kernel_kinds_test.cc.
#include "codegen/cuda/ptxas_report.h"

#include "codegen/cuda/cuda_emitter.h"
#include "codegen/kernel_library.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#ifdef SHAPESHIFT_HAVE_CUDA
#include "codegen/cuda/nvrtc_compiler.h"
#endif

namespace shapeshift::codegen::cuda {
namespace {

using ::testing::HasSubstr;

TEST(PtxasReportTest, ParsesEveryEntryOfAnInfoLog) {
  const std::string log = R"(ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'softmax' for 'sm_90'
ptxas info    : Function properties for softmax
ptxas         .     16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers, 2048 bytes smem
ptxas info    : Compiling entry function 'copy' for 'sm_90'
ptxas info    : Function properties for copy
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 12 registers, 368 bytes cmem[0]
)";
  std::vector<PtxasReport> reports = ParsePtxasInfo(log);
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[0].entry, "softmax");
  EXPECT_EQ(reports[0].arch, "sm_90");
  EXPECT_EQ(reports[0].registers, 40);
  EXPECT_EQ(reports[0].barriers, 1);
  EXPECT_EQ(reports[0].shared_bytes, 2048);
  EXPECT_EQ(reports[0].stack_bytes, 16);
  EXPECT_EQ(reports[0].spill_store_bytes, 8);
  EXPECT_EQ(reports[0].spill_load_bytes, 4);
  EXPECT_EQ(reports[1].entry, "copy");
  EXPECT_EQ(reports[1].registers, 12);
  EXPECT_EQ(reports[1].shared_bytes, 0);
  EXPECT_EQ(reports[1].spill_store_bytes, 0);
  EXPECT_THAT(reports[0].ToString(), HasSubstr("softmax sm_90: 40 registers"));
  EXPECT_TRUE(ParsePtxasInfo("").empty());
}

#ifdef SHAPESHIFT_HAVE_CUDA
TEST(NvrtcCompilerTest, LibraryKernelsCompileToPtx) {
  for (const Kernel& k : {SoftmaxKernel(0.125f), LayerNormKernel(1e-12f), BiasGeluKernel(GeluForm::kErf),
                          BiasGeluKernel(GeluForm::kTanh), BiasResidualKernel(), Transpose0213Kernel()}) {
    auto source = EmitCudaSource(k, k.name);
    ASSERT_TRUE(source.ok()) << source.status();
    auto ptx = CompileToPtx(*source, k.name);
    ASSERT_TRUE(ptx.ok()) << k.name << ": " << ptx.status() << "\n" << *source;
    EXPECT_THAT(*ptx, HasSubstr(".entry " + k.name));
    EXPECT_THAT(*ptx, HasSubstr(".target sm_90"));
  }
}

TEST(NvrtcCompilerTest, CubinCarriesThePtxasReport) {
  auto source = EmitCudaSource(LayerNormKernel(1e-5f), "ln");
  ASSERT_TRUE(source.ok());
  auto cubin = CompileToCubin(*source, "ln", "sm_80");
  ASSERT_TRUE(cubin.ok()) << cubin.status();
  EXPECT_EQ(cubin->arch, "sm_80");
  ASSERT_EQ(cubin->reports.size(), 1u) << cubin->log;
  EXPECT_EQ(cubin->reports[0].entry, "ln");
  EXPECT_EQ(cubin->reports[0].barriers, 1);  // the tree's __syncthreads
  EXPECT_GT(cubin->reports[0].shared_bytes, 0);
  EXPECT_FALSE(CompileToCubin(*source, "ln", "sm_1").ok());
}

TEST(NvrtcCompilerTest, CompileErrorCarriesTheLog) {
  auto ptx = CompileToPtx("extern \"C\" __global__ void f() { undeclared_thing = 1; }", "bad_source");
  EXPECT_EQ(ptx.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(ptx.status().message()), HasSubstr("bad_source"));
  EXPECT_THAT(std::string(ptx.status().message()), HasSubstr("undeclared_thing"));
}

TEST(NvrtcCompilerTest, KnowsTheArchitecturesOfDataCenterGpus) {
  std::vector<std::string> archs = NvrtcRealArchitectures();
  EXPECT_THAT(archs, ::testing::Contains("sm_80"));
  EXPECT_THAT(archs, ::testing::Contains("sm_90"));
  EXPECT_THAT(NvrtcVersion(), ::testing::MatchesRegex("[0-9]+\\.[0-9]+"));
}
#endif

}  // namespace
}  // namespace shapeshift::codegen::cuda
