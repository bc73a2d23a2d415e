// Accuracy of the generated exp/log/tanh/erf/sigmoid against std:: in double,
// through whole kernels so both the vector body and the scalar remainder run.
#include <cmath>
#include <limits>
#include <vector>

#include "codegen/cpu/cpu_backend.h"
#include "codegen/cpu/parallel_run.h"
#include "gtest/gtest.h"
#include "tests/codegen/test_util.h"

namespace shapeshift::codegen::cpu {
namespace {

using ::shapeshift::codegen::testing::Close;

struct MathCase {
  UnaryOp op;
  double (*reference)(double);
  double low, high;  // input range swept
  double rtol, atol;
};

double Sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double Exp(double x) { return std::exp(x); }
double Log(double x) { return std::log(x); }
double Tanh(double x) { return std::tanh(x); }
double Erf(double x) { return std::erf(x); }

// Inputs: a dense sweep of [low, high] plus magnitudes spread over many binades.
std::vector<float> Inputs(double low, double high) {
  std::vector<float> v;
  for (int i = 0; i <= 20000; ++i) v.push_back(static_cast<float>(low + (high - low) * i / 20000));
  for (double m = 1e-30; m < high; m *= 1.37) {
    if (m >= low) v.push_back(static_cast<float>(m));
    if (-m >= low) v.push_back(static_cast<float>(-m));
  }
  v.push_back(13.0f);  // odd total length: the remainder loop runs too
  return v;
}

Kernel UnaryKernel(UnaryOp op) {
  Kernel k;
  k.name = std::string("unary_") + std::string(UnaryOpName(op));
  BufferRef x = k.AddInput("x");
  BufferRef y = k.AddOutput("y");
  SymExpr n = k.AddDim("n");
  SymExpr j = SymExpr::Symbol("j");
  k.parallel_extent = 1;
  k.body = {Loop("j", 0, n, {Store(y, j, Unary(op, Load(x, j)))})};
  return k;
}

std::vector<float> RunUnary(CpuBackend& backend, UnaryOp op, std::vector<float> xs) {
  auto kernel = backend.Compile(UnaryKernel(op));
  EXPECT_TRUE(kernel.ok()) << kernel.status();
  std::vector<float> ys(xs.size());
  if (!kernel.ok()) return ys;
  void* buffers[] = {xs.data(), ys.data()};
  int64_t dims[] = {static_cast<int64_t>(xs.size())};
  RunParallel(**kernel, buffers, dims);
  return ys;
}

// Host width (the AVX-512 vscalefps exp), 4 lanes and scalar code (the
// integer-exponent exp) must all meet the documented accuracy.
TEST(VectorMathTest, MatchesStdWithinDocumentedTolerance) {
  for (int width : {0, 4, 1}) {
    SCOPED_TRACE(::testing::Message() << "vector_width " << width);
    auto backend = CpuBackend::Create(CpuBackendOptions{.vector_width = width});
    ASSERT_TRUE(backend.ok()) << backend.status();
    const double kNormal = std::numeric_limits<float>::min();
    const std::vector<MathCase> cases = {
        {UnaryOp::kExp, Exp, -87.0, 88.7, 1e-6, kNormal},
        {UnaryOp::kLog, Log, 1e-30, 1e30, 1e-6, 2e-7},
        {UnaryOp::kTanh, Tanh, -12.0, 12.0, 1e-6, 0},
        {UnaryOp::kErf, Erf, -6.0, 6.0, 1e-6, 0},
        {UnaryOp::kSigmoid, Sigmoid, -80.0, 80.0, 1e-6, kNormal},
    };
    for (const MathCase& c : cases) {
      std::vector<float> xs = Inputs(c.low, c.high);
      std::vector<float> ys = RunUnary(**backend, c.op, xs);
      double worst = 0;
      for (size_t i = 0; i < xs.size(); ++i) {
        double want = c.reference(xs[i]);
        ASSERT_TRUE(Close(ys[i], want, c.rtol, c.atol))
            << UnaryOpName(c.op) << "(" << xs[i] << ") = " << ys[i] << ", want " << want;
        if (std::abs(want) > kNormal) worst = std::max(worst, std::abs(ys[i] - want) / std::abs(want));
      }
      std::cout << "[ accuracy ] width " << width << " " << UnaryOpName(c.op) << " worst relative error " << worst
                << "\n";
    }
  }
}

// 1 + tanh(u) (GELU's tanh form) is emitted as 2 / (1 + exp(-2u)): accurate
// relative to the result even for u << 0, where adding 1 to tanh(u) would
// cancel every digit (at u = -10 the answer is 4e-9).
TEST(VectorMathTest, OnePlusTanhIsAccurateWhereItCancels) {
  for (int width : {0, 4, 1}) {
    SCOPED_TRACE(::testing::Message() << "vector_width " << width);
    auto backend = CpuBackend::Create(CpuBackendOptions{.vector_width = width});
    ASSERT_TRUE(backend.ok()) << backend.status();
    Kernel k;
    k.name = "one_plus_tanh";
    BufferRef x = k.AddInput("x");
    BufferRef y = k.AddOutput("y");
    SymExpr n = k.AddDim("n");
    k.parallel_extent = 1;
    k.body = {Loop("j", 0, n, {Store(y, SymExpr::Symbol("j"), F32(1) + Unary(UnaryOp::kTanh, Load(x, SymExpr::Symbol("j"))))})};
    auto compiled = (*backend)->Compile(k);
    ASSERT_TRUE(compiled.ok()) << compiled.status();
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    std::vector<float> xs = Inputs(-40.0, 12.0);
    xs.insert(xs.end(), {nan, inf, -inf, 0.0f});
    std::vector<float> ys(xs.size());
    void* buffers[] = {xs.data(), ys.data()};
    int64_t dims[] = {static_cast<int64_t>(xs.size())};
    RunParallel(**compiled, buffers, dims);
    double worst = 0;
    for (size_t i = 0; i + 4 < xs.size(); ++i) {
      double want = 2.0 / (1.0 + std::exp(-2.0 * xs[i]));  // = 1 + tanh(x), without the cancellation
      ASSERT_TRUE(Close(ys[i], want, 1e-6, std::numeric_limits<float>::min()))
          << "1 + tanh(" << xs[i] << ") = " << ys[i] << ", want " << want;
      worst = std::max(worst, std::abs(ys[i] - want) / want);
    }
    size_t last = xs.size() - 4;
    EXPECT_TRUE(std::isnan(ys[last]));
    EXPECT_EQ(ys[last + 1], 2.0f);
    EXPECT_EQ(ys[last + 2], 0.0f);
    EXPECT_EQ(ys[last + 3], 1.0f);
    std::cout << "[ accuracy ] width " << width << " 1+tanh worst relative error " << worst << "\n";
  }
}

TEST(VectorMathTest, SpecialValues) {
  for (int width : {0, 4, 1}) {
    SCOPED_TRACE(::testing::Message() << "vector_width " << width);
    auto backend = CpuBackend::Create(CpuBackendOptions{.vector_width = width});
    ASSERT_TRUE(backend.ok()) << backend.status();
    const float inf = std::numeric_limits<float>::infinity();
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> xs = {inf, -inf, nan, 0.0f, -0.0f, 100.0f, -200.0f, 1e-40f, -1.0f};
    auto exp = RunUnary(**backend, UnaryOp::kExp, xs);
    EXPECT_EQ(exp[0], inf);
    EXPECT_EQ(exp[1], 0.0f);
    EXPECT_TRUE(std::isnan(exp[2]));
    EXPECT_EQ(exp[3], 1.0f);
    EXPECT_EQ(exp[5], inf);
    EXPECT_EQ(exp[6], 0.0f);
    auto log = RunUnary(**backend, UnaryOp::kLog, xs);
    EXPECT_EQ(log[0], inf);
    EXPECT_TRUE(std::isnan(log[1]));
    EXPECT_TRUE(std::isnan(log[2]));
    EXPECT_EQ(log[3], -inf);
    EXPECT_TRUE(Close(log[7], std::log(1e-40), 1e-5, 0));  // a denormal input
    EXPECT_TRUE(std::isnan(log[8]));
    auto tanh = RunUnary(**backend, UnaryOp::kTanh, xs);
    EXPECT_EQ(tanh[0], 1.0f);
    EXPECT_EQ(tanh[1], -1.0f);
    EXPECT_TRUE(std::isnan(tanh[2]));
    EXPECT_EQ(tanh[3], 0.0f);
    auto erf = RunUnary(**backend, UnaryOp::kErf, xs);
    EXPECT_EQ(erf[0], 1.0f);
    EXPECT_EQ(erf[1], -1.0f);
    EXPECT_TRUE(std::isnan(erf[2]));
    auto sigmoid = RunUnary(**backend, UnaryOp::kSigmoid, xs);
    EXPECT_EQ(sigmoid[0], 1.0f);
    EXPECT_EQ(sigmoid[1], 0.0f);
    EXPECT_EQ(sigmoid[3], 0.5f);
  }
}

}  // namespace
}  // namespace shapeshift::codegen::cpu
