// Values are DAGs (kernel_ir.h): the CUDA emitter writes each node read more
// than once as a local, once, so the text stays linear in the DAG (as a
// tree, SharedChainKernel(40) would be 2^40 terms). Checked on the text,
// through NVRTC (sm_80 and sm_90) where the toolkit is present, and under
// the host emulation against the same float computation.
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "codegen/cuda/cuda_emitter.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/codegen/test_util.h"
#include "tests/support/cuda/emulated_steps.h"

#ifdef SHAPESHIFT_HAVE_CUDA
#include "codegen/cuda/nvrtc_compiler.h"
#endif

namespace shapeshift::codegen::cuda {
namespace {

using ::shapeshift::codegen::testing::Close;
using ::shapeshift::codegen::testing::SharedChainKernel;
using ::shapeshift::codegen::testing::SharedChainReference;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr int kSteps = 40;

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// s = sum_j chain(x[p*n + j]), y[p] = chain(s / 10^4): a block-per-row
// kernel whose accumulated value and whose top-level store are DAGs.
Kernel SharedChainSumKernel(int steps) {
  Kernel k;
  k.name = "shared_chain_sum";
  BufferRef x = k.AddInput("x");
  BufferRef y = k.AddOutput("y");
  k.parallel_extent = k.AddDim("rows");
  SymExpr n = k.AddDim("n");
  SymExpr p = k.ParallelVar(), j = SymExpr::Symbol("j");
  auto chain = [&](Value v) {
    for (int i = 0; i < steps; ++i) v = v * v - v;
    return v;
  };
  k.body = {Accumulator("s", F32(0)),
            Loop("j", 0, n, {Accumulate("s", ReduceOp::kSum, chain(Load(x, p * n + j)))}),
            Let("m", chain(Var("s", ScalarType::kF32) * F32(1e-4))), Store(y, p, Var("m", ScalarType::kF32))};
  return k;
}

TEST(CudaEmitterDagTest, EachSharedNodeIsOneLocalAndTheTextIsLinearInTheDag) {
  absl::StatusOr<CudaKernelSource> empty = EmitCudaKernel(SharedChainKernel(0), "chain");
  absl::StatusOr<CudaKernelSource> k = EmitCudaKernel(SharedChainKernel(kSteps), "chain");
  ASSERT_TRUE(empty.ok() && k.ok()) << empty.status() << " " << k.status();
  const std::string& f = k->function;
  EXPECT_EQ(k->mapping, ThreadMapping::kThreadPerIteration);
  // Every v_k but the last is read three times (v * v - v): one local each,
  // defined once, the first being the load.
  EXPECT_EQ(Count(f, "const float t"), static_cast<size_t>(kSteps)) << f;
  EXPECT_THAT(f, HasSubstr("const float t0 = buf0[i_p];"));
  EXPECT_THAT(f, HasSubstr("const float t1 = ((t0 * t0) - t0);"));
  EXPECT_THAT(f, HasSubstr(absl::StrCat("buf1[i_p] = ((t", kSteps - 1, " * t", kSteps - 1, ") - t", kSteps - 1, ");")));
  // Operands before their readers.
  for (int i = 1; i < kSteps; ++i) {
    EXPECT_LT(f.find(absl::StrCat("const float t", i - 1, " = ")), f.find(absl::StrCat("const float t", i, " = ")));
  }
  EXPECT_EQ(Count(f, "buf0["), 1u) << "the load is one evaluation";
  // Linear: a constant number of characters per step over the empty chain.
  EXPECT_LT(f.size(), empty->function.size() + 64 * kSteps) << f;
  EXPECT_GT(f.size(), empty->function.size() + 16 * kSteps) << f;

  // A value without sharing is the tree it always was.
  Kernel tree = SharedChainKernel(0);
  tree.body = {Store(BufferRef{1, ScalarType::kF32}, tree.ParallelVar(),
                     Load(BufferRef{0, ScalarType::kF32}, tree.ParallelVar()) * F32(2) + F32(1))};
  absl::StatusOr<CudaKernelSource> plain = EmitCudaKernel(tree, "tree");
  ASSERT_TRUE(plain.ok());
  EXPECT_THAT(plain->function, HasSubstr("buf1[i_p] = ((buf0[i_p] * 0x1p+1f) + 0x1p+0f);"));
  EXPECT_THAT(plain->function, Not(HasSubstr("const float t")));
}

TEST(CudaEmitterDagTest, LocalsStayInsideTheirPhaseInABlockPerRowKernel) {
  absl::StatusOr<CudaKernelSource> k = EmitCudaKernel(SharedChainSumKernel(kSteps), "chain_sum");
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(k->mapping, ThreadMapping::kBlockPerRow);
  // Two chains (the accumulated value and the let) of kSteps locals each,
  // numbered through the kernel so no two locals of a scope share a name.
  EXPECT_EQ(Count(k->function, "const float t"), static_cast<size_t>(2 * kSteps)) << k->function;
  EXPECT_THAT(k->function, HasSubstr(absl::StrCat("const float t", 2 * kSteps - 1, " = ")));
  EXPECT_LT(k->function.size(), 200 * static_cast<size_t>(kSteps));
}

#ifdef SHAPESHIFT_HAVE_CUDA
TEST(CudaEmitterDagTest, NvrtcCompilesTheLinearTextForSm80AndSm90) {
  for (const Kernel& kernel : {SharedChainKernel(kSteps), SharedChainSumKernel(kSteps)}) {
    absl::StatusOr<std::string> source = EmitCudaSource(kernel, kernel.name);
    ASSERT_TRUE(source.ok()) << source.status();
    for (const char* arch : {"sm_80", "sm_90"}) {
      absl::StatusOr<Cubin> cubin = CompileToCubin(*source, kernel.name, arch);
      ASSERT_TRUE(cubin.ok()) << kernel.name << " " << arch << ": " << cubin.status();
      ASSERT_EQ(cubin->reports.size(), 1u) << cubin->log;
      EXPECT_EQ(cubin->reports[0].entry, kernel.name);
      EXPECT_EQ(cubin->reports[0].spill_store_bytes, 0) << cubin->reports[0].ToString();
    }
  }
}
#endif

const std::vector<int64_t> kLengths = {0, 1, 7, 17, 33, 97, 257, 513};

std::vector<testing::EmulatedRunOptions> RunVariants() {
  return {{}, {.reverse = true}, {.block_override = 32}, {.reverse = true, .block_override = 64}};
}

TEST(CudaEmitterDagTest, TheSharedChainMatchesTheFloatReferenceUnderEmulation) {
  const Kernel kernel = SharedChainKernel(kSteps);
  for (int64_t n : kLengths) {
    std::vector<float> x(n);
    for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(i % 101) / 100.0f - 0.5f;  // stays in [-0.25, 0.75]
    for (const testing::EmulatedRunOptions& o : RunVariants()) {
      SCOPED_TRACE(absl::StrCat("n=", n, o.reverse ? " reversed" : " forward", " block ", o.block_override));
      std::vector<float> y(n, -7.0f);
      ASSERT_TRUE(testing::RunKernelEmulated(kernel, {x.data(), y.data()}, {n}, o).ok());
      for (int64_t i = 0; i < n; ++i) {
        const float want = SharedChainReference(kSteps, x[i]);
        ASSERT_TRUE(Close(y[i], want, 1e-4, 1e-5)) << "x=" << x[i] << " got " << y[i] << " want " << want;
      }
    }
  }
}

TEST(CudaEmitterDagTest, TheBlockPerRowChainMatchesTheFloatReferenceUnderEmulation) {
  const Kernel kernel = SharedChainSumKernel(kSteps);
  const int64_t rows = 3;
  for (int64_t n : kLengths) {
    std::vector<float> x(rows * n);
    for (int64_t i = 0; i < rows * n; ++i) x[i] = static_cast<float>(i % 89) / 100.0f - 0.4f;
    std::vector<double> want(rows);
    for (int64_t r = 0; r < rows; ++r) {
      double sum = 0;
      for (int64_t j = 0; j < n; ++j) sum += SharedChainReference(kSteps, x[r * n + j]);
      want[r] = SharedChainReference(kSteps, static_cast<float>(sum) * 1e-4f);
    }
    for (const testing::EmulatedRunOptions& o : RunVariants()) {
      SCOPED_TRACE(absl::StrCat("n=", n, o.reverse ? " reversed" : " forward", " block ", o.block_override));
      std::vector<float> y(rows, -7.0f);
      ASSERT_TRUE(testing::RunKernelEmulated(kernel, {x.data(), y.data()}, {rows, n}, o).ok());
      for (int64_t r = 0; r < rows; ++r) {
        // The sum's order differs (a tree over threads); the chain is
        // contractive near its fixed points, so the results stay close.
        ASSERT_TRUE(Close(y[r], want[r], 1e-3, 1e-4)) << "row " << r << ": " << y[r] << " vs " << want[r];
      }
    }
  }
}

}  // namespace
}  // namespace shapeshift::codegen::cuda
