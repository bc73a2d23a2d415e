// Elementwise math ops with special-value semantics of their own (Sin, Cos,
// Floor, Ceil, Round, Sign, IsInf, Xor, Mean, Mod, integer Div): each one
// node compiled over a symbolic length and checked element by element,
// special values included (the ORT-backed cases are in
// tests/runtime/special_values_test.cc).
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "tests/codegen/lower/lower_test_util.h"

namespace shapeshift::codegen::lower::testing {
namespace {

using passes::GroupKind;

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr int64_t kLowest = std::numeric_limits<int64_t>::min();

class MathOpsLowerTest : public LowerTest {
 protected:
  // One `op` node over inputs of shape [seq] (one per tensor), lowered as an
  // elementwise group and run on `inputs`.
  std::vector<Tensor> RunCompiled(const std::string& op, const std::vector<Tensor>& inputs, Attributes attrs = {}) {
    Graph fresh(17);
    std::swap(g, fresh);
    std::vector<GraphValue*> values;
    for (size_t i = 0; i < inputs.size(); ++i) values.push_back(In(absl::StrCat("x", i), {seq}, inputs[i].dtype()));
    Node* node = Op(op, values, std::move(attrs));
    g.AddOutput(node->output(0));
    passes::Group group = MakeGroup(GroupKind::kElementwise, {node}, values);
    group.elementwise.domain = node->output(0)->type().shape;
    absl::StatusOr<std::vector<LoweredStep>> steps = LowerGroup(group, &env);
    EXPECT_TRUE(steps.ok()) << steps.status();
    if (!steps.ok()) return {};
    absl::StatusOr<std::vector<Tensor>> got = RunSteps(*steps, inputs);
    EXPECT_TRUE(got.ok()) << got.status();
    if (!got.ok()) return {};
    return *got;
  }

  static Tensor F32s(std::vector<float> v) {
    return Tensor::FromVector<float>(DType::kF32, {static_cast<int64_t>(v.size())}, v);
  }
  static Tensor I64s(std::vector<int64_t> v) {
    return Tensor::FromVector<int64_t>(DType::kI64, {static_cast<int64_t>(v.size())}, v);
  }
};

// Same value, NaN matching NaN, and the sign of zero.
void ExpectSameFloat(float got, double want, double tol, const std::string& what) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << what << ": got " << got << ", want NaN";
  } else if (std::isinf(want) || want == 0) {
    EXPECT_EQ(got, static_cast<float>(want)) << what;
    EXPECT_EQ(std::signbit(got), std::signbit(want)) << what << ": sign of " << got;
  } else {
    EXPECT_NEAR(got, want, tol * (1 + std::abs(want))) << what;
  }
}

// Every f32 input the float ops see: specials, range ends, huge arguments
// (where a polynomial's argument reduction would fail), halves for Round.
std::vector<float> Palette() {
  return {kNan,  kInf,  -kInf, 0.0f,  -0.0f, 1e-40f, -1e-40f, 3.4e38f, -3.4e38f, 1e30f, -1e30f, 1e5f,
          123456.7f, 0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 2.4999998f, 1.0f, -1.0f, 3.0f, 88.75f,
          -104.0f, 8388609.0f, 0.3f, -7.7f};
}

TEST_F(MathOpsLowerTest, FloatUnaryOpsMatchLibmOnEveryPaletteValue) {
  struct Case {
    const char* op;
    double (*fn)(double);
  };
  const Case cases[] = {{"Sin", [](double x) { return std::sin(x); }},
                        {"Cos", [](double x) { return std::cos(x); }},
                        {"Floor", [](double x) { return std::floor(x); }},
                        {"Ceil", [](double x) { return std::ceil(x); }},
                        {"Round", [](double x) { return std::nearbyint(x); }}};  // half to even
  const std::vector<float> palette = Palette();
  for (const Case& c : cases) {
    std::vector<Tensor> out = RunCompiled(c.op, {F32s(palette)});
    ASSERT_EQ(out.size(), 1u) << c.op;
    for (size_t i = 0; i < palette.size(); ++i) {
      double want = c.fn(static_cast<double>(palette[i]));
      // sinf/cosf round once; the double reference is the exact value.
      ExpectSameFloat(out[0].data<float>()[i], static_cast<float>(want), 1e-6,
                      absl::StrCat(c.op, "(", palette[i], ")"));
    }
  }
}

TEST_F(MathOpsLowerTest, SignIsInfAndFloatModFollowOnnx) {
  const std::vector<float> palette = Palette();
  std::vector<Tensor> sign = RunCompiled("Sign", {F32s(palette)});
  ASSERT_EQ(sign.size(), 1u);
  for (size_t i = 0; i < palette.size(); ++i) {
    float x = palette[i];
    double want = std::isnan(x) ? x : x > 0 ? 1 : x < 0 ? -1 : 0.0;  // Sign(-0) is +0
    ExpectSameFloat(sign[0].data<float>()[i], want, 0, absl::StrCat("Sign(", x, ")"));
  }
  Attributes only_positive;
  only_positive.Set("detect_negative", int64_t{0});
  std::vector<Tensor> inf = RunCompiled("IsInf", {F32s(palette)}, only_positive);
  ASSERT_EQ(inf.size(), 1u);
  for (size_t i = 0; i < palette.size(); ++i) {
    EXPECT_EQ(inf[0].GetAsInt64(i), palette[i] == kInf ? 1 : 0) << palette[i];
  }
  const std::vector<float> a = {5.5f, -5.5f, 5.5f, -5.5f, 1.0f, kInf, 3.0f, -0.0f, 1e30f, kNan, 7.0f};
  const std::vector<float> b = {2.0f, 2.0f, -2.0f, -2.0f, 0.0f, 2.0f, kInf, 3.0f, 7.0f, 1.0f, kNan};
  Attributes c_fmod;
  c_fmod.Set("fmod", int64_t{1});
  std::vector<Tensor> mod = RunCompiled("Mod", {F32s(a), F32s(b)}, c_fmod);
  ASSERT_EQ(mod.size(), 1u);
  for (size_t i = 0; i < a.size(); ++i) {
    ExpectSameFloat(mod[0].data<float>()[i], std::fmod(a[i], b[i]), 0, absl::StrCat("fmod(", a[i], ", ", b[i], ")"));
  }
}

TEST_F(MathOpsLowerTest, XorAndMean) {
  const std::vector<uint8_t> x = {0, 0, 1, 1}, y = {0, 1, 0, 1};
  std::vector<Tensor> xor_out = RunCompiled(
      "Xor", {Tensor::FromVector<uint8_t>(DType::kBool, {4}, x), Tensor::FromVector<uint8_t>(DType::kBool, {4}, y)});
  ASSERT_EQ(xor_out.size(), 1u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(xor_out[0].GetAsInt64(i), x[i] != y[i]) << i;
  std::vector<Tensor> mean = RunCompiled("Mean", {F32s({1, kNan, 3e38f}), F32s({2, 1, 3e38f}), F32s({4, 1, 3e38f})});
  ASSERT_EQ(mean.size(), 1u);
  ExpectSameFloat(mean[0].data<float>()[0], 7.0 / 3, 1e-6, "mean(1, 2, 4)");
  ExpectSameFloat(mean[0].data<float>()[1], kNan, 0, "mean(NaN, ...)");
  ExpectSameFloat(mean[0].data<float>()[2], kInf, 0, "mean of an f32 sum that overflows");  // as the reference
}

// Integer Div truncates toward zero and Mod has the divisor's sign (fmod=0)
// or the dividend's (fmod=1), exactly as the interpreter computes them.
TEST_F(MathOpsLowerTest, IntegerDivAndModMatchTheInterpreter) {
  std::vector<int64_t> a, b;
  for (int64_t x = -23; x <= 23; x += 3) {
    for (int64_t y : {-7, -3, -2, 1, 2, 5, 9}) {
      a.push_back(x);
      b.push_back(y);
    }
  }
  a.push_back(kLowest);
  b.push_back(3);
  for (const char* op : {"Div", "Mod"}) {
    for (int64_t fmod : {0, 1}) {
      if (std::string(op) == "Div" && fmod == 1) continue;
      SCOPED_TRACE(absl::StrCat(op, " fmod=", fmod));
      Attributes attrs;
      if (std::string(op) == "Mod") attrs.Set("fmod", fmod);
      std::vector<Tensor> got = RunCompiled(op, {I64s(a), I64s(b)}, attrs);
      ASSERT_EQ(got.size(), 1u);
      absl::StatusOr<std::vector<Tensor>> want = Interpret(g, {I64s(a), I64s(b)});
      ASSERT_TRUE(want.ok()) << want.status();
      for (size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(got[0].GetAsInt64(i), (*want)[0].GetAsInt64(i)) << a[i] << " " << op << " " << b[i];
      }
    }
  }
}

// The two divisions that trap on x86 (SIGFPE) have defined results in a
// kernel (codegen/kernel_ir.h): x / 0 = x % 0 = 0, lowest / -1 = lowest,
// lowest % -1 = 0. The interpreter reports a division by zero as an error.
TEST_F(MathOpsLowerTest, IntegerDivisionByZeroOrMinusOneNeverTraps) {
  const std::vector<int64_t> a = {7, -7, 0, kLowest, kLowest, 5};
  const std::vector<int64_t> b = {0, 0, 0, -1, 0, -1};
  std::vector<Tensor> div = RunCompiled("Div", {I64s(a), I64s(b)});
  ASSERT_EQ(div.size(), 1u);
  const std::vector<int64_t> want_div = {0, 0, 0, kLowest, 0, -5};
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(div[0].GetAsInt64(i), want_div[i]) << a[i] << " / " << b[i];
  for (int64_t fmod : {0, 1}) {
    Attributes attrs;
    attrs.Set("fmod", fmod);
    std::vector<Tensor> mod = RunCompiled("Mod", {I64s(a), I64s(b)}, attrs);
    ASSERT_EQ(mod.size(), 1u);
    for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(mod[0].GetAsInt64(i), 0) << a[i] << " % " << b[i];
  }
  EXPECT_FALSE(Interpret(g, {I64s(a), I64s(b)}).ok());
}

TEST_F(MathOpsLowerTest, FloatModWithFmodZeroIsRefused) {
  Graph fresh(17);
  std::swap(g, fresh);
  GraphValue* x = In("x", {seq});
  GraphValue* y = In("y", {seq});
  Node* mod = g.AddNode("Mod", {x, y}, 1, {}, "mod");
  ASSERT_TRUE(InferNode(*mod, env, g.opset()).ok());
  g.AddOutput(mod->output(0));
  passes::Group group = MakeGroup(GroupKind::kElementwise, {mod}, {x, y});
  group.elementwise.domain = {seq};
  absl::StatusOr<std::vector<LoweredStep>> steps = LowerGroup(group, &env);
  ASSERT_FALSE(steps.ok());
  EXPECT_NE(steps.status().message().find("fmod=1"), std::string::npos) << steps.status();
}

}  // namespace
}  // namespace shapeshift::codegen::lower::testing
