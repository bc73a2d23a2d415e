// Newer-than-libonnx models: IR 10 / opset 18 files are checked by the 1.12
// checker where its answer means something, relaxations are reported in
// ImportedModel::notes, and a feature IR 8 cannot express is an error.
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "graph/onnx/importer.h"
#include "gtest/gtest.h"
#include "tests/graph/onnx_test_model.h"

namespace shapeshift {
namespace {

using ::testing::HasSubstr;
using testing::OnnxTestModel;

// y = Relu(x) with x: f32[batch, 4].
OnnxTestModel ReluModel(int ir_version, int opset = 17) {
  OnnxTestModel m(opset);
  m.model().set_ir_version(ir_version);
  m.Input("x", onnx::TensorProto::FLOAT, {"batch", "4"}).Output("y", onnx::TensorProto::FLOAT, {"batch", "4"});
  m.Node("Relu", {"x"}, {"y"}, "relu");
  return m;
}

TEST(ModelCheckerTest, Ir8ModelHasNoNotes) {
  absl::StatusOr<ImportedModel> model = ImportOnnxBytes(ReluModel(8).Bytes());
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_TRUE(model->notes.empty());
}

TEST(ModelCheckerTest, Ir10ModelWithNodeMetadataIsCheckedAsIr8) {
  OnnxTestModel m = ReluModel(10);
  // NodeProto.metadata_props (field 9, IR 10): unknown to libonnx 1.12.
  onnx::StringStringEntryProto entry;
  entry.set_key("pkg.torch.onnx.stack_trace");
  entry.set_value("model.py:12");
  m.model().mutable_graph()->mutable_node(0)->GetReflection()->MutableUnknownFields(
      m.model().mutable_graph()->mutable_node(0))->AddLengthDelimited(9, entry.SerializeAsString());
  absl::StatusOr<ImportedModel> model = ImportOnnxBytes(m.Bytes());
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->ir_version, 10);
  ASSERT_EQ(model->notes.size(), 1u);
  EXPECT_THAT(model->notes[0], HasSubstr("IR version 10 checked as IR 8"));
}

TEST(ModelCheckerTest, Ir10ModelUsingANewFieldIsRejectedNamingIt) {
  OnnxTestModel m = ReluModel(10);
  // NodeProto.overload (field 8): a function overload, not metadata.
  onnx::NodeProto* node = m.model().mutable_graph()->mutable_node(0);
  node->GetReflection()->MutableUnknownFields(node)->AddLengthDelimited(8, "v2");
  absl::StatusOr<ImportedModel> model = ImportOnnxBytes(m.Bytes());
  ASSERT_FALSE(model.ok());
  EXPECT_THAT(model.status().message(), HasSubstr("field 8 of NodeProto"));
}

TEST(ModelCheckerTest, Ir10ModelWithFloat8IsRejected) {
  OnnxTestModel m = ReluModel(10);
  m.model().mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(17);
  absl::StatusOr<ImportedModel> model = ImportOnnxBytes(m.Bytes());
  ASSERT_FALSE(model.ok());
  EXPECT_THAT(model.status().message(), HasSubstr("element type 17"));
}

TEST(ModelCheckerTest, ElementTypesAreNamedByTheIrVersionThatDefinesThem) {
  for (const auto& [type, phrase] : std::vector<std::pair<int, std::string>>{
           {17, "FLOAT8E4M3FN (IR 9+)"}, {22, "INT4 (IR 10+)"}, {23, "FLOAT4E2M1 (IR 11+)"},
           // Not an element type at all: never described as float8/int4.
           {999, "unknown element type 999 (no ONNX IR version up to 11 defines it)"}}) {
    OnnxTestModel m = ReluModel(10);
    m.model().mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(type);
    absl::StatusOr<ImportedModel> model = ImportOnnxBytes(m.Bytes());
    ASSERT_FALSE(model.ok()) << type;
    EXPECT_THAT(model.status().message(), HasSubstr(phrase)) << type;
    if (type == 999) EXPECT_THAT(model.status().message(), ::testing::Not(HasSubstr("float8")));
  }
}

TEST(ModelCheckerTest, StillRejectsWhatTheCheckerRejects) {
  OnnxTestModel m = ReluModel(10);
  m.model().mutable_graph()->mutable_node(0)->set_input(0, "undefined");
  absl::StatusOr<ImportedModel> model = ImportOnnxBytes(m.Bytes());
  ASSERT_FALSE(model.ok());
  EXPECT_THAT(model.status().message(), HasSubstr("ONNX checker rejected the model (checked as IR 8)"));
}

// The checker's own text puts its context after a literal "\n\n" (two
// backslash-n pairs, shown as typed by a terminal): the error is one line,
// the context in parentheses.
TEST(ModelCheckerTest, TheCheckersMessageIsOneLineWithItsContext) {
  for (int ir : {8, 10}) {
    OnnxTestModel m = ReluModel(ir);
    m.model().mutable_graph()->mutable_node(0)->add_input("x");  // Relu takes one input
    absl::StatusOr<ImportedModel> model = ImportOnnxBytes(m.Bytes());
    ASSERT_FALSE(model.ok()) << ir;
    const std::string message(model.status().message());
    EXPECT_THAT(message, HasSubstr("Node (relu) has input size 2 not in range [min=1, max=1] (Bad node spec"));
    EXPECT_THAT(message, HasSubstr("OpType: Relu)"));
    EXPECT_EQ(message.find("\\n"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    EXPECT_EQ(message.find("==>"), std::string::npos) << message;
  }
}

TEST(ModelCheckerTest, Opset18SplitIsCheckedByShapeRulesAndNoted) {
  OnnxTestModel m(18);
  m.Input("x", onnx::TensorProto::FLOAT, {"batch", "6"})
      .Output("a", onnx::TensorProto::FLOAT, {"batch", "2"})
      .Output("b", onnx::TensorProto::FLOAT, {"batch", "2"})
      .Output("c", onnx::TensorProto::FLOAT, {"batch", "2"});
  onnx::NodeProto& split = m.Node("Split", {"x"}, {"a", "b", "c"}, "split");
  OnnxTestModel::AttrInt(split, "axis", 1);
  OnnxTestModel::AttrInt(split, "num_outputs", 3);
  absl::StatusOr<ImportedModel> model = ImportOnnxBytes(m.Bytes());
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_EQ(model->notes.size(), 1u);
  EXPECT_THAT(model->notes[0], HasSubstr("Split were not schema-checked"));
  // The nodes keep their own domain after the check.
  EXPECT_EQ(model->graph->FindNode("split")->op_type(), "Split");
}

TEST(ModelCheckerTest, DynamoExportImportsWithNotes) {
  absl::StatusOr<ImportedModel> model =
      ImportOnnxFile(std::string(SHAPESHIFT_SOURCE_DIR) + "/tests/data/models/gpt2-dynamo/model.onnx");
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->ir_version, 10);
  EXPECT_EQ(model->opset, 18);
  // IR 10 checked as 8; Split not schema-checked; sequence limited to the
  // 1024 rows of the position table (tests/graph/gather_domain_test.cc).
  ASSERT_EQ(model->notes.size(), 3u);
  EXPECT_THAT(model->notes[2], HasSubstr("dim 'sequence' limited to 1..1024"));
}

}  // namespace
}  // namespace shapeshift
