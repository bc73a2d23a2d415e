#include "codegen/cpu/cpu_backend.h"

#include <cmath>
#include <iostream>
#include <limits>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "codegen/cpu/kernel_cache.h"
#include "codegen/cpu/parallel_run.h"
#include "codegen/kernel_library.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/codegen/backend_variants.h"
#include "tests/codegen/test_util.h"

namespace shapeshift::codegen::cpu {
namespace {

using ::shapeshift::codegen::testing::Close;
using ::shapeshift::codegen::testing::RandomFloats;
using ::testing::HasSubstr;

// Lengths around the vector width and a few primes: every remainder path.
const std::vector<int64_t> kLengths = {0, 1, 2, 7, 15, 16, 17, 31, 33, 97, 511, 512, 513};

// Every test runs with the host's widest vectors (with masked and with scalar
// remainders), 4 lanes, and scalar code.
class CpuBackendTest : public ::testing::TestWithParam<CpuBackendOptions> {
 protected:
  void SetUp() override {
    auto backend = CpuBackend::Create(GetParam());
    ASSERT_TRUE(backend.ok()) << backend.status();
    backend_ = std::move(*backend);
  }

  std::shared_ptr<const CompiledKernel> MustCompile(const Kernel& kernel) {
    auto compiled = backend_->Compile(kernel);
    EXPECT_TRUE(compiled.ok()) << compiled.status();
    return compiled.ok() ? *compiled : nullptr;
  }

  std::unique_ptr<CpuBackend> backend_;
};

TEST_P(CpuBackendTest, SoftmaxWithMaskMatchesReference) {
  const float scale = 0.125f;
  auto kernel = MustCompile(SoftmaxKernel(scale));
  ASSERT_NE(kernel, nullptr);
  for (int64_t n : kLengths) {
    const int64_t rows = 6, group = 3;
    std::vector<float> x = RandomFloats(rows * n, 1, 4.0f);
    std::vector<float> mask(rows / group * n, 0.0f);
    for (int64_t i = 0; i < static_cast<int64_t>(mask.size()); i += 3) mask[i] = -10000.0f;
    std::vector<float> y(rows * n, -1.0f);
    void* buffers[] = {x.data(), mask.data(), y.data()};
    int64_t dims[] = {rows, n, group};
    RunParallel(*kernel, buffers, dims);
    for (int64_t r = 0; r < rows; ++r) {
      double m = -INFINITY, sum = 0;
      for (int64_t j = 0; j < n; ++j) m = std::max(m, double(x[r * n + j]) * scale + mask[r / group * n + j]);
      for (int64_t j = 0; j < n; ++j) sum += std::exp(double(x[r * n + j]) * scale + mask[r / group * n + j] - m);
      for (int64_t j = 0; j < n; ++j) {
        double want = std::exp(double(x[r * n + j]) * scale + mask[r / group * n + j] - m) / sum;
        ASSERT_TRUE(Close(y[r * n + j], want, 1e-5, 1e-7)) << "n=" << n << " r=" << r << " j=" << j
                                                            << " got " << y[r * n + j] << " want " << want;
      }
    }
  }
}

TEST_P(CpuBackendTest, LayerNormMatchesReference) {
  const float eps = 1e-5f;
  auto kernel = MustCompile(LayerNormKernel(eps));
  ASSERT_NE(kernel, nullptr);
  for (int64_t n : kLengths) {
    if (n == 0) continue;  // the mean of an empty row is undefined
    const int64_t rows = 5;
    std::vector<float> x = RandomFloats(rows * n, 2, 3.0f);
    for (float& v : x) v += 1.5f;  // a non-zero mean
    std::vector<float> gamma = RandomFloats(n, 3), beta = RandomFloats(n, 4), y(rows * n);
    void* buffers[] = {x.data(), gamma.data(), beta.data(), y.data()};
    int64_t dims[] = {rows, n};
    RunParallel(*kernel, buffers, dims);
    for (int64_t r = 0; r < rows; ++r) {
      double mean = 0, var = 0;
      for (int64_t j = 0; j < n; ++j) mean += x[r * n + j];
      mean /= n;
      for (int64_t j = 0; j < n; ++j) var += (x[r * n + j] - mean) * (x[r * n + j] - mean);
      var /= n;
      for (int64_t j = 0; j < n; ++j) {
        double want = (x[r * n + j] - mean) / std::sqrt(var + eps) * gamma[j] + beta[j];
        ASSERT_TRUE(Close(y[r * n + j], want, 1e-4, 1e-4)) << "n=" << n << " j=" << j;
      }
    }
  }
}

TEST_P(CpuBackendTest, BiasGeluBothFormsMatchReference) {
  for (GeluForm form : {GeluForm::kErf, GeluForm::kTanh}) {
    auto kernel = MustCompile(BiasGeluKernel(form));
    ASSERT_NE(kernel, nullptr);
    for (int64_t n : kLengths) {
      const int64_t rows = 3;
      std::vector<float> x = RandomFloats(rows * n, 5, 3.0f), bias = RandomFloats(n, 6), y(rows * n);
      void* buffers[] = {x.data(), bias.data(), y.data()};
      int64_t dims[] = {rows, n};
      RunParallel(*kernel, buffers, dims);
      for (int64_t i = 0; i < rows * n; ++i) {
        double v = double(x[i]) + bias[i % n];
        double want = form == GeluForm::kErf
                          ? 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)))
                          : 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
        ASSERT_TRUE(Close(y[i], want, 1e-5, 1e-6)) << "n=" << n << " i=" << i << " v=" << v;
      }
    }
  }
}

TEST_P(CpuBackendTest, BiasResidualAndTransposeAreExact) {
  auto residual = MustCompile(BiasResidualKernel());
  auto transpose = MustCompile(Transpose0213Kernel());
  ASSERT_NE(residual, nullptr);
  ASSERT_NE(transpose, nullptr);
  for (int64_t n : kLengths) {
    const int64_t rows = 4;
    std::vector<float> x = RandomFloats(rows * n, 7), bias = RandomFloats(n, 8), res = RandomFloats(rows * n, 9);
    std::vector<float> y(rows * n);
    void* buffers[] = {x.data(), bias.data(), res.data(), y.data()};
    int64_t dims[] = {rows, n};
    RunParallel(*residual, buffers, dims);
    for (int64_t i = 0; i < rows * n; ++i) ASSERT_EQ(y[i], x[i] + bias[i % n] + res[i]) << "n=" << n;
  }
  for (int64_t d : {1, 7, 16, 17, 64}) {
    const int64_t a = 2, b = 3, c = 5;
    std::vector<float> x = RandomFloats(a * b * c * d, 10), y(a * b * c * d);
    void* buffers[] = {x.data(), y.data()};
    int64_t dims[] = {a, b, c, d};
    RunParallel(*transpose, buffers, dims);
    for (int64_t ia = 0; ia < a; ++ia)
      for (int64_t ib = 0; ib < b; ++ib)
        for (int64_t ic = 0; ic < c; ++ic)
          for (int64_t id = 0; id < d; ++id)
            ASSERT_EQ(y[((ia * c + ic) * b + ib) * d + id], x[((ia * b + ib) * c + ic) * d + id]);
  }
}

// y[j, i] = x[i, j] with the inner loop over j: contiguous loads, strided
// (scatter) stores; and x read transposed: gathered loads.
TEST_P(CpuBackendTest, StridedLoadsAndStoresUseGatherScatter) {
  for (bool gather : {false, true}) {
    Kernel k;
    k.name = gather ? "transpose_gather" : "transpose_scatter";
    BufferRef x = k.AddInput("x");
    BufferRef y = k.AddOutput("y");
    SymExpr m = k.AddDim("m");
    SymExpr n = k.AddDim("n");
    SymExpr i = k.ParallelVar();
    SymExpr j = SymExpr::Symbol("j");
    k.parallel_extent = m;
    // gather: y[i, j] = x[j, i] for y of shape [m, n]; scatter: y[j, i] = x[i, j].
    k.body = {gather ? Loop("j", 0, n, {Store(y, i * n + j, Load(x, j * m + i))})
                     : Loop("j", 0, n, {Store(y, j * m + i, Load(x, i * n + j))})};
    auto kernel = MustCompile(k);
    ASSERT_NE(kernel, nullptr);
    for (int64_t n_val : {1, 17, 40}) {
      const int64_t m_val = 3;
      std::vector<float> xs = RandomFloats(m_val * n_val, 11), ys(m_val * n_val);
      void* buffers[] = {xs.data(), ys.data()};
      int64_t dims[] = {m_val, n_val};
      RunParallel(*kernel, buffers, dims);
      for (int64_t a = 0; a < m_val; ++a)
        for (int64_t b = 0; b < n_val; ++b) {
          if (gather) ASSERT_EQ(ys[a * n_val + b], xs[b * m_val + a]);
          else ASSERT_EQ(ys[b * m_val + a], xs[a * n_val + b]);
        }
    }
  }
}

// A causal mask from loop indices, a bool (u8) keep-mask, an i64 input cast
// to f32, an integer max reduction, and floor division of negative values.
TEST_P(CpuBackendTest, IntegerBoolAndIndexValues) {
  Kernel k;
  k.name = "mixed_types";
  BufferRef x = k.AddInput("x", ScalarType::kI64);
  BufferRef keep = k.AddInput("keep", ScalarType::kBool);
  BufferRef y = k.AddOutput("y");
  BufferRef row_max = k.AddOutput("row_max", ScalarType::kI64);
  BufferRef floors = k.AddOutput("floors", ScalarType::kI64);
  BufferRef positive = k.AddOutput("positive", ScalarType::kBool);
  SymExpr rows = k.AddDim("rows");
  SymExpr n = k.AddDim("n");
  SymExpr p = k.ParallelVar();
  SymExpr j = SymExpr::Symbol("j");
  k.parallel_extent = rows;
  Value xv = Load(x, p * n + j);
  Value causal = Compare(CompareOp::kGt, IndexValue(j), IndexValue(p));
  Value masked = Select(causal, F32(-INFINITY), Select(Load(keep, j), Cast(ScalarType::kF32, xv), F32(0)));
  k.body = {
      Accumulator("m", I64(std::numeric_limits<int64_t>::min())),
      Loop("j", 0, n,
           {Store(y, p * n + j, masked), Accumulate("m", ReduceOp::kMax, xv),
            Store(floors, p * n + j, IndexValue(FloorDiv(j - 5, 3) + Mod(j - 5, 3) * 100)),
            Store(positive, p * n + j, Compare(CompareOp::kGt, xv, I64(0)))}),
      Store(row_max, p, Var("m", ScalarType::kI64)),
  };
  auto kernel = MustCompile(k);
  ASSERT_NE(kernel, nullptr);
  for (int64_t n_val : {1, 16, 21}) {
    const int64_t rows_val = 4;
    std::vector<int64_t> xs(rows_val * n_val), maxes(rows_val), fl(rows_val * n_val);
    for (int64_t i = 0; i < rows_val * n_val; ++i) xs[i] = (i * 7919) % 23 - 11;
    std::vector<uint8_t> keep_v(n_val), pos(rows_val * n_val, 7);
    for (int64_t i = 0; i < n_val; ++i) keep_v[i] = i % 3 != 1;
    std::vector<float> ys(rows_val * n_val);
    void* buffers[] = {xs.data(), keep_v.data(), ys.data(), maxes.data(), fl.data(), pos.data()};
    int64_t dims[] = {rows_val, n_val};
    RunParallel(*kernel, buffers, dims);
    for (int64_t r = 0; r < rows_val; ++r) {
      int64_t want_max = std::numeric_limits<int64_t>::min();
      for (int64_t c = 0; c < n_val; ++c) {
        int64_t i = r * n_val + c;
        want_max = std::max(want_max, xs[i]);
        float want = c > r ? -INFINITY : (keep_v[c] ? float(xs[i]) : 0.0f);
        ASSERT_EQ(ys[i], want) << "r=" << r << " c=" << c;
        ASSERT_EQ(fl[i], FloorDivInt(c - 5, 3) + FloorModInt(c - 5, 3) * 100) << "c=" << c;
        ASSERT_EQ(pos[i], xs[i] > 0 ? 1 : 0);
      }
      ASSERT_EQ(maxes[r], want_max);
    }
  }
}

// 60 steps of v = v*v - v: 2^60 operations as a tree, 121 distinct nodes;
// each is emitted once.
TEST_P(CpuBackendTest, ASharedSubexpressionIsComputedOnce) {
  auto kernel = MustCompile(testing::SharedChainKernel(60));
  ASSERT_NE(kernel, nullptr);
  for (int64_t n : {1, 17, 513}) {
    std::vector<float> x(n), y(n);
    for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(i % 101) / 100.0f - 0.5f;  // the orbit stays in [-0.25, 0.75]
    void* buffers[] = {x.data(), y.data()};
    RunParallel(*kernel, buffers, &n);
    for (int64_t i = 0; i < n; ++i) {
      float want = testing::SharedChainReference(60, x[i]);
      ASSERT_TRUE(Close(y[i], want, 1e-4, 1e-5)) << "x=" << x[i] << " got " << y[i] << " want " << want;
    }
  }
}

// A loop that reads the accumulator it updates (a running sum) is not
// vectorizable; it must still be correct (the lowering keeps it scalar).
TEST_P(CpuBackendTest, LoopReadingItsOwnAccumulatorStaysCorrect) {
  Kernel k;
  k.name = "prefix_sum";
  BufferRef x = k.AddInput("x");
  BufferRef y = k.AddOutput("y");
  SymExpr rows = k.AddDim("rows");
  SymExpr n = k.AddDim("n");
  SymExpr p = k.ParallelVar();
  SymExpr j = SymExpr::Symbol("j");
  k.parallel_extent = rows;
  k.body = {Accumulator("running", F32(0)),
            Loop("j", 0, n,
                 {Accumulate("running", ReduceOp::kSum, Load(x, p * n + j)),
                  Store(y, p * n + j, Var("running", ScalarType::kF32))})};
  auto kernel = MustCompile(k);
  ASSERT_NE(kernel, nullptr);
  for (int64_t n_val : {1, 16, 35}) {
    const int64_t rows_val = 3;
    std::vector<float> xs = RandomFloats(rows_val * n_val, 41), ys(rows_val * n_val);
    void* buffers[] = {xs.data(), ys.data()};
    int64_t dims[] = {rows_val, n_val};
    RunParallel(*kernel, buffers, dims);
    for (int64_t r = 0; r < rows_val; ++r) {
      float running = 0;
      for (int64_t c = 0; c < n_val; ++c) {
        running += xs[r * n_val + c];
        ASSERT_EQ(ys[r * n_val + c], running) << "n=" << n_val << " c=" << c;
      }
    }
  }
}

TEST_P(CpuBackendTest, OptimizedIrUsesTheConfiguredVectorWidth) {
  auto ir = backend_->OptimizedIr(BiasGeluKernel(GeluForm::kErf));
  ASSERT_TRUE(ir.ok()) << ir.status();
  int w = backend_->vector_width();
  // Width 1 turns off our explicit vectors only; LLVM may still vectorize.
  std::string expected = w > 1 ? absl::StrCat("<", w, " x float>") : "define void @shapeshift_k";
  EXPECT_TRUE(absl::StrContains(*ir, expected)) << "missing " << expected;
}

INSTANTIATE_TEST_SUITE_P(Widths, CpuBackendTest, BackendVariants(), BackendVariantName);

TEST(CpuBackendErrorsTest, InvalidKernelIsAStatusNamingTheKernel) {
  auto backend = CpuBackend::Create();
  ASSERT_TRUE(backend.ok()) << backend.status();
  Kernel k;
  k.name = "broken";
  BufferRef y = k.AddOutput("y");
  k.body = {Store(y, SymExpr::Symbol("nowhere"), F32(1))};
  auto compiled = (*backend)->Compile(k);
  EXPECT_EQ(compiled.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(compiled.status().message()), HasSubstr("kernel 'broken'"));
}

// The masked remainder is used exactly where the host has AVX-512 (native
// masks); the scalar-loop option turns it off.
TEST(CpuBackendErrorsTest, MaskedTailFollowsHostAndOption) {
  auto best = CpuBackend::Create();
  auto scalar = CpuBackend::Create(CpuBackendOptions{.remainder = RemainderKind::kScalarLoop});
  ASSERT_TRUE(best.ok() && scalar.ok());
  bool avx512 = (*best)->vector_width() == 16;
  auto best_ir = (*best)->OptimizedIr(BiasResidualKernel());
  auto scalar_ir = (*scalar)->OptimizedIr(BiasResidualKernel());
  ASSERT_TRUE(best_ir.ok() && scalar_ir.ok());
  EXPECT_EQ(absl::StrContains(*best_ir, "@llvm.masked.store"), avx512);
  EXPECT_FALSE(absl::StrContains(*scalar_ir, "@llvm.masked.store"));
}

// Every library kernel reads and writes rows contiguously (broadcasts are
// uniform loads): the affine-index analysis must find that, because a
// gather where a vector load would do costs several times the bandwidth.
TEST(CpuBackendErrorsTest, LibraryKernelsNeedNoGatherOrScatter) {
  auto backend = CpuBackend::Create();
  ASSERT_TRUE(backend.ok()) << backend.status();
  for (const Kernel& k : {SoftmaxKernel(0.125f), LayerNormKernel(1e-5f), BiasGeluKernel(GeluForm::kErf),
                          BiasResidualKernel(), Transpose0213Kernel()}) {
    auto ir = (*backend)->OptimizedIr(k);
    ASSERT_TRUE(ir.ok()) << ir.status();
    EXPECT_FALSE(absl::StrContains(*ir, "masked.gather")) << k.name;
    EXPECT_FALSE(absl::StrContains(*ir, "masked.scatter")) << k.name;
  }
}

TEST(CpuBackendErrorsTest, HostWidthFollowsCpuFeatures) {
  auto backend = CpuBackend::Create();
  ASSERT_TRUE(backend.ok()) << backend.status();
  EXPECT_THAT((*backend)->vector_width(), ::testing::AnyOf(4, 8, 16));
  EXPECT_FALSE((*backend)->cpu_name().empty());
}

TEST(KernelCacheTest, StructurallyEqualKernelsCompileOnce) {
  auto backend = CpuBackend::Create();
  ASSERT_TRUE(backend.ok()) << backend.status();
  KernelCache cache(backend->get());
  double total_seconds = 0, total_cpu_seconds = 0;
  std::vector<Kernel> model_kernels;
  for (int layer = 0; layer < 12; ++layer) {
    Kernel ln = LayerNormKernel(1e-12f);
    ln.name = absl::StrCat("layer", layer, "_ln");
    model_kernels.push_back(ln);
    model_kernels.push_back(SoftmaxKernel(0.125f));
    model_kernels.push_back(BiasGeluKernel(GeluForm::kErf));
  }
  for (const Kernel& k : model_kernels) {
    auto compiled = cache.GetOrCompile(k);
    ASSERT_TRUE(compiled.ok()) << compiled.status();
    EXPECT_EQ((*compiled)->name, k.name.substr(0, 5) == "layer" ? "layer0_ln" : k.name);
  }
  EXPECT_EQ(cache.compiles(), 3);
  EXPECT_EQ(cache.hits(), 33);
  ASSERT_TRUE(cache.GetOrCompile(LayerNormKernel(1e-5f)).ok());
  EXPECT_EQ(cache.compiles(), 4);
  // A dozen distinct kernels: compile time is reported, not asserted.
  std::vector<Kernel> distinct = {SoftmaxKernel(1.0f), SoftmaxKernel(0.5f), LayerNormKernel(1e-6f),
                                  LayerNormKernel(1e-7f), BiasGeluKernel(GeluForm::kTanh), BiasResidualKernel(),
                                  Transpose0213Kernel(), SoftmaxKernel(0.25f), LayerNormKernel(1e-3f),
                                  SoftmaxKernel(2.0f), LayerNormKernel(1e-2f), SoftmaxKernel(4.0f)};
  for (const Kernel& k : distinct) {
    auto compiled = (*backend)->Compile(k);
    ASSERT_TRUE(compiled.ok()) << compiled.status();
    total_seconds += (*compiled)->compile_seconds;
    total_cpu_seconds += (*compiled)->compile_cpu_seconds;
  }
  std::cout << "[ compile ] 12 distinct kernels: " << total_seconds << " s wall, " << total_cpu_seconds
            << " s CPU total\n";
}

TEST(CpuBackendThreadsTest, ConcurrentCompilesAreSafe) {
  auto backend = CpuBackend::Create();
  ASSERT_TRUE(backend.ok()) << backend.status();
  absl::Status first, second;
  std::thread a([&] { first = (*backend)->Compile(SoftmaxKernel(1.0f)).status(); });
  std::thread b([&] { second = (*backend)->Compile(LayerNormKernel(1e-5f)).status(); });
  a.join();
  b.join();
  EXPECT_TRUE(first.ok()) << first;
  EXPECT_TRUE(second.ok()) << second;
}

// Compiled kernels are plain functions: several threads may run the same
// one at once (each with its own buffers), and RunParallel inside an OpenMP
// region runs serially on the calling thread instead of nesting.
TEST(CpuBackendThreadsTest, SameKernelRunsFromManyThreads) {
  auto backend = CpuBackend::Create();
  ASSERT_TRUE(backend.ok()) << backend.status();
  auto kernel = (*backend)->Compile(BiasResidualKernel());
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  const int64_t rows = 8, n = 37;
  std::vector<float> x = RandomFloats(rows * n, 31), bias = RandomFloats(n, 32), res = RandomFloats(rows * n, 33);
  std::vector<std::vector<float>> outputs(4, std::vector<float>(rows * n));
  std::vector<std::thread> threads;
  for (auto& y : outputs) {
    threads.emplace_back([&, out = y.data()] {
      void* buffers[] = {x.data(), bias.data(), res.data(), out};
      int64_t dims[] = {rows, n};
      RunParallel(**kernel, buffers, dims);
    });
  }
  for (std::thread& t : threads) t.join();
  std::vector<float> nested(rows * n);
#pragma omp parallel num_threads(2)
  {
#pragma omp single
    {
      void* buffers[] = {x.data(), bias.data(), res.data(), nested.data()};
      int64_t dims[] = {rows, n};
      RunParallel(**kernel, buffers, dims);
    }
  }
  for (int64_t i = 0; i < rows * n; ++i) {
    float want = x[i] + bias[i % n] + res[i];
    for (const auto& y : outputs) ASSERT_EQ(y[i], want);
    ASSERT_EQ(nested[i], want);
  }
}

}  // namespace
}  // namespace shapeshift::codegen::cpu
