// The CUDA C text the emitter produces: signature, dims and buffers, the
// thread mapping each kernel shape gets, literals and types. What the code
// computes is checked under the host emulation (cuda_emulation_test.cc,
// kernel_kinds_test.cc) and by NVRTC (nvrtc_test.cc).
#include "codegen/cuda/cuda_emitter.h"

#include <limits>

#include "codegen/kernel_library.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace shapeshift::codegen::cuda {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(CudaEmitterTest, SoftmaxIsOneBlockPerRowWithTreeReductions) {
  auto k = EmitCudaKernel(SoftmaxKernel(0.125f), "softmax_entry");
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(k->mapping, ThreadMapping::kBlockPerRow);
  EXPECT_EQ(k->work, SymExpr::Symbol("rows"));
  EXPECT_EQ(k->row_length, Max(SymExpr::Symbol("n"), 0));
  const std::string& f = k->function;
  EXPECT_THAT(f, HasSubstr("extern \"C\" __global__ void __launch_bounds__(256) softmax_entry(void* const* buffers, "
                           "const long long* dims)"));
  EXPECT_THAT(f, HasSubstr("const long long d_rows = dims[0];"));
  EXPECT_THAT(f, HasSubstr("const long long d_group = dims[2];"));
  EXPECT_THAT(f, HasSubstr("const float* __restrict__ buf0 = (const float*)buffers[0];"));
  EXPECT_THAT(f, HasSubstr("float* __restrict__ buf2 = (float*)buffers[2];"));
  // Rows are grid-strided by block; each loop is strided by thread.
  EXPECT_THAT(f, HasSubstr("for (long long i_p = blockIdx.x; i_p < extent; i_p += gridDim.x)"));
  EXPECT_THAT(f, HasSubstr("i_j = (0LL) + (long long)threadIdx.x; i_j < d_n; i_j += (long long)blockDim.x"));
  EXPECT_THAT(f, HasSubstr("SS_PRIVATE(float, r_row_max);"));
  EXPECT_THAT(f, HasSubstr("__shared__ float ss_red_row_max[SS_MAX_BLOCK];"));
  EXPECT_THAT(f, HasSubstr("SS_P(r_row_max__part) = __int_as_float(0xff800000);"));
  EXPECT_THAT(f, HasSubstr("SS_P(r_row_max__part) = ss_fmax(SS_P(r_row_max__part), "));
  EXPECT_THAT(f, HasSubstr("ss_red_row_sum[threadIdx.x] = (ss_red_row_sum[threadIdx.x] + ss_red_row_sum[threadIdx.x + ss_s]);"));
  EXPECT_THAT(f, HasSubstr("} SS_SYNC"));
  EXPECT_THAT(f, HasSubstr("ss_floordiv(i_p, d_group)"));
  EXPECT_THAT(f, HasSubstr("expf("));
  EXPECT_THAT(f, Not(HasSubstr("__syncthreads")));  // only through SS_SYNC, which the emulation splits at
}

TEST(CudaEmitterTest, MappingFollowsTheKernelsShape) {
  EXPECT_EQ(EmitCudaKernel(LayerNormKernel(1e-5f), "ln")->mapping, ThreadMapping::kBlockPerRow);
  EXPECT_EQ(EmitCudaKernel(BiasGeluKernel(GeluForm::kErf), "g")->mapping, ThreadMapping::kFlat);
  EXPECT_EQ(EmitCudaKernel(BiasResidualKernel(), "r")->mapping, ThreadMapping::kFlat);
  auto t = EmitCudaKernel(Transpose0213Kernel(), "t");
  EXPECT_EQ(t->mapping, ThreadMapping::kFlat);
  // Flat work is every (row, element) pair.
  EXPECT_EQ(t->work, SymExpr::Symbol("a") * SymExpr::Symbol("c") * SymExpr::Symbol("b") * Max(SymExpr::Symbol("d"), 0));
  EXPECT_THAT(t->function, HasSubstr("const long long i_p = ss_t / ss_len;"));

  // A loop that reads the accumulator it reduces is sequential: one thread
  // per row keeps its meaning.
  Kernel prefix;
  prefix.name = "prefix";
  BufferRef x = prefix.AddInput("x");
  BufferRef y = prefix.AddOutput("y");
  SymExpr rows = prefix.AddDim("rows"), n = prefix.AddDim("n");
  prefix.parallel_extent = rows;
  SymExpr p = prefix.ParallelVar(), j = SymExpr::Symbol("j");
  prefix.body = {Accumulator("s", F32(0)), Loop("j", 0, n, {Accumulate("s", ReduceOp::kSum, Load(x, p * n + j)),
                                                            Store(y, p * n + j, Var("s", ScalarType::kF32))})};
  auto seq = EmitCudaKernel(prefix, "prefix");
  ASSERT_TRUE(seq.ok()) << seq.status();
  EXPECT_EQ(seq->mapping, ThreadMapping::kThreadPerIteration);
  EXPECT_THAT(seq->function, HasSubstr("i_p += (long long)gridDim.x * blockDim.x"));
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
  EXPECT_THAT(*source, HasSubstr("#define SS_MAX_BLOCK 256"));  // the prelude
  EXPECT_THAT(*source, HasSubstr("const unsigned char* __restrict__ buf0"));
  EXPECT_THAT(*source, HasSubstr("buf1[i_p] = (unsigned char)(((buf0[i_p] != 0) != (0x1p-1f != 0.0f)));"));
  EXPECT_THAT(*source, HasSubstr("(-9223372036854775807LL - 1)"));
  EXPECT_THAT(*source, HasSubstr("((long long)0x1.4p+1f)"));
}

// An IR operation the emitter has no CUDA text for (one added to
// kernel_ir.h before the emitter learns it) refuses the kernel, naming the
// operation: never a kernel that silently computes something else.
TEST(CudaEmitterTest, AnOperationWithoutCudaTextRefusesTheKernel) {
  auto kernel = [](Value v) {
    Kernel k;
    k.name = "future_op";
    BufferRef x = k.AddInput("x");
    BufferRef y = k.AddOutput("y");
    SymExpr n = k.AddDim("n");
    k.parallel_extent = n;
    SymExpr p = k.ParallelVar();
    k.body = {Store(y, p, v ? v : Load(x, p))};
    return std::pair{k, x};
  };
  auto [plain, x] = kernel(nullptr);
  ASSERT_TRUE(EmitCudaKernel(plain, "ok").ok());
  const SymExpr p = SymExpr::Symbol(plain.parallel_var);
  for (auto [v, what] : {std::pair{Unary(static_cast<UnaryOp>(200), Load(x, p)), "unary op #200"},
                         {Binary(static_cast<BinaryOp>(201), Load(x, p), F32(1)), "binary op #201"}}) {
    absl::StatusOr<CudaKernelSource> emitted = EmitCudaKernel(kernel(v).first, "future");
    ASSERT_FALSE(emitted.ok()) << emitted->function;
    EXPECT_EQ(emitted.status().code(), absl::StatusCode::kUnimplemented);
    EXPECT_THAT(std::string(emitted.status().message()), HasSubstr("kernel 'future_op'"));
    EXPECT_THAT(std::string(emitted.status().message()), HasSubstr(what));
  }
}

TEST(CudaEmitterTest, InvalidKernelIsAnError) {
  Kernel k;
  k.name = "broken";
  BufferRef y = k.AddOutput("y");
  k.body = {Store(y, SymExpr::Symbol("nowhere"), F32(1))};
  EXPECT_EQ(EmitCudaSource(k, "broken").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(CudaEmitterTest, LaunchShapes) {
  // Rows: a power-of-two block that covers the row, 32..256 threads.
  EXPECT_EQ(ChooseLaunch(ThreadMapping::kBlockPerRow, 10, 1).block, 32u);
  EXPECT_EQ(ChooseLaunch(ThreadMapping::kBlockPerRow, 10, 97).block, 128u);
  EXPECT_EQ(ChooseLaunch(ThreadMapping::kBlockPerRow, 10, 768).block, 256u);
  EXPECT_EQ(ChooseLaunch(ThreadMapping::kBlockPerRow, 10, 768).grid, 10u);
  // Never an empty grid, never more than kMaxGridBlocks.
  EXPECT_EQ(ChooseLaunch(ThreadMapping::kBlockPerRow, 0, 0).grid, 1u);
  EXPECT_EQ(ChooseLaunch(ThreadMapping::kFlat, 0, 1).grid, 1u);
  EXPECT_EQ(ChooseLaunch(ThreadMapping::kFlat, 257, 1).grid, 2u);
  EXPECT_EQ(ChooseLaunch(ThreadMapping::kFlat, int64_t{1} << 40, 1).grid, static_cast<uint32_t>(kMaxGridBlocks));
}

}  // namespace
}  // namespace shapeshift::codegen::cuda
