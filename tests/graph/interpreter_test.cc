// The graph interpreter: input validation against symbolic types, and the
// end-to-end check that one imported tiny-BERT graph per opset reproduces
// all four exporter test data sets (four different (batch, seq) shapes).
#include "graph/interpreter.h"

#include <cmath>

#include "gmock/gmock.h"
#include "graph/onnx/importer.h"
#include "graph/tensor_proto.h"
#include "gtest/gtest.h"
#include "tests/graph/onnx_test_model.h"

namespace shapeshift {
namespace {

using ::testing::HasSubstr;
using testing::OnnxTestModel;

std::string DataPath(const std::string& rel) {
  return std::string(SHAPESHIFT_SOURCE_DIR) + "/tests/data/models/" + rel;
}

ImportedModel AddTwoInputs() {
  OnnxTestModel m(17);
  m.Input("a", onnx::TensorProto::FLOAT, {"batch", "seq"});
  m.Input("b", onnx::TensorProto::FLOAT, {"batch", "seq"});
  m.Node("Add", {"a", "b"}, {"y"});
  m.Output("y", onnx::TensorProto::FLOAT, {"batch", "seq"});
  return ImportOnnxBytes(m.Bytes()).value();
}

Tensor Filled(std::vector<int64_t> shape, float v) {
  Tensor t = Tensor::Zeros(DType::kF32, std::move(shape)).value();
  for (int64_t i = 0; i < t.num_elements(); ++i) t.mutable_data<float>()[i] = v;
  return t;
}

TEST(InterpreterTest, RunsAndBindsSymbols) {
  ImportedModel model = AddTwoInputs();
  std::vector<Tensor> inputs = {Filled({2, 3}, 1.5f), Filled({2, 3}, 2.0f)};
  absl::StatusOr<Assignment> bound = BindInputSymbols(*model.graph, inputs);
  ASSERT_TRUE(bound.ok()) << bound.status();
  EXPECT_EQ(bound->at("batch"), 2);
  EXPECT_EQ(bound->at("seq"), 3);
  absl::StatusOr<std::vector<Tensor>> out = Interpret(*model.graph, inputs);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 1u);
  EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_FLOAT_EQ((*out)[0].GetAsDouble(5), 3.5);
}

TEST(InterpreterTest, InconsistentSymbolsAreNamed) {
  ImportedModel model = AddTwoInputs();
  absl::StatusOr<std::vector<Tensor>> out = Interpret(*model.graph, {Filled({2, 3}, 1), Filled({2, 4}, 1)});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("input 'b' dim 1 is 4"));
  EXPECT_THAT(out.status().message(), HasSubstr("seq = 3 from 'a'"));
}

TEST(InterpreterTest, WrongCountRankOrDtypeAreNamed) {
  ImportedModel model = AddTwoInputs();
  EXPECT_THAT(Interpret(*model.graph, {Filled({2, 3}, 1)}).status().message(), HasSubstr("expected 2 inputs (a, b)"));
  EXPECT_THAT(Interpret(*model.graph, {Filled({2, 3}, 1), Filled({6}, 1)}).status().message(),
              HasSubstr("input 'b' has rank 1"));
  Tensor ints = Tensor::Zeros(DType::kI64, {2, 3}).value();
  EXPECT_THAT(Interpret(*model.graph, {Filled({2, 3}, 1), ints}).status().message(),
              HasSubstr("input 'b' has dtype i64"));
}

TEST(InterpreterTest, ConstantDimsAreChecked) {
  OnnxTestModel m(17);
  m.Input("x", onnx::TensorProto::FLOAT, {"n", "4"});
  m.Node("Relu", {"x"}, {"y"});
  m.Output("y", onnx::TensorProto::FLOAT, {"n", "4"});
  ImportedModel model = ImportOnnxBytes(m.Bytes()).value();
  EXPECT_THAT(Interpret(*model.graph, {Filled({2, 5}, 1)}).status().message(), HasSubstr("dim 1 is 5"));
}

TEST(InterpreterTest, DataDependentDimsAreBoundPerRun) {
  OnnxTestModel m(13);
  m.Input("x", onnx::TensorProto::FLOAT, {"n"});
  m.Input("axes", onnx::TensorProto::INT64, {"1"});
  m.Node("Unsqueeze", {"x", "axes"}, {"y"});
  m.Output("y", onnx::TensorProto::FLOAT, {"", ""});
  ImportedModel model = ImportOnnxBytes(m.Bytes()).value();
  Tensor axis0 = Tensor::FromVector<int64_t>(DType::kI64, {1}, {0});
  Tensor axis1 = Tensor::FromVector<int64_t>(DType::kI64, {1}, {1});
  absl::StatusOr<std::vector<Tensor>> a = Interpret(*model.graph, {Filled({3}, 1), axis0});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ((*a)[0].shape(), (std::vector<int64_t>{1, 3}));
  absl::StatusOr<std::vector<Tensor>> b = Interpret(*model.graph, {Filled({3}, 1), axis1});
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ((*b)[0].shape(), (std::vector<int64_t>{3, 1}));
}

struct DataSet {
  std::vector<Tensor> inputs;
  Tensor expected;
};

DataSet LoadDataSet(int index) {
  std::string dir = DataPath("tiny_bert_data/test_data_set_" + std::to_string(index) + "/");
  DataSet d;
  d.inputs.push_back(ReadTensorProtoFile(dir + "input_0.pb").value());
  d.inputs.push_back(ReadTensorProtoFile(dir + "input_1.pb").value());
  d.expected = ReadTensorProtoFile(dir + "output_0.pb").value();
  return d;
}

class TinyBertTest : public ::testing::TestWithParam<const char*> {};

TEST_P(TinyBertTest, OneGraphReproducesAllFourDataSets) {
  absl::StatusOr<ImportedModel> model = ImportOnnxFile(DataPath(GetParam()));
  ASSERT_TRUE(model.ok()) << model.status();
  for (int set = 0; set < 4; ++set) {
    DataSet data = LoadDataSet(set);
    absl::StatusOr<std::vector<Tensor>> out = Interpret(*model->graph, data.inputs);
    ASSERT_TRUE(out.ok()) << "set " << set << ": " << out.status();
    const Tensor& got = (*out)[0];
    ASSERT_EQ(got.shape(), data.expected.shape()) << "set " << set;
    double max_err = 0;
    for (int64_t i = 0; i < got.num_elements(); ++i) {
      max_err = std::max(max_err, std::abs(got.GetAsDouble(i) - data.expected.GetAsDouble(i)));
    }
    EXPECT_LE(max_err, 1e-4) << GetParam() << " set " << set;
    RecordProperty("max_abs_err_set" + std::to_string(set), std::to_string(max_err));
  }
}

INSTANTIATE_TEST_SUITE_P(Opsets, TinyBertTest,
                         ::testing::Values("tiny_bert_opset14.onnx", "tiny_bert_opset17.onnx"));

}  // namespace
}  // namespace shapeshift
