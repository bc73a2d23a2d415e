// One Session per exporter-made tiny BERT file reproduces all four data sets
// (expected outputs from PyTorch), compiled once.
#include <string>

#include "graph/tensor_proto.h"
#include "runtime/session.h"
#include "tests/runtime/runtime_test_util.h"

namespace shapeshift::runtime {
namespace {

std::string DataPath(const std::string& rel) { return std::string(SHAPESHIFT_SOURCE_DIR) + "/tests/data/models/" + rel; }

class TinyBertSessionTest : public ::testing::TestWithParam<const char*> {};

TEST_P(TinyBertSessionTest, OneSessionReproducesAllFourDataSets) {
  absl::StatusOr<std::unique_ptr<Session>> session = Session::Create(ModelSource::OnnxFile(DataPath(GetParam())));
  ASSERT_TRUE(session.ok()) << session.status();
  for (int set = 0; set < 4; ++set) {
    std::string dir = DataPath("tiny_bert_data/test_data_set_" + std::to_string(set) + "/");
    std::vector<Tensor> inputs = {ReadTensorProtoFile(dir + "input_0.pb").value(),
                                  ReadTensorProtoFile(dir + "input_1.pb").value()};
    Tensor expected = ReadTensorProtoFile(dir + "output_0.pb").value();
    absl::StatusOr<std::vector<Tensor>> out = (*session)->Run(inputs);
    ASSERT_TRUE(out.ok()) << "set " << set << ": " << out.status();
    ASSERT_EQ((*out)[0].shape(), expected.shape()) << "set " << set;
    EXPECT_LE(testing::MaxAbsDiff((*out)[0], expected), 1e-3) << GetParam() << " set " << set;
  }
  EXPECT_EQ((*session)->stats().compiles, 1);
  EXPECT_EQ((*session)->stats().requests, 4);
}

INSTANTIATE_TEST_SUITE_P(Opsets, TinyBertSessionTest,
                         ::testing::Values("tiny_bert_opset14.onnx", "tiny_bert_opset17.onnx"));

}  // namespace
}  // namespace shapeshift::runtime
