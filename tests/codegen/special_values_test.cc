// Special values in compiled kernels. The kernel IR's f32 max/min and
// max-reductions propagate NaN from either operand (codegen/kernel_ir.h), at
// every vector width and in every lane of the vector body, the masked tail
// and the scalar remainder: Relu(NaN), Max(NaN, 1) and the row max of a row
// holding a NaN are NaN, as in ONNX Runtime (llvm.maxnum, vmaxps and
// llvm.vector.reduce.fmax all drop a NaN). The library layer norm has the
// reference's range semantics (graph/reference/normalization.cc).
#include <cmath>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "codegen/cpu/cpu_backend.h"
#include "codegen/cpu/parallel_run.h"
#include "codegen/kernel_library.h"
#include "gtest/gtest.h"
#include "tests/codegen/backend_variants.h"

namespace shapeshift::codegen::cpu {
namespace {

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// NaN-propagating references.
float MaxRef(float a, float b) { return (std::isnan(a) || std::isnan(b)) ? kNan : std::max(a, b); }
float MinRef(float a, float b) { return (std::isnan(a) || std::isnan(b)) ? kNan : std::min(a, b); }

bool Same(float got, float want) { return std::isnan(want) ? std::isnan(got) : got == want; }

class NanPropagationTest : public ::testing::TestWithParam<CpuBackendOptions> {};

TEST_P(NanPropagationTest, ElementwiseMaxMinAndReluKeepNanInEveryLane) {
  auto backend = CpuBackend::Create(GetParam());
  ASSERT_TRUE(backend.ok()) << backend.status();
  Kernel k;
  k.name = "max_min";
  BufferRef x = k.AddInput("x");
  BufferRef z = k.AddInput("z");
  BufferRef out_max = k.AddOutput("max");
  BufferRef out_min = k.AddOutput("min");
  BufferRef relu = k.AddOutput("relu");
  BufferRef relu_const_first = k.AddOutput("relu_const_first");
  BufferRef clip_like = k.AddOutput("clip_like");
  SymExpr n = k.AddDim("n");
  SymExpr j = SymExpr::Symbol("j");
  Value xv = Load(x, j), zv = Load(z, j);
  k.body = {Loop("j", 0, n,
                 {Store(out_max, j, Binary(BinaryOp::kMax, xv, zv)), Store(out_min, j, Binary(BinaryOp::kMin, xv, zv)),
                  Store(relu, j, Binary(BinaryOp::kMax, xv, F32(0))),
                  Store(relu_const_first, j, Binary(BinaryOp::kMax, F32(0), xv)),
                  Store(clip_like, j, Binary(BinaryOp::kMin, Binary(BinaryOp::kMax, xv, F32(-1)), F32(1)))})};
  auto kernel = (*backend)->Compile(k);
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  const std::vector<float> values = {kNan, kInf, -kInf, 0.0f, -0.0f, 2.0f, -3.0f};
  for (int64_t len : {1, 3, 4, 5, 15, 16, 17, 33}) {
    for (int64_t nan_at = 0; nan_at < len; ++nan_at) {
      std::vector<float> xs(len), zs(len);
      for (int64_t i = 0; i < len; ++i) {
        xs[i] = values[(i + nan_at) % values.size()];
        zs[i] = values[(3 * i + 1) % values.size()];
      }
      xs[nan_at] = kNan;  // a NaN in x at this lane...
      zs[(nan_at + 1) % len] = kNan;  // ...and one in z at the next
      std::vector<float> mx(len), mn(len), r(len), rc(len), cl(len);
      void* buffers[] = {xs.data(), zs.data(), mx.data(), mn.data(), r.data(), rc.data(), cl.data()};
      int64_t dims[] = {len};
      RunParallel(**kernel, buffers, dims);
      for (int64_t i = 0; i < len; ++i) {
        SCOPED_TRACE(absl::StrCat("len=", len, " i=", i, " x=", xs[i], " z=", zs[i]));
        EXPECT_TRUE(Same(mx[i], MaxRef(xs[i], zs[i]))) << mx[i];
        EXPECT_TRUE(Same(mn[i], MinRef(xs[i], zs[i]))) << mn[i];
        EXPECT_TRUE(Same(r[i], MaxRef(xs[i], 0.0f))) << r[i];
        EXPECT_TRUE(Same(rc[i], MaxRef(xs[i], 0.0f))) << rc[i];
        EXPECT_TRUE(Same(cl[i], MinRef(MaxRef(xs[i], -1.0f), 1.0f))) << cl[i];
      }
    }
  }
}

TEST_P(NanPropagationTest, RowMaxOfARowHoldingNanIsNan) {
  auto backend = CpuBackend::Create(GetParam());
  ASSERT_TRUE(backend.ok()) << backend.status();
  Kernel k;
  k.name = "row_max";
  BufferRef x = k.AddInput("x");
  BufferRef y = k.AddOutput("y");
  SymExpr rows = k.AddDim("rows");
  SymExpr n = k.AddDim("n");
  SymExpr p = k.ParallelVar();
  k.parallel_extent = rows;
  k.body = {Accumulator("m", F32(-kInf)), Loop("j", 0, n, {Accumulate("m", ReduceOp::kMax, Load(x, p * n + SymExpr::Symbol("j")))}),
            Store(y, p, Var("m", ScalarType::kF32))};
  auto kernel = (*backend)->Compile(k);
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  for (int64_t len : {1, 2, 7, 16, 17, 40}) {
    // Row r holds a NaN at position r - 1 (row 0 none, the last row all NaN).
    const int64_t rows_val = len + 2;
    std::vector<float> xs(rows_val * len), ys(rows_val);
    for (int64_t r = 0; r < rows_val; ++r) {
      for (int64_t c = 0; c < len; ++c) xs[r * len + c] = (r == rows_val - 1 || c == r - 1) ? kNan : float(c % 5) - 2;
    }
    xs[0] = kInf;
    void* buffers[] = {xs.data(), ys.data()};
    int64_t dims[] = {rows_val, len};
    RunParallel(**kernel, buffers, dims);
    EXPECT_EQ(ys[0], kInf) << "len=" << len;
    for (int64_t r = 1; r < rows_val; ++r) {
      EXPECT_TRUE(std::isnan(ys[r])) << "len=" << len << " row " << r << ": " << ys[r];
    }
  }
}

// Rows of FLT_MAX (the sum overflows, the mean must not), squares that
// overflow (variance +inf: Y = beta), and a NaN row.
TEST_P(NanPropagationTest, LayerNormOverflowsLikeTheReference) {
  auto backend = CpuBackend::Create(GetParam());
  ASSERT_TRUE(backend.ok()) << backend.status();
  auto kernel = (*backend)->Compile(LayerNormKernel(1e-5f));
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  constexpr float kMax = std::numeric_limits<float>::max();
  for (int64_t n : {8, 17, 40}) {
    std::vector<float> x(4 * n, 0.0f), gamma(n, 1.0f), beta(n), y(4 * n);
    for (int64_t c = 0; c < n; ++c) {
      beta[c] = 0.01f * static_cast<float>(c);
      x[c] = kMax;                       // row 0: all FLT_MAX
      x[2 * n + c] = c == n / 2 ? kNan : 1.0f;  // row 2: a NaN
      x[3 * n + c] = static_cast<float>(c % 3);  // row 3: ordinary
    }
    x[n] = 3e38f, x[n + 1] = -3e38f;  // row 1: squares overflow
    void* buffers[] = {x.data(), gamma.data(), beta.data(), y.data()};
    int64_t dims[] = {4, n};
    RunParallel(**kernel, buffers, dims);
    for (int64_t c = 0; c < n; ++c) {
      SCOPED_TRACE(absl::StrCat("n=", n, " c=", c));
      EXPECT_FLOAT_EQ(y[c], beta[c]);
      EXPECT_FLOAT_EQ(y[n + c], beta[c]);
      EXPECT_TRUE(std::isnan(y[2 * n + c])) << y[2 * n + c];
      EXPECT_TRUE(std::isfinite(y[3 * n + c])) << y[3 * n + c];
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Widths, NanPropagationTest, BackendVariants(), BackendVariantName);

}  // namespace
}  // namespace shapeshift::codegen::cpu
