#include "codegen/cuda/cuda_emitter.h"

#include <limits>

#include "codegen/kernel_library.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/codegen/test_util.h"

#ifdef SHAPESHIFT_HAVE_CUDA
#include "codegen/cuda/nvrtc_compiler.h"
#endif

namespace shapeshift::codegen::cuda {
namespace {

using ::testing::HasSubstr;

std::vector<Kernel> AllLibraryKernels() {
  return {SoftmaxKernel(0.125f), LayerNormKernel(1e-12f), BiasGeluKernel(GeluForm::kErf),
          BiasGeluKernel(GeluForm::kTanh), BiasResidualKernel(), Transpose0213Kernel()};
}

TEST(CudaEmitterTest, SoftmaxSourceHasEntryDimsBuffersAndGridStrideLoop) {
  auto source = EmitCudaSource(SoftmaxKernel(0.125f), "softmax_entry");
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_THAT(*source, HasSubstr("extern \"C\" __global__ void softmax_entry(void* const* buffers, const long long* dims)"));
  EXPECT_THAT(*source, HasSubstr("const long long d_rows = dims[0];"));
  EXPECT_THAT(*source, HasSubstr("const long long d_group = dims[2];"));
  EXPECT_THAT(*source, HasSubstr("const float* __restrict__ buf0 = (const float*)buffers[0];"));
  EXPECT_THAT(*source, HasSubstr("float* __restrict__ buf2 = (float*)buffers[2];"));
  EXPECT_THAT(*source, HasSubstr("i_p += (long long)gridDim.x * blockDim.x"));
  EXPECT_THAT(*source, HasSubstr("float v_row_max = __int_as_float(0xff800000);"));
  EXPECT_THAT(*source, HasSubstr("v_row_max = ss_fmax(v_row_max, "));
  EXPECT_THAT(*source, HasSubstr("ss_floordiv(i_p, d_group)"));
  EXPECT_THAT(*source, HasSubstr("expf("));
}

TEST(CudaEmitterTest, TypesCastsAndBoolMemory) {
  Kernel k;
  k.name = "mixed";
  BufferRef keep = k.AddInput("keep", ScalarType::kBool);
  BufferRef out = k.AddOutput("out", ScalarType::kBool);
  BufferRef counts = k.AddOutput("counts", ScalarType::kI64);
  SymExpr n = k.AddDim("n");
  k.parallel_extent = n;
  SymExpr p = k.ParallelVar();
  k.body = {Store(out, p, Compare(CompareOp::kNe, Load(keep, p), Cast(ScalarType::kBool, F32(0.5)))),
            Store(counts, p, Select(Load(keep, p), I64(std::numeric_limits<int64_t>::min()), Cast(ScalarType::kI64, F32(2.5))))};
  auto source = EmitCudaSource(k, "mixed");
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_THAT(*source, HasSubstr("const unsigned char* __restrict__ buf0"));
  EXPECT_THAT(*source, HasSubstr("buf1[i_p] = (unsigned char)(((buf0[i_p] != 0) != (0x1p-1f != 0.0f)));"));
  EXPECT_THAT(*source, HasSubstr("(-9223372036854775807LL - 1)"));
  EXPECT_THAT(*source, HasSubstr("((long long)0x1.4p+1f)"));
}

// A value read twice becomes a local, not a copy: 60 steps of v*v - v
// would be 2^60 operations as one C expression.
TEST(CudaEmitterTest, ASharedSubexpressionIsDeclaredOnce) {
  auto source = EmitCudaSource(testing::SharedChainKernel(60), "shared_entry");
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_LT(source->size(), 20000u);
  EXPECT_THAT(*source, HasSubstr("const float s0 = ((buf0[i_p] * buf0[i_p]) - buf0[i_p]);"));
  EXPECT_THAT(*source, HasSubstr("const float s1 = ((s0 * s0) - s0);"));
  EXPECT_THAT(*source, HasSubstr("buf1[i_p] = ((s58 * s58) - s58);"));
}

TEST(CudaEmitterTest, InvalidKernelIsAnError) {
  Kernel k;
  k.name = "broken";
  BufferRef y = k.AddOutput("y");
  k.body = {Store(y, SymExpr::Symbol("nowhere"), F32(1))};
  EXPECT_EQ(EmitCudaSource(k, "broken").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(CudaEmitterTest, EveryLibraryKernelEmits) {
  for (const Kernel& k : AllLibraryKernels()) {
    auto source = EmitCudaSource(k, k.name);
    ASSERT_TRUE(source.ok()) << k.name << ": " << source.status();
    EXPECT_THAT(*source, HasSubstr("__global__ void " + k.name + "("));
  }
}

#ifdef SHAPESHIFT_HAVE_CUDA
// Only with the CUDA toolkit: NVRTC compiles every library kernel to PTX
// (no GPU is needed to compile).
TEST(NvrtcCompilerTest, LibraryKernelsCompileToPtx) {
  for (const Kernel& k : AllLibraryKernels()) {
    auto source = EmitCudaSource(k, k.name);
    ASSERT_TRUE(source.ok()) << source.status();
    auto ptx = CompileToPtx(*source, k.name);
    ASSERT_TRUE(ptx.ok()) << k.name << ": " << ptx.status() << "\n" << *source;
    EXPECT_THAT(*ptx, HasSubstr(".entry " + k.name));
    EXPECT_THAT(*ptx, HasSubstr(".target sm_90"));
  }
}

TEST(NvrtcCompilerTest, CompileErrorCarriesTheLog) {
  auto ptx = CompileToPtx("extern \"C\" __global__ void f() { undeclared_thing = 1; }", "bad_source");
  EXPECT_EQ(ptx.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(ptx.status().message()), HasSubstr("bad_source"));
  EXPECT_THAT(std::string(ptx.status().message()), HasSubstr("undeclared_thing"));
}
#endif

}  // namespace
}  // namespace shapeshift::codegen::cuda
