// ONNX Runtime's fused ops expanded at import (graph/onnx/contrib_ops.h): the
// values against the contrib ops' definitions computed here, the outputs a
// fused node may have, and the forms that stay unsupported.
#include <cmath>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "graph/interpreter.h"
#include "graph/onnx/contrib_ops.h"
#include "graph/onnx/importer.h"
#include "graph/onnx/model_summary.h"
#include "gtest/gtest.h"
#include "tests/graph/onnx_test_model.h"

namespace shapeshift {
namespace {

using ::testing::HasSubstr;
using testing::OnnxTestModel;

constexpr int kRows = 3, kHidden = 4;

onnx::NodeProto& Contrib(OnnxTestModel& m, const std::string& op, const std::vector<std::string>& inputs,
                         const std::vector<std::string>& outputs) {
  onnx::NodeProto& n = m.Node(op, inputs, outputs, op + "_node");
  n.set_domain("com.microsoft");
  return n;
}

OnnxTestModel WithContribDomain(int opset = 17) {
  OnnxTestModel m(opset);
  onnx::OperatorSetIdProto* id = m.model().add_opset_import();
  id->set_domain("com.microsoft");
  id->set_version(1);
  m.Input("x", onnx::TensorProto::FLOAT, {"rows", std::to_string(kHidden)})
      .Input("skip", onnx::TensorProto::FLOAT, {"rows", std::to_string(kHidden)});
  return m;
}

std::vector<float> Values(float first, float step) {
  std::vector<float> v(kRows * kHidden);
  for (size_t i = 0; i < v.size(); ++i) v[i] = first + step * static_cast<float>(i);
  return v;
}

std::vector<Tensor> ImportAndInterpret(OnnxTestModel& m) {
  absl::StatusOr<ImportedModel> model = ImportOnnxBytes(m.Bytes());
  EXPECT_TRUE(model.ok()) << model.status();
  if (!model.ok()) return {};
  EXPECT_THAT(model->notes, ::testing::Contains(HasSubstr("ONNX Runtime's fused ops expanded")));
  const std::vector<Tensor> inputs = {Tensor::FromVector<float>(DType::kF32, {kRows, kHidden}, Values(-1.5f, 0.37f)),
                                      Tensor::FromVector<float>(DType::kF32, {kRows, kHidden}, Values(0.8f, -0.11f))};
  absl::StatusOr<std::vector<Tensor>> out = Interpret(*model->graph, inputs);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *out : std::vector<Tensor>{};
}

// LayerNormalization from opset 17, the exporter's decomposition before it.
class SkipLayerNormTest : public ::testing::TestWithParam<int> {};

TEST_P(SkipLayerNormTest, WithBiasAndItsSumOutput) {
  OnnxTestModel m = WithContribDomain(GetParam());
  m.FloatInitializer("gamma", {kHidden}, {1.0f, 2.0f, 0.5f, -1.0f})
      .FloatInitializer("beta", {kHidden}, {0.0f, 0.25f, -0.5f, 1.0f})
      .FloatInitializer("bias", {kHidden}, {0.1f, -0.2f, 0.3f, 0.0f})
      .Output("y", onnx::TensorProto::FLOAT, {"rows", std::to_string(kHidden)})
      .Output("sum", onnx::TensorProto::FLOAT, {"rows", std::to_string(kHidden)});
  OnnxTestModel::AttrFloat(Contrib(m, "SkipLayerNormalization", {"x", "skip", "gamma", "beta", "bias"},
                                   {"y", "", "", "sum"}),
                           "epsilon", 1e-5f);
  std::vector<Tensor> out = ImportAndInterpret(m);
  ASSERT_EQ(out.size(), 2u);
  const std::vector<float> x = Values(-1.5f, 0.37f), skip = Values(0.8f, -0.11f);
  const float gamma[] = {1.0f, 2.0f, 0.5f, -1.0f}, beta[] = {0.0f, 0.25f, -0.5f, 1.0f}, bias[] = {0.1f, -0.2f, 0.3f, 0.0f};
  for (int r = 0; r < kRows; ++r) {
    double s[kHidden], mean = 0, var = 0;
    for (int c = 0; c < kHidden; ++c) mean += s[c] = x[r * kHidden + c] + skip[r * kHidden + c] + bias[c];
    mean /= kHidden;
    for (int c = 0; c < kHidden; ++c) var += (s[c] - mean) * (s[c] - mean);
    var /= kHidden;
    for (int c = 0; c < kHidden; ++c) {
      EXPECT_NEAR(out[1].data<float>()[r * kHidden + c], s[c], 1e-6) << r << "," << c;
      EXPECT_NEAR(out[0].data<float>()[r * kHidden + c], (s[c] - mean) / std::sqrt(var + 1e-5) * gamma[c] + beta[c],
                  1e-5)
          << r << "," << c;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Opsets, SkipLayerNormTest, ::testing::Values(14, 17));

TEST(ContribOpsTest, BiasGeluIsErfGeluAndFastGeluTheTanhForm) {
  OnnxTestModel m = WithContribDomain();
  m.Output("erf", onnx::TensorProto::FLOAT, {"rows", std::to_string(kHidden)})
      .Output("tanh", onnx::TensorProto::FLOAT, {"rows", std::to_string(kHidden)})
      .Output("tanh_nobias", onnx::TensorProto::FLOAT, {"rows", std::to_string(kHidden)});
  Contrib(m, "BiasGelu", {"x", "skip"}, {"erf"});
  Contrib(m, "FastGelu", {"x", "skip"}, {"tanh"});
  Contrib(m, "FastGelu", {"x"}, {"tanh_nobias"});
  std::vector<Tensor> out = ImportAndInterpret(m);
  ASSERT_EQ(out.size(), 3u);
  const std::vector<float> x = Values(-1.5f, 0.37f), skip = Values(0.8f, -0.11f);
  auto erf_gelu = [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); };
  auto tanh_gelu = [](double v) { return 0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v))); };
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_NEAR(out[0].data<float>()[i], erf_gelu(x[i] + skip[i]), 1e-6) << i;
    EXPECT_NEAR(out[1].data<float>()[i], tanh_gelu(x[i] + skip[i]), 1e-6) << i;
    EXPECT_NEAR(out[2].data<float>()[i], tanh_gelu(x[i]), 1e-6) << i;
  }
}

// SkipLayerNormalization's mean output has no default-domain form here: the
// node stays, and both the import and inspect's summary name it.
TEST(ContribOpsTest, AFormWithoutAnExpansionIsReportedUnsupported) {
  OnnxTestModel m = WithContribDomain();
  m.FloatInitializer("gamma", {kHidden}, {1.0f, 1.0f, 1.0f, 1.0f})
      .Output("y", onnx::TensorProto::FLOAT, {"rows", std::to_string(kHidden)})
      .Output("mean", onnx::TensorProto::FLOAT, {"rows", ""});
  Contrib(m, "SkipLayerNormalization", {"x", "skip", "gamma"}, {"y", "mean"});
  EXPECT_FALSE(IsExpandableContribOp(m.model().graph().node(0)));
  absl::StatusOr<ImportedModel> model = ImportOnnxBytes(m.Bytes());
  ASSERT_FALSE(model.ok());
  EXPECT_THAT(model.status().message(),
              HasSubstr("'com.microsoft::SkipLayerNormalization' (node 'SkipLayerNormalization_node', custom domain)"));
  ModelSummary summary = SummarizeOnnxModel(m.model());
  ASSERT_EQ(summary.unsupported.size(), 1u);
  EXPECT_EQ(summary.unsupported[0].op_type, "com.microsoft::SkipLayerNormalization");

  OnnxTestModel ok = WithContribDomain();
  ok.Output("y", onnx::TensorProto::FLOAT, {"rows", std::to_string(kHidden)});
  Contrib(ok, "BiasGelu", {"x", "skip"}, {"y"});
  EXPECT_TRUE(SummarizeOnnxModel(ok.model()).unsupported.empty());
}

}  // namespace
}  // namespace shapeshift
