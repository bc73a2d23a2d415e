// Dims declared as sums of other dims (`--dim total_sequence=past_sequence+sequence`,
// or recorded in the model's metadata): the axis gets the expression.
#include <string>

#include "gmock/gmock.h"
#include "graph/onnx/importer.h"
#include "gtest/gtest.h"
#include "tests/graph/onnx_test_model.h"

namespace shapeshift {
namespace {

using ::testing::HasSubstr;
using testing::OnnxTestModel;

OnnxTestModel MaskModel() {
  OnnxTestModel m;
  m.Input("past", onnx::TensorProto::FLOAT, {"batch", "past_sequence"})
      .Input("mask", onnx::TensorProto::FLOAT, {"batch", "total_sequence"})
      .Output("y", onnx::TensorProto::FLOAT, {"batch", ""});
  m.Node("Relu", {"mask"}, {"y"}, "relu");
  return m;
}

TEST(DimSumTest, ParsesSumsAndRanges) {
  ImportOptions options;
  ASSERT_TRUE(ParseDimFlag("total_sequence=past_sequence+sequence", &options).ok());
  ASSERT_TRUE(ParseDimFlag("sequence=1..512", &options).ok());
  EXPECT_EQ(options.dim_sums["total_sequence"], (std::vector<std::string>{"past_sequence", "sequence"}));
  EXPECT_EQ(options.dim_ranges["sequence"].max, 512);
  EXPECT_FALSE(ParseDimFlag("total=total+sequence", &options).ok());
  EXPECT_FALSE(ParseDimFlag("total=a++b", &options).ok());
  // The range-only form (the CLI's --dim today) still rejects sums.
  EXPECT_FALSE(ParseDimRangeFlag("total=past_sequence+sequence", &options).ok());
}

TEST(DimSumTest, FlagMakesTheAxisAnExpression) {
  ImportOptions options;
  ASSERT_TRUE(ParseDimFlag("total_sequence=past_sequence+sequence", &options).ok());
  absl::StatusOr<ImportedModel> model = ImportOnnxBytes(MaskModel().Bytes(), options);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->graph->FindValue("mask")->type().ToString(), "f32[batch, past_sequence + sequence]");
  EXPECT_FALSE(model->env->HasSymbol("total_sequence"));
}

TEST(DimSumTest, MetadataRecordsTheRelationAndARangeFlagCannotFreeIt) {
  OnnxTestModel m = MaskModel();
  onnx::StringStringEntryProto* entry = m.model().add_metadata_props();
  entry->set_key("shapeshift.dim.total_sequence");
  entry->set_value("past_sequence+sequence");
  absl::StatusOr<ImportedModel> model = ImportOnnxBytes(m.Bytes());
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->graph->FindValue("mask")->type().ToString(), "f32[batch, past_sequence + sequence]");
  // A range would silently make total_sequence a free dim: refused, naming the relation.
  ImportOptions options;
  ASSERT_TRUE(ParseDimFlag("total_sequence=1..64", &options).ok());
  model = ImportOnnxBytes(m.Bytes(), options);
  ASSERT_FALSE(model.ok());
  EXPECT_THAT(model.status().message(), HasSubstr("--dim total_sequence=1..64"));
  EXPECT_THAT(model.status().message(), HasSubstr("total_sequence = past_sequence + sequence"));
  EXPECT_THAT(model.status().message(), HasSubstr("declare past_sequence and sequence instead"));
  // A sum flag states the relation itself, and wins over the recorded one.
  ImportOptions sum;
  ASSERT_TRUE(ParseDimFlag("total_sequence=sequence+past_sequence", &sum).ok());
  model = ImportOnnxBytes(m.Bytes(), sum);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_FALSE(model->env->HasSymbol("total_sequence"));
}

TEST(DimSumTest, SumOfUnknownDimIsReported) {
  ImportOptions options;
  ASSERT_TRUE(ParseDimFlag("total=past_sequence+sequence", &options).ok());
  absl::StatusOr<ImportedModel> model = ImportOnnxBytes(MaskModel().Bytes(), options);
  ASSERT_FALSE(model.ok());
  EXPECT_THAT(model.status().message(), HasSubstr("declared dim 'total'"));
}

}  // namespace
}  // namespace shapeshift
