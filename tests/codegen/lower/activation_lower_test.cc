// ONNX's parameterized activations (codegen/lower/activation_math.h): Elu,
// Selu, Celu, HardSigmoid, HardSwish, Softplus, Softsign, Mish, with ONNX's
// default and other attributes, against the interpreter on the CPU backend
// and under the CUDA host emulation, at awkward lengths; special values
// (NaN, ±inf, ±0, denormals, the ends of the f32 range, the saturation
// points) by the one comparison rule, tightened to 1e-4 relative. ONNX
// Runtime's answers for the same values: tests/runtime/special_values_test.cc.
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "codegen/lower/activation_math.h"
#include "graph/tensor_compare.h"
#include "tests/codegen/lower/lower_test_util.h"

namespace shapeshift::codegen::lower::testing {
namespace {

using passes::GroupKind;

const std::vector<float>& Palette() {
  static const auto* v = new std::vector<float>{
      std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
      -std::numeric_limits<float>::infinity(), 0.0f, -0.0f, 1e-40f, -1e-40f, 1e-30f, -1e-30f,
      std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(), 1e-3f, -1e-3f, 0.0099f, -0.0099f,
      0.011f, -0.011f, 1.0f, -1.0f, -2.5f, 2.5f, 3.0f, -3.0f, 29.5f, 30.5f, -30.0f, 88.0f, -88.0f, -104.0f, 104.0f};
  return *v;
}

struct Case {
  std::string op;
  Attributes attrs;
};

std::vector<Case> Cases() {
  auto with = [](std::string op, std::vector<std::pair<std::string, float>> attrs) {
    Case c{std::move(op), {}};
    for (auto& [name, value] : attrs) c.attrs.Set(name, value);
    return c;
  };
  return {with("Elu", {}),          with("Elu", {{"alpha", 0.5f}}),
          with("Selu", {}),         with("Selu", {{"alpha", 2.0f}, {"gamma", 3.0f}}),
          with("Celu", {}),         with("Celu", {{"alpha", 2.0f}}),
          with("HardSigmoid", {}),  with("HardSigmoid", {{"alpha", 0.5f}, {"beta", 0.6f}}),
          with("HardSwish", {}),    with("Softplus", {}),
          with("Softsign", {}),     with("Mish", {})};
}

TEST_F(LowerTest, ActivationsMatchTheInterpreterWithSpecialValues) {
  EXPECT_TRUE(IsActivation("Mish"));
  EXPECT_FALSE(IsActivation("Relu"));
  for (const Case& c : Cases()) {
    Graph fresh(17);
    std::swap(g, fresh);
    GraphValue* x = In("x", {batch, seq});
    Node* node = Op(c.op, {x}, c.attrs);
    g.AddOutput(node->output(0));
    passes::Group group = MakeGroup(GroupKind::kElementwise, {node}, {x});
    group.elementwise.domain = node->output(0)->type().shape;
    absl::StatusOr<std::vector<LoweredStep>> steps = LowerGroup(group, &env);
    ASSERT_TRUE(steps.ok()) << steps.status();
    for (int64_t s : AwkwardSeqs()) {
      SCOPED_TRACE(absl::StrCat(c.op, c.attrs.Has("alpha") ? " with alpha" : "", " seq ", s));
      std::vector<float> v = Random(2 * s, 7 + s);
      for (int64_t i = 0; i < 2 * s; ++i) {
        if (i % 2 == 0) v[i] = Palette()[(i / 2) % Palette().size()];
      }
      std::vector<Tensor> in = {Tensor::FromVector<float>(DType::kF32, {2, s}, v)};
      absl::StatusOr<std::vector<Tensor>> want = Interpret(g, in);
      ASSERT_TRUE(want.ok()) << want.status();
      absl::StatusOr<std::vector<Tensor>> cpu = RunSteps(*steps, in);
      ASSERT_TRUE(cpu.ok()) << cpu.status();
      TensorComparison on_cpu = CompareTensorLists(*cpu, *want, {1e-4, 1e-6});
      EXPECT_TRUE(on_cpu.agree) << "cpu: " << on_cpu.first_mismatch;
      absl::StatusOr<std::vector<Tensor>> cuda = cuda::testing::RunStepsEmulated(g, *steps, in);
      ASSERT_TRUE(cuda.ok()) << cuda.status();
      TensorComparison on_cuda = CompareTensorLists(*cuda, *want, {1e-4, 1e-6});
      EXPECT_TRUE(on_cuda.agree) << "cuda (emulated): " << on_cuda.first_mismatch;
    }
  }
}

}  // namespace
}  // namespace shapeshift::codegen::lower::testing
