// A decoder's cache-length dims start at 0 by default (graph/onnx/cache_dims.h):
// which dims the pattern finds, the importer's default and note, and the
// import again at the usual lower bound where a node needs the dim positive.
#include <string>

#include "gmock/gmock.h"
#include "graph/onnx/cache_dims.h"
#include "graph/onnx/importer.h"
#include "gtest/gtest.h"
#include "tests/graph/imported_model_util.h"
#include "tests/graph/onnx_test_model.h"

namespace shapeshift {
namespace {

using ::testing::HasSubstr;
using testing::OnnxTestModel;
using testing::RangeOf;

// past [batch, past_sequence, 4] ++ relu(x) [batch, sequence, 4] along `axis`.
OnnxTestModel AppendModel(int64_t axis = 1) {
  OnnxTestModel m;
  m.Input("past", onnx::TensorProto::FLOAT, {"batch", "past_sequence", "4"})
      .Input("x", onnx::TensorProto::FLOAT, {"batch", "sequence", "4"})
      .Output("present", onnx::TensorProto::FLOAT, {"batch", "", "4"});
  m.Node("Relu", {"x"}, {"new"}, "relu");
  OnnxTestModel::AttrInt(m.Node("Concat", {"past", "new"}, {"present"}, "append"), "axis", axis);
  return m;
}

TEST(CacheDimsTest, AnInputAppendedToAlongANamedAxisIsACache) {
  for (int64_t axis : {1, -2}) {
    std::map<std::string, CacheDimSource> dims = CacheLengthDims(AppendModel(axis).model().graph());
    ASSERT_EQ(dims.size(), 1u) << axis;
    EXPECT_EQ(dims["past_sequence"].input, "past");
    EXPECT_EQ(dims["past_sequence"].axis, 1);
    EXPECT_EQ(dims["past_sequence"].node, "append");
  }
}

TEST(CacheDimsTest, OtherConcatsAreNot) {
  // Along a fixed axis, appended to the computed value (not its first
  // operand), or two inputs joined with nothing computed.
  EXPECT_TRUE(CacheLengthDims(AppendModel(2).model().graph()).empty());
  OnnxTestModel second;
  second.Input("past", onnx::TensorProto::FLOAT, {"batch", "past_sequence", "4"})
      .Input("x", onnx::TensorProto::FLOAT, {"batch", "sequence", "4"})
      .Output("y", onnx::TensorProto::FLOAT, {"batch", "", "4"});
  second.Node("Relu", {"x"}, {"new"}, "relu");
  OnnxTestModel::AttrInt(second.Node("Concat", {"new", "past"}, {"y"}, "prepend"), "axis", 1);
  EXPECT_TRUE(CacheLengthDims(second.model().graph()).empty());
  OnnxTestModel inputs;
  inputs.Input("a", onnx::TensorProto::FLOAT, {"batch", "n", "4"})
      .Input("b", onnx::TensorProto::FLOAT, {"batch", "m", "4"})
      .Output("y", onnx::TensorProto::FLOAT, {"batch", "", "4"});
  OnnxTestModel::AttrInt(inputs.Node("Concat", {"a", "b"}, {"y"}, "join"), "axis", 1);
  EXPECT_TRUE(CacheLengthDims(inputs.model().graph()).empty());
}

TEST(CacheDimsTest, TheCacheDimStartsAtZeroWithANote) {
  absl::StatusOr<ImportedModel> model = ImportOnnxBytes(AppendModel().Bytes());
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(RangeOf(*model, "past_sequence"), "0..65536");
  EXPECT_EQ(RangeOf(*model, "sequence"), "1..65536");  // the others keep 1
  EXPECT_EQ(RangeOf(*model, "batch"), "1..65536");
  ASSERT_EQ(model->notes.size(), 1u);
  EXPECT_EQ(model->notes[0],
            "dim 'past_sequence' starts at 0: input 'past' is a cache that node 'append' (Concat) appends to, "
            "empty at a generation's first step");
}

TEST(CacheDimsTest, ADeclaredRangeIsTheCallersAndNeedsNoNote) {
  ImportOptions options;
  options.dim_ranges["past_sequence"] = {1, 8};
  absl::StatusOr<ImportedModel> model = ImportOnnxBytes(AppendModel().Bytes(), options);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(RangeOf(*model, "past_sequence"), "1..8");
  EXPECT_TRUE(model->notes.empty());
}

// A Reshape of the cache with -1: undefined for an empty cache (ONNX Runtime
// refuses it), so the import falls back to 1..65536 and says why.
TEST(CacheDimsTest, ANodeThatNeedsTheCacheNonEmptyKeepsTheLowerBoundOne) {
  OnnxTestModel m = AppendModel();
  m.IntInitializer("fold_shape", {2}, {-1, 0});
  m.Output("folded", onnx::TensorProto::FLOAT, {"", ""});
  m.Node("Reshape", {"past", "fold_shape"}, {"folded"}, "fold");
  absl::StatusOr<ImportedModel> model = ImportOnnxBytes(m.Bytes());
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(RangeOf(*model, "past_sequence"), "1..65536");
  EXPECT_EQ(model->graph->FindValue("folded")->type().ToString(), "f32[4*batch, past_sequence]");
  ASSERT_EQ(model->notes.size(), 1u);
  EXPECT_THAT(model->notes[0], HasSubstr("dim 'past_sequence' keeps the default lower bound 1 though input 'past' "
                                         "is a cache (empty at a first step): with past_sequence = 0 the import "
                                         "fails: node 'fold' (Reshape): cannot infer the -1 dim"));
  // Declared with 0, the same Reshape is the import's error.
  ImportOptions options;
  options.dim_ranges["past_sequence"] = {0, 8};
  absl::StatusOr<ImportedModel> declared = ImportOnnxBytes(m.Bytes(), options);
  ASSERT_FALSE(declared.ok());
  EXPECT_THAT(declared.status().message(), HasSubstr("the other dims' product past_sequence may be 0"));
}

}  // namespace
}  // namespace shapeshift
