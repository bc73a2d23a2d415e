// The Gelu op (ONNX opset 20, a shapeshift extension at lower opsets): its
// shape rule keeps symbolic shapes and checks `approximate`; its reference
// kernel computes both forms; the importer accepts it below opset 20.
#include <cmath>

#include "gmock/gmock.h"
#include "graph/onnx/importer.h"
#include "gtest/gtest.h"
#include "tests/graph/onnx_test_model.h"
#include "tests/graph/reference/kernel_test_util.h"
#include "tests/graph/shape_test_util.h"

namespace shapeshift {
namespace {

using ::testing::HasSubstr;
using namespace shapeshift::kernel_testing;
using GeluShapeTest = testing::ShapeRuleTest;

TEST_F(GeluShapeTest, KeepsTheSymbolicShapeAtEveryOpset) {
  for (int opset : {13, 17, 20}) {
    Node* n = Add("Gelu", {In({batch, seq, 8})}, {}, 1, opset);
    ASSERT_TRUE(last_status.ok()) << last_status;
    EXPECT_EQ(TypeOf(n), "f32[batch, seq, 8]");
  }
  Node* tanh = Add("Gelu", {In({seq})}, Attr("approximate", std::string("tanh")));
  ASSERT_TRUE(last_status.ok()) << last_status;
  EXPECT_EQ(TypeOf(tanh), "f32[seq]");
}

TEST_F(GeluShapeTest, UnknownApproximationAndIntegerInputAreErrorsNamingTheNode) {
  Add("Gelu", {In({seq})}, Attr("approximate", std::string("fast")));
  ASSERT_FALSE(last_status.ok());
  EXPECT_THAT(last_status.message(), HasSubstr("fast"));
  EXPECT_THAT(last_status.message(), HasSubstr("n0"));
  Add("Gelu", {In({seq}, DType::kI64)});
  EXPECT_FALSE(last_status.ok());
}

double ErfGelu(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
double TanhGelu(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

TEST(GeluKernelTest, ComputesTheErfAndTanhForms) {
  const std::vector<float> xs = {-6.0f, -1.5f, -0.25f, 0.0f, 0.5f, 1.0f, 3.0f};
  Attributes tanh_attrs;
  tanh_attrs.Set("approximate", std::string("tanh"));
  auto erf_out = RunOp("Gelu", {F32({7}, xs)});
  auto tanh_out = RunOp("Gelu", {F32({7}, xs)}, tanh_attrs);
  ASSERT_TRUE(erf_out.ok()) << erf_out.status();
  ASSERT_TRUE(tanh_out.ok()) << tanh_out.status();
  std::vector<float> e = Values<float>((*erf_out)[0]);
  std::vector<float> t = Values<float>((*tanh_out)[0]);
  for (size_t i = 0; i < xs.size(); ++i) {
    EXPECT_NEAR(e[i], ErfGelu(xs[i]), 1e-6) << xs[i];
    EXPECT_NEAR(t[i], TanhGelu(xs[i]), 1e-6) << xs[i];
  }
  // The forms differ (by up to ~1e-3 near |x| = 2), so the attribute is honoured.
  EXPECT_NE(Values<float>((*RunOp("Gelu", {F32({1}, {-1.5f})}))[0])[0],
            Values<float>((*RunOp("Gelu", {F32({1}, {-1.5f})}, tanh_attrs))[0])[0]);
}

TEST(GeluKernelTest, BadApproximationIsAnErrorNamingTheNode) {
  Attributes bad;
  bad.Set("approximate", std::string("fast"));
  auto out = RunOp("Gelu", {F32({1}, {1.0f})}, bad);
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("test_node"));
  EXPECT_THAT(out.status().message(), HasSubstr("fast"));
}

// libonnx 1.12 has no Gelu schema, so its checker rejects the op: models
// using it are imported with the checker off (shapeshift checks the node).
TEST(GeluImportTest, AcceptedBelowOpset20) {
  for (int opset : {14, 17}) {
    testing::OnnxTestModel m(opset);
    m.Input("x", onnx::TensorProto::FLOAT, {"batch", "8"});
    onnx::NodeProto& n = m.Node("Gelu", {"x"}, {"y"});
    onnx::AttributeProto* a = n.add_attribute();
    a->set_name("approximate");
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s("tanh");
    m.Output("y", onnx::TensorProto::FLOAT, {"batch", "8"});
    ImportOptions options;
    options.run_checker = false;
    absl::StatusOr<ImportedModel> model = ImportOnnxBytes(m.Bytes(), options);
    ASSERT_TRUE(model.ok()) << model.status();
    EXPECT_EQ(model->graph->outputs()[0]->type().ToString(), "f32[batch, 8]");
    EXPECT_EQ(model->graph->nodes()[0]->op_type(), "Gelu");
  }
}

}  // namespace
}  // namespace shapeshift
