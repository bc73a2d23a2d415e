// The CUDA C of the library kernels, the gather kernel and the GEMM
// epilogue plans, compiled by the host compiler through cuda_emulation.h and
// run against double-precision references at odd lengths, with several
// block sizes and with threads in both orders (a difference between the
// orders would be a data race on a GPU).
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "codegen/cuda/cuda_emitter.h"
#include "codegen/cuda/gather_kernel.h"
#include "codegen/cuda/gemm_plan.h"
#include "codegen/kernel_library.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/codegen/test_util.h"
#include "tests/support/cuda/emulated_device.h"
#include "tests/support/cuda/emulated_steps.h"
#include "tests/support/cuda/host_module.h"

namespace shapeshift::codegen::cuda::testing {
namespace {

using ::shapeshift::codegen::testing::Close;
using ::shapeshift::codegen::testing::RandomFloats;
using ::testing::HasSubstr;

const std::vector<int64_t> kLengths = {0, 1, 2, 7, 17, 31, 33, 97, 255, 256, 257, 511, 513};

// Default launch, a single warp per block, 64 threads; threads forward and reversed.
std::vector<EmulatedRunOptions> RunVariants() {
  return {{}, {.reverse = true}, {.block_override = 32}, {.reverse = true, .block_override = 64}};
}

std::string Describe(const EmulatedRunOptions& o) {
  return absl::StrCat(o.reverse ? "reversed" : "forward", " block ", o.block_override ? o.block_override : 0);
}

TEST(CudaEmulationTest, SoftmaxWithMaskMatchesReference) {
  const float scale = 0.125f;
  Kernel kernel = SoftmaxKernel(scale);
  for (int64_t n : kLengths) {
    const int64_t rows = 6, group = 3;
    std::vector<float> x = RandomFloats(rows * n, 1, 4.0f);
    std::vector<float> mask(rows / group * n, 0.0f);
    for (int64_t i = 0; i < static_cast<int64_t>(mask.size()); i += 3) mask[i] = -10000.0f;
    for (const EmulatedRunOptions& o : RunVariants()) {
      SCOPED_TRACE(absl::StrCat("n=", n, " ", Describe(o)));
      std::vector<float> y(rows * n, -1.0f);
      ASSERT_TRUE(RunKernelEmulated(kernel, {x.data(), mask.data(), y.data()}, {rows, n, group}, o).ok());
      for (int64_t r = 0; r < rows; ++r) {
        double m = -INFINITY, sum = 0;
        for (int64_t j = 0; j < n; ++j) m = std::max(m, double(x[r * n + j]) * scale + mask[r / group * n + j]);
        for (int64_t j = 0; j < n; ++j) sum += std::exp(double(x[r * n + j]) * scale + mask[r / group * n + j] - m);
        for (int64_t j = 0; j < n; ++j) {
          double want = std::exp(double(x[r * n + j]) * scale + mask[r / group * n + j] - m) / sum;
          ASSERT_TRUE(Close(y[r * n + j], want, 1e-5, 1e-7)) << r << "," << j << ": " << y[r * n + j] << " vs " << want;
        }
      }
    }
  }
}

TEST(CudaEmulationTest, LayerNormMatchesReference) {
  const float eps = 1e-5f;
  Kernel kernel = LayerNormKernel(eps);
  for (int64_t n : kLengths) {
    const int64_t rows = 5;
    std::vector<float> x = RandomFloats(rows * n, 2, 3.0f), gamma = RandomFloats(n, 3), beta = RandomFloats(n, 4);
    for (float& v : x) v += 10.0f;  // a large mean: the centered variance must not cancel
    for (const EmulatedRunOptions& o : RunVariants()) {
      SCOPED_TRACE(absl::StrCat("n=", n, " ", Describe(o)));
      std::vector<float> y(rows * n, -1.0f);
      ASSERT_TRUE(RunKernelEmulated(kernel, {x.data(), gamma.data(), beta.data(), y.data()}, {rows, n}, o).ok());
      for (int64_t r = 0; r < rows; ++r) {
        double mean = 0, var = 0;
        for (int64_t j = 0; j < n; ++j) mean += x[r * n + j];
        mean /= n;
        for (int64_t j = 0; j < n; ++j) var += (x[r * n + j] - mean) * (x[r * n + j] - mean);
        var /= n;
        for (int64_t j = 0; j < n; ++j) {
          double want = (x[r * n + j] - mean) / std::sqrt(var + eps) * gamma[j] + beta[j];
          ASSERT_TRUE(Close(y[r * n + j], want, 1e-4, 1e-4)) << r << "," << j << ": " << y[r * n + j] << " vs " << want;
        }
      }
    }
  }
}

TEST(CudaEmulationTest, BiasGeluBothFormsAndBiasResidualMatchReference) {
  for (int64_t n : kLengths) {
    const int64_t rows = 3;
    std::vector<float> x = RandomFloats(rows * n, 5, 3.0f), bias = RandomFloats(n, 6), res = RandomFloats(rows * n, 7);
    for (GeluForm form : {GeluForm::kErf, GeluForm::kTanh}) {
      std::vector<float> y(rows * n, -1.0f);
      ASSERT_TRUE(RunKernelEmulated(BiasGeluKernel(form), {x.data(), bias.data(), y.data()}, {rows, n}).ok());
      for (int64_t i = 0; i < rows * n; ++i) {
        double v = double(x[i]) + bias[i % n];
        double want = form == GeluForm::kErf
                          ? 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)))
                          : 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
        ASSERT_TRUE(Close(y[i], want, 1e-5, 1e-6)) << "n=" << n << " i=" << i;
      }
    }
    std::vector<float> y(rows * n, -1.0f);
    ASSERT_TRUE(RunKernelEmulated(BiasResidualKernel(), {x.data(), bias.data(), res.data(), y.data()}, {rows, n}).ok());
    for (int64_t i = 0; i < rows * n; ++i) {
      ASSERT_TRUE(Close(y[i], double(x[i]) + bias[i % n] + res[i], 1e-6, 1e-6)) << "n=" << n << " i=" << i;
    }
  }
}

TEST(CudaEmulationTest, HeadTransposeMatchesReference) {
  for (int64_t d : {1, 7, 33, 64}) {
    for (int64_t b : {1, 17, 97}) {
      const int64_t a = 2, c = 3;
      std::vector<float> x = RandomFloats(a * b * c * d, 8);
      for (const EmulatedRunOptions& o : RunVariants()) {
        std::vector<float> y(x.size(), -1.0f);
        ASSERT_TRUE(RunKernelEmulated(Transpose0213Kernel(), {x.data(), y.data()}, {a, b, c, d}, o).ok());
        for (int64_t ia = 0; ia < a; ++ia)
          for (int64_t ib = 0; ib < b; ++ib)
            for (int64_t ic = 0; ic < c; ++ic)
              for (int64_t id = 0; id < d; ++id) {
                ASSERT_EQ(y[((ia * c + ic) * b + ib) * d + id], x[((ia * b + ib) * c + ic) * d + id]);
              }
      }
    }
  }
}

// Integer accumulators and a top-level store in a block-per-row kernel:
// y[p] = max_j x[p, j] and count[p] = sum_j (x[p, j] > 0), both as i64.
TEST(CudaEmulationTest, IntegerRowReductionsAndTopLevelStores) {
  Kernel k;
  k.name = "int_rows";
  BufferRef x = k.AddInput("x", ScalarType::kI64);
  BufferRef mx = k.AddOutput("mx", ScalarType::kI64);
  BufferRef count = k.AddOutput("count", ScalarType::kI64);
  SymExpr rows = k.AddDim("rows"), n = k.AddDim("n");
  k.parallel_extent = rows;
  SymExpr p = k.ParallelVar(), j = SymExpr::Symbol("j");
  Value xv = Load(x, p * n + j);
  k.body = {Accumulator("m", I64(std::numeric_limits<int64_t>::min())), Accumulator("c", I64(0)),
            Loop("j", 0, n,
                 {Accumulate("m", ReduceOp::kMax, xv),
                  Accumulate("c", ReduceOp::kSum, Select(Compare(CompareOp::kGt, xv, I64(0)), I64(1), I64(0)))}),
            Store(mx, p, Var("m", ScalarType::kI64)), Store(count, p, Var("c", ScalarType::kI64))};
  ASSERT_EQ(EmitCudaKernel(k, "k")->mapping, ThreadMapping::kBlockPerRow);
  for (int64_t len : {0, 1, 7, 33, 513}) {
    const int64_t r = 4;
    std::vector<int64_t> data(r * len);
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<int64_t>((i * 7919) % 201) - 100;
    for (const EmulatedRunOptions& o : RunVariants()) {
      std::vector<int64_t> got_max(r, 42), got_count(r, 42);
      ASSERT_TRUE(RunKernelEmulated(k, {data.data(), got_max.data(), got_count.data()}, {r, len}, o).ok());
      for (int64_t row = 0; row < r; ++row) {
        int64_t want_max = std::numeric_limits<int64_t>::min(), want_count = 0;
        for (int64_t q = 0; q < len; ++q) {
          want_max = std::max(want_max, data[row * len + q]);
          want_count += data[row * len + q] > 0;
        }
        EXPECT_EQ(got_max[row], want_max) << "len " << len << " row " << row;
        EXPECT_EQ(got_count[row], want_count) << "len " << len << " row " << row;
      }
    }
  }
}

// ScatterND's scatter kernel (codegen/lower/lower_indexing.cc): a loop over
// index tuples around a loop over each tuple's slice, data-indexed stores.
// Tuples may repeat and the later one wins, so the tuple loop keeps its
// order on one thread whatever the launch and thread order.
TEST(CudaEmulationTest, DataIndexedStoresKeepTheOrderOfTheirTuples) {
  Kernel k;
  k.name = "scatter_rows";
  BufferRef x = k.AddInput("x");
  BufferRef where = k.AddInput("where", ScalarType::kI64);
  BufferRef out = k.AddOutput("out");
  SymExpr tuples = k.AddDim("tuples"), n = k.AddDim("n");
  SymExpr u = SymExpr::Symbol("u"), j = SymExpr::Symbol("j");
  k.parallel_extent = 1;
  k.body = {Loop("u", 0, tuples,
                 {Loop("j", 0, n, {StoreAt(out, Load(where, u) * IndexValue(n) + IndexValue(j), Load(x, u * n + j))})})};
  absl::StatusOr<CudaKernelSource> emitted = EmitCudaKernel(k, "scatter_rows");
  ASSERT_TRUE(emitted.ok()) << emitted.status();
  EXPECT_EQ(emitted->mapping, ThreadMapping::kThreadPerIteration);
  EXPECT_EQ(emitted->work, SymExpr(1)) << "one thread walks the tuples";
  const int64_t rows = 4;
  const std::vector<int64_t> where_rows = {2, 0, 2, 3, 0, 2, 1, 2};  // row 2 four times, row 0 twice
  for (int64_t len : {0, 1, 7, 33, 257}) {
    const int64_t t = static_cast<int64_t>(where_rows.size());
    std::vector<float> xs = RandomFloats(t * len, 17);
    std::vector<float> want(rows * len, -3.0f);
    for (int64_t q = 0; q < t; ++q) {
      for (int64_t e = 0; e < len; ++e) want[where_rows[q] * len + e] = xs[q * len + e];
    }
    for (const EmulatedRunOptions& o : RunVariants()) {
      SCOPED_TRACE(absl::StrCat("len=", len, " ", Describe(o)));
      std::vector<float> got(rows * len, -3.0f);
      std::vector<int64_t> w = where_rows;
      ASSERT_TRUE(RunKernelEmulated(k, {xs.data(), w.data(), got.data()}, {t, len}, o).ok());
      for (int64_t i = 0; i < rows * len; ++i) ASSERT_EQ(got[i], want[i]) << "element " << i;
    }
  }
  // A data-indexed store in the spread loop itself (one innermost loop:
  // distinct places by kernel_ir.h's contract) is still spread.
  k.body = {Loop("j", 0, n, {StoreAt(out, IndexValue(n) - I64(1) - IndexValue(j), Load(x, j))})};
  EXPECT_EQ(EmitCudaKernel(k, "reverse")->mapping, ThreadMapping::kFlat);
}

// A block-per-row kernel's top-level data-indexed store is written once, by
// one thread, after the reduction: y[perm[p]] = sum_j x[p*n + j].
TEST(CudaEmulationTest, ATopLevelDataIndexedStoreOfARowKernelIsWritten) {
  Kernel k;
  k.name = "row_sum_at";
  BufferRef x = k.AddInput("x");
  BufferRef perm = k.AddInput("perm", ScalarType::kI64);
  BufferRef y = k.AddOutput("y");
  SymExpr rows = k.AddDim("rows"), n = k.AddDim("n");
  k.parallel_extent = rows;
  SymExpr p = k.ParallelVar(), j = SymExpr::Symbol("j");
  k.body = {Accumulator("s", F32(0)), Loop("j", 0, n, {Accumulate("s", ReduceOp::kSum, Load(x, p * n + j))}),
            StoreAt(y, Load(perm, p), Var("s", ScalarType::kF32))};
  ASSERT_EQ(EmitCudaKernel(k, "k")->mapping, ThreadMapping::kBlockPerRow);
  const int64_t r = 5;
  std::vector<int64_t> order = {3, 0, 4, 1, 2};
  for (int64_t len : {0, 1, 17, 513}) {
    std::vector<float> xs = RandomFloats(r * len, 23);
    for (const EmulatedRunOptions& o : RunVariants()) {
      SCOPED_TRACE(absl::StrCat("len=", len, " ", Describe(o)));
      std::vector<float> got(r, -3.0f);
      ASSERT_TRUE(RunKernelEmulated(k, {xs.data(), order.data(), got.data()}, {r, len}, o).ok());
      for (int64_t row = 0; row < r; ++row) {
        double want = 0;
        for (int64_t e = 0; e < len; ++e) want += xs[row * len + e];
        EXPECT_TRUE(Close(got[order[row]], want, 1e-5, 1e-5)) << "row " << row << ": " << got[order[row]] << " vs " << want;
      }
    }
  }
}

TEST(CudaEmulationTest, GatherRowsCopiesRowsAndReportsTheFirstBadIndex) {
  const int64_t rows = 11;
  for (int64_t row_elems : {1, 3, 8}) {
    std::vector<float> table = RandomFloats(rows * row_elems, 9);
    for (bool i32 : {false, true}) {
      for (int64_t count : {0, 1, 7, 33}) {
        std::vector<int64_t> ids64(count);
        std::vector<int32_t> ids32(count);
        for (int64_t i = 0; i < count; ++i) ids64[i] = ids32[i] = static_cast<int32_t>((i * 5) % (2 * rows) - rows);
        std::vector<float> out(count * row_elems, -1.0f);
        int64_t status = kGatherNoBadIndex;
        void* idx = i32 ? static_cast<void*>(ids32.data()) : static_cast<void*>(ids64.data());
        const int64_t row_bytes = row_elems * 4;
        // GatherRowsKernel is written by hand: run it through the module directly.
        auto module = HostModule::Compile(CudaPrelude() + GatherRowsKernel().function);
        ASSERT_TRUE(module.ok()) << module.status();
        auto entry = (*module)->Entry(kGatherRowsEntry);
        ASSERT_TRUE(entry.ok());
        void* buffers[] = {table.data(), idx, out.data(), &status};
        long long dims[] = {count, row_bytes, rows, i32 ? 1 : 0};
        LaunchShape shape = ChooseLaunch(ThreadMapping::kFlat, count * GatherWordsPerRow(row_bytes), 1);
        ASSERT_TRUE((*module)->Launch(*entry, shape, /*reverse=*/true, buffers, dims).ok());
        EXPECT_EQ(status, kGatherNoBadIndex);  // ids lie in [-rows, rows)
        for (int64_t i = 0; i < count; ++i) {
          int64_t id = ids64[i] < 0 ? ids64[i] + rows : ids64[i];
          for (int64_t e = 0; e < row_elems; ++e) ASSERT_EQ(out[i * row_elems + e], table[id * row_elems + e]);
        }
        if (count < 7) continue;
        ids64[2] = ids32[2] = rows;       // bad
        ids64[5] = ids32[5] = -rows - 1;  // bad
        ASSERT_TRUE((*module)->Launch(*entry, shape, /*reverse=*/true, buffers, dims).ok());
        EXPECT_EQ(status, 2) << "the first bad position, whatever the thread order";
      }
    }
  }
  // Rows of an odd number of bytes are copied bytewise.
  EXPECT_EQ(GatherWordsPerRow(6), 6);
  EXPECT_EQ(GatherWordsPerRow(8), 2);
}

// Every combination of scale, bias, activation and residual: the cuBLASLt
// operation (host definition) then the planned epilogue kernel (emulated)
// equal act(scale * (A·B) + bias) + R, the fusion plan's contract.
TEST(CudaEmulationTest, GemmPlansMatchTheMatmulDefinition) {
  const int64_t m = 7, k = 17, n = 33;
  std::vector<float> a = RandomFloats(m * k, 10), b = RandomFloats(k * n, 11), bias = RandomFloats(n, 12);
  std::vector<float> res = RandomFloats(m * n, 13);
  int combos = 0, with_epilogue_kernel = 0;
  for (float scale : {1.0f, 0.125f}) {
    for (bool has_bias : {false, true}) {
      for (bool has_res : {false, true}) {
        for (cpu::MatmulActivation act : {cpu::MatmulActivation::kNone, cpu::MatmulActivation::kGeluErf,
                                          cpu::MatmulActivation::kGeluTanh}) {
          for (bool gelu_in_gemm : {true, false}) {
            cpu::MatmulConfig config;
            config.scale = scale;
            config.bias = has_bias;
            config.residual = has_res;
            config.activation = act;
            GemmPlan plan = PlanGemm(config, gelu_in_gemm);
            SCOPED_TRACE(plan.op.Describe());
            std::vector<float> d(m * n, -7.0f);
            GemmOperands ops{reinterpret_cast<DevicePtr>(a.data()), reinterpret_cast<DevicePtr>(b.data()),
                             has_res ? reinterpret_cast<DevicePtr>(res.data()) : 0,
                             has_bias ? reinterpret_cast<DevicePtr>(bias.data()) : 0,
                             reinterpret_cast<DevicePtr>(d.data())};
            RunGemmOpOnHost(plan.op, {1, m, k, n}, ops);
            if (plan.epilogue) {
              ++with_epilogue_kernel;
              std::vector<void*> ptrs = {d.data()};
              if (plan.epilogue_reads_residual) ptrs.push_back(res.data());
              ASSERT_TRUE(RunKernelEmulated(*plan.epilogue, ptrs, {m, n}).ok());
            }
            for (int64_t i = 0; i < m; ++i) {
              for (int64_t j = 0; j < n; ++j) {
                double v = 0;
                for (int64_t l = 0; l < k; ++l) v += double(a[i * k + l]) * b[l * n + j];
                v = scale * v + (has_bias ? bias[j] : 0.0);
                if (act == cpu::MatmulActivation::kGeluErf) v = 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
                if (act == cpu::MatmulActivation::kGeluTanh) {
                  v = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
                }
                if (has_res) v += res[i * n + j];
                ASSERT_TRUE(Close(d[i * n + j], v, 1e-5, 1e-5)) << i << "," << j << ": " << d[i * n + j] << " vs " << v;
              }
            }
            ++combos;
          }
        }
      }
    }
  }
  EXPECT_EQ(combos, 48);
  EXPECT_GT(with_epilogue_kernel, 0);
  // What folds into cuBLASLt: the scale, the bias and a tanh GELU; never a
  // residual that an activation precedes.
  cpu::MatmulConfig ffn;
  ffn.bias = true;
  ffn.activation = cpu::MatmulActivation::kGeluTanh;
  EXPECT_FALSE(PlanGemm(ffn).epilogue.has_value());
  EXPECT_TRUE(PlanGemm(ffn).op.gelu_tanh_epilogue);
  ffn.residual = true;
  EXPECT_TRUE(PlanGemm(ffn).epilogue_reads_residual);
  EXPECT_FALSE(PlanGemm(ffn).op.residual_as_c);
}

TEST(CudaEmulationTest, ACompileErrorIsReportedWithTheCompilersOutput) {
  auto module = HostModule::Compile("extern \"C\" __global__ void f(void* const*, const long long*) { nope(); }");
  ASSERT_FALSE(module.ok());
  EXPECT_THAT(std::string(module.status().message()), HasSubstr("nope"));
}

}  // namespace
}  // namespace shapeshift::codegen::cuda::testing
