// Non-temporal ("streaming") stores for large outputs (llvm_lowering.h):
// which stores qualify, and that the streaming version of a kernel (taken
// when a call writes >= LoweringOptions::streaming_store_min_bytes, 16 MiB)
// computes the same as the cached one at awkward row lengths, with rows that
// start at every alignment (the masked head that aligns them to 64 bytes),
// and with a reduction in the streamed loop.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "absl/strings/match.h"
#include "codegen/cpu/cpu_backend.h"
#include "codegen/cpu/parallel_run.h"
#include "codegen/kernel_library.h"
#include "gtest/gtest.h"
#include "tests/codegen/test_util.h"

namespace shapeshift::codegen::cpu {
namespace {

using ::shapeshift::codegen::testing::Close;
using ::shapeshift::codegen::testing::RandomFloats;

// Enough floats that one output crosses the 16 MiB streaming threshold.
constexpr int64_t kStreamedFloats = (int64_t{16} << 20) / 4 + 4096;

// Streaming needs AVX-512's masked loops; elsewhere no store streams.
bool HostStreams(const CpuBackend& backend) { return backend.vector_width() == 16; }

// A 64-byte aligned float array, viewed from `offset` floats in, so a row
// can start at any alignment.
class OffsetFloats {
 public:
  OffsetFloats(int64_t n, int64_t offset)
      : storage_(static_cast<float*>(std::aligned_alloc(64, ((n + offset) * 4 + 63) / 64 * 64)), std::free),
        data_(storage_.get() + offset) {}
  float* data() { return data_; }
  float& operator[](int64_t i) { return data_[i]; }

 private:
  std::unique_ptr<float, decltype(&std::free)> storage_;
  float* data_;
};

TEST(StreamingStoreTest, OnlyTheLastStoreOfARowStreams) {
  auto backend = CpuBackend::Create();
  ASSERT_TRUE(backend.ok()) << backend.status();
  bool streams = HostStreams(**backend);
  // softmax writes y, reads it back and rescales it: its row is staged.
  for (const Kernel& kernel : {BiasGeluKernel(GeluForm::kTanh), LayerNormKernel(1e-5f), BiasResidualKernel(),
                               Transpose0213Kernel(), SoftmaxKernel(0.125f)}) {
    auto ir = (*backend)->OptimizedIr(kernel);
    ASSERT_TRUE(ir.ok()) << ir.status();
    EXPECT_EQ(absl::StrContains(*ir, "!nontemporal"), streams) << kernel.name;
  }
  // A row stored twice by loops with different bounds cannot be staged; its
  // stores stay ordinary.
  Kernel k;
  k.name = "copy_then_double_all_but_first";
  BufferRef x = k.AddInput("x");
  BufferRef y = k.AddOutput("y");
  SymExpr n = k.AddDim("n");
  SymExpr r = k.ParallelVar();
  SymExpr j = SymExpr::Symbol("j");
  k.parallel_extent = k.AddDim("rows");
  k.body = {Loop("j", 0, n, {Store(y, r * n + j, Load(x, r * n + j))}),
            Loop("j", 1, n, {Store(y, r * n + j, Load(y, r * n + j) * F32(2))})};
  auto ir = (*backend)->OptimizedIr(k);
  ASSERT_TRUE(ir.ok()) << ir.status();
  EXPECT_FALSE(absl::StrContains(*ir, "!nontemporal"));
}

// Softmax's row is staged on the stack (up to 4096 floats) and its final
// store streams; a longer row takes the cached version.
TEST(StreamingStoreTest, LargeSoftmaxMatchesReference) {
  auto backend = CpuBackend::Create();
  ASSERT_TRUE(backend.ok()) << backend.status();
  auto kernel = (*backend)->Compile(SoftmaxKernel(0.125f));
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  const int64_t group = 4;
  const int64_t lengths[] = {1, 7, 512, 513, 4096, 4097};
  auto rows_for = [&](int64_t n) { return ((kStreamedFloats + n - 1) / n + group - 1) / group * group; };
  // x holds the largest case's rows * n logits (rounding rows up to whole
  // groups adds up to (group - 1) * n + n - 1 floats past kStreamedFloats).
  int64_t x_floats = 0;
  for (int64_t n : lengths) x_floats = std::max(x_floats, rows_for(n) * n);
  std::vector<float> x = RandomFloats(x_floats, 9, 4.0f);
  for (int64_t n : lengths) {
    for (int64_t offset : {0, 3}) {
      SCOPED_TRACE(::testing::Message() << "n " << n << " output offset " << offset << " floats");
      const int64_t rows = rows_for(n);
      std::vector<float> mask(rows / group * n, 0.0f);
      for (int64_t i = 0; i < static_cast<int64_t>(mask.size()); i += 5) mask[i] = -10000.0f;
      OffsetFloats y(rows * n, offset);
      void* buffers[] = {x.data(), mask.data(), y.data()};
      int64_t dims[] = {rows, n, group};
      RunParallel(**kernel, buffers, dims);
      for (int64_t row = 0; row < rows; row += 13) {  // every 13th row: the reference is O(rows * n)
        std::vector<double> logits(n);
        double max = -INFINITY, sum = 0;
        for (int64_t j = 0; j < n; ++j) {
          logits[j] = 0.125 * x[row * n + j] + mask[row / group * n + j];
          max = std::max(max, logits[j]);
        }
        for (int64_t j = 0; j < n; ++j) sum += std::exp(logits[j] - max);
        for (int64_t j = 0; j < n; ++j) {
          double want = std::exp(logits[j] - max) / sum;
          ASSERT_TRUE(Close(y[row * n + j], want, 1e-5, 1e-7)) << "row " << row << " col " << j;
        }
      }
    }
  }
}

TEST(StreamingStoreTest, LargeBiasResidualMatchesAtEveryLengthAndAlignment) {
  auto backend = CpuBackend::Create();
  ASSERT_TRUE(backend.ok()) << backend.status();
  auto kernel = (*backend)->Compile(BiasResidualKernel());
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  // Inputs for the largest case, shared by all (rows * n < kStreamedFloats + n).
  std::vector<float> x = RandomFloats(kStreamedFloats + 513, 1), residual = RandomFloats(kStreamedFloats + 513, 2);
  for (int64_t n : {1, 2, 7, 16, 17, 511, 512, 513}) {
    std::vector<float> bias = RandomFloats(n, 3);
    for (int64_t offset : {0, 1, 5, 15}) {
      SCOPED_TRACE(::testing::Message() << "n " << n << " output offset " << offset << " floats");
      const int64_t rows = (kStreamedFloats + n - 1) / n;
      OffsetFloats y(rows * n, offset);
      void* buffers[] = {x.data(), bias.data(), residual.data(), y.data()};
      int64_t dims[] = {rows, n};
      RunParallel(**kernel, buffers, dims);
      for (int64_t i = 0; i < rows * n; ++i) {
        ASSERT_EQ(y[i], x[i] + bias[i % n] + residual[i]) << "element " << i;
      }
    }
  }
}

TEST(StreamingStoreTest, LargeGeluAndLayerNormMatchReference) {
  auto backend = CpuBackend::Create();
  ASSERT_TRUE(backend.ok()) << backend.status();
  auto gelu = (*backend)->Compile(BiasGeluKernel(GeluForm::kTanh));
  auto norm = (*backend)->Compile(LayerNormKernel(1e-5f));
  ASSERT_TRUE(gelu.ok()) << gelu.status();
  ASSERT_TRUE(norm.ok()) << norm.status();
  const int64_t n = 513, rows = (kStreamedFloats + n - 1) / n;
  std::vector<float> x = RandomFloats(rows * n, 4, 2.0f), bias = RandomFloats(n, 5), y(rows * n);
  void* gelu_buffers[] = {x.data(), bias.data(), y.data()};
  int64_t dims[] = {rows, n};
  RunParallel(**gelu, gelu_buffers, dims);
  for (int64_t i = 0; i < rows * n; ++i) {
    double v = static_cast<double>(x[i]) + bias[i % n];
    double want = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
    ASSERT_TRUE(Close(y[i], want, 1e-5, 1e-6)) << "gelu element " << i << ": " << y[i] << " vs " << want;
  }
  std::vector<float> gamma = RandomFloats(n, 6), beta = RandomFloats(n, 7);
  void* norm_buffers[] = {x.data(), gamma.data(), beta.data(), y.data()};
  RunParallel(**norm, norm_buffers, dims);
  for (int64_t r = 0; r < rows; r += 97) {  // every 97th row: the reference is O(rows * n)
    double mean = 0, var = 0;
    for (int64_t j = 0; j < n; ++j) mean += x[r * n + j];
    mean /= n;
    for (int64_t j = 0; j < n; ++j) var += (x[r * n + j] - mean) * (x[r * n + j] - mean);
    double inv_std = 1 / std::sqrt(var / n + 1e-5);
    for (int64_t j = 0; j < n; ++j) {
      double want = (x[r * n + j] - mean) * inv_std * gamma[j] + beta[j];
      ASSERT_TRUE(Close(y[r * n + j], want, 1e-4, 1e-4)) << "layer norm row " << r << " col " << j;
    }
  }
}

// y[r, j] = 2 x[r, j] streamed while the same loop sums the row: the masked
// head that aligns y must also contribute to the reduction, once.
TEST(StreamingStoreTest, ReductionInTheStreamedLoopCountsTheAlignmentHead) {
  Kernel k;
  k.name = "double_and_row_sum";
  BufferRef x = k.AddInput("x");
  BufferRef y = k.AddOutput("y");
  BufferRef sums = k.AddOutput("sums");
  SymExpr rows = k.AddDim("rows");
  SymExpr n = k.AddDim("n");
  SymExpr r = k.ParallelVar();
  SymExpr j = SymExpr::Symbol("j");
  k.parallel_extent = rows;
  k.body = {Accumulator("sum", F32(0)),
            Loop("j", 0, n,
                 {Store(y, r * n + j, Load(x, r * n + j) * F32(2)),
                  Accumulate("sum", ReduceOp::kSum, Load(x, r * n + j))}),
            Store(sums, r, Var("sum", ScalarType::kF32))};
  auto backend = CpuBackend::Create();
  ASSERT_TRUE(backend.ok()) << backend.status();
  auto ir = (*backend)->OptimizedIr(k);
  ASSERT_TRUE(ir.ok()) << ir.status();
  EXPECT_EQ(absl::StrContains(*ir, "!nontemporal"), HostStreams(**backend));
  auto kernel = (*backend)->Compile(k);
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  for (int64_t n_value : {3, 97, 513}) {
    const int64_t rows_value = (kStreamedFloats + n_value - 1) / n_value;
    std::vector<float> xs(rows_value * n_value), row_sums(rows_value, -1.0f);
    for (int64_t i = 0; i < rows_value * n_value; ++i) xs[i] = static_cast<float>(i % 7);  // exact sums
    OffsetFloats ys(rows_value * n_value, 3);
    void* buffers[] = {xs.data(), ys.data(), row_sums.data()};
    int64_t dims[] = {rows_value, n_value};
    RunParallel(**kernel, buffers, dims);
    for (int64_t row = 0; row < rows_value; ++row) {
      double want = 0;
      for (int64_t col = 0; col < n_value; ++col) {
        want += xs[row * n_value + col];
        ASSERT_EQ(ys[row * n_value + col], 2 * xs[row * n_value + col]) << "row " << row << " col " << col;
      }
      ASSERT_EQ(row_sums[row], want) << "n " << n_value << " row " << row;
    }
  }
}

}  // namespace
}  // namespace shapeshift::codegen::cpu
