// Model-implied dim ranges at import (graph/README.md): an undeclared dim is
// narrowed to the widest range over which the model's own shape equalities
// are proven (a position table of N rows → sequence in 1..N), with a note
// naming the node; declared ranges are never changed, and an error for a
// declared range too wide names the range that works. Also ShapeEnv's
// NarrowRange, the only way a range shrinks.
#include <limits>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "graph/onnx/importer.h"
#include "gtest/gtest.h"
#include "shapes/shape_env.h"
#include "tests/graph/imported_model_util.h"
#include "tests/graph/onnx_test_model.h"

namespace shapeshift {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using testing::ExportPath;
using testing::OnnxTestModel;
using testing::RangeOf;

// x f32[batch, seq, 4] plus the first `seq` rows of a 16-row position table,
// the way exporters slice `position_ids` (Shape → Gather → Unsqueeze →
// Slice): the sum only exists for seq <= 16. With `contract`, the table rows
// are instead a MatMul's contraction dim (x f32[batch, 4, seq]).
std::string PositionTableModel(bool contract = false) {
  OnnxTestModel m(17);
  m.Input("x", onnx::TensorProto::FLOAT,
          contract ? std::vector<std::string>{"batch", "4", "seq"} : std::vector<std::string>{"batch", "seq", "4"});
  m.FloatInitializer("table", {16, 4}, std::vector<float>(64, 0.5f));
  m.IntInitializer("seq_axis", {}, {contract ? 2 : 1});
  m.IntInitializer("zero", {1}, {0});
  m.IntInitializer("axis0", {1}, {0});
  m.Node("Shape", {"x"}, {"shape"}, "shape");
  m.Node("Gather", {"shape", "seq_axis"}, {"s"}, "gather_seq");
  m.Node("Unsqueeze", {"s", "axis0"}, {"s1"}, "unsqueeze_seq");
  m.Node("Slice", {"table", "zero", "s1", "axis0"}, {"positions"}, "slice_positions");
  m.Node(contract ? "MatMul" : "Add", {"x", "positions"}, {"y"}, "add_positions");
  m.Output("y", onnx::TensorProto::FLOAT, {"", "", ""});
  return m.Bytes();
}

TEST(ImportNarrowingTest, UndeclaredDimIsNarrowedToTheTableAndTheNoteNamesTheNode) {
  absl::StatusOr<ImportedModel> model = ImportOnnxBytes(PositionTableModel());
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(RangeOf(*model, "seq"), "1..16");
  EXPECT_EQ(RangeOf(*model, "batch"), "1..65536");  // needs no narrowing: untouched
  ASSERT_EQ(model->notes.size(), 1u);
  EXPECT_THAT(model->notes[0], HasSubstr("dim 'seq' limited to 1..16: node 'add_positions' (Add) needs "));
  EXPECT_THAT(model->notes[0], HasSubstr("declare --dim seq=lo..hi"));
  EXPECT_EQ(model->graph->outputs()[0]->type().ToString(), "f32[batch, seq, 4]");
}

// MPT's ALiBi: scores f32[batch, 4, seq, seq] plus the last `seq` columns of
// a [4, 1, 16] bias table, sliced from 16 - seq (negative past 16 rows: from
// the end). Narrowed so the start is provably >= 0; then the slice is
// [4, 1, seq] and the Add needs nothing more.
std::string AlibiTableModel() {
  OnnxTestModel m(17);
  m.Input("scores", onnx::TensorProto::FLOAT, {"batch", "4", "seq", "seq"});
  std::vector<float> bias(64);
  for (int i = 0; i < 64; ++i) bias[i] = static_cast<float>(i);
  m.FloatInitializer("alibi", {4, 1, 16}, bias);
  m.IntInitializer("key_axis", {}, {3});
  m.IntInitializer("rows", {}, {16});
  m.IntInitializer("axis0", {1}, {0});
  m.IntInitializer("to_end", {1}, {std::numeric_limits<int64_t>::max()});
  m.IntInitializer("axis2", {1}, {2});
  m.Node("Shape", {"scores"}, {"shape"}, "shape");
  m.Node("Gather", {"shape", "key_axis"}, {"s"}, "gather_key_length");
  m.Node("Sub", {"rows", "s"}, {"start"}, "sub_start");
  m.Node("Unsqueeze", {"start", "axis0"}, {"start1"}, "unsqueeze_start");
  m.Node("Slice", {"alibi", "start1", "to_end", "axis2"}, {"bias"}, "slice_alibi");
  m.Node("Add", {"scores", "bias"}, {"y"}, "add_bias");
  m.Output("y", onnx::TensorProto::FLOAT, {"", "", "", ""});
  return m.Bytes();
}

TEST(ImportNarrowingTest, ATableSlicedFromALengthDerivedStartNarrowsToWhereTheStartIsNonNegative) {
  absl::StatusOr<ImportedModel> model = ImportOnnxBytes(AlibiTableModel());
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(RangeOf(*model, "seq"), "1..16");
  ASSERT_EQ(model->notes.size(), 1u);
  EXPECT_THAT(model->notes[0], HasSubstr("dim 'seq' limited to 1..16: node 'slice_alibi' (Slice) slices table "
                                         "'alibi' from start"));
  EXPECT_EQ(model->graph->outputs()[0]->type().ToString(), "f32[batch, 4, seq, seq]");

  ImportOptions options;  // a range inside the table: unchanged, no note
  options.dim_ranges["seq"] = {1, 8};
  absl::StatusOr<ImportedModel> declared = ImportOnnxBytes(AlibiTableModel(), options);
  ASSERT_TRUE(declared.ok()) << declared.status();
  EXPECT_EQ(RangeOf(*declared, "seq"), "1..8");
  EXPECT_THAT(declared->notes, IsEmpty());
}

TEST(ImportNarrowingTest, MatchingDimsOfAMatMulNarrowTheSameWay) {
  absl::StatusOr<ImportedModel> model = ImportOnnxBytes(PositionTableModel(/*contract=*/true));
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(RangeOf(*model, "seq"), "1..16");
  ASSERT_EQ(model->notes.size(), 1u);
  EXPECT_THAT(model->notes[0], HasSubstr("dim 'seq' limited to 1..16: node 'add_positions' (MatMul) needs "));
}

TEST(ImportNarrowingTest, AnotherDimsDeclarationDoesNotStopNarrowing) {
  ImportOptions options;
  options.dim_ranges["batch"] = {1, 8};
  absl::StatusOr<ImportedModel> declared_other = ImportOnnxBytes(PositionTableModel(), options);
  ASSERT_TRUE(declared_other.ok()) << declared_other.status();
  EXPECT_EQ(RangeOf(*declared_other, "batch"), "1..8");
  EXPECT_EQ(RangeOf(*declared_other, "seq"), "1..16");
}

TEST(ImportNarrowingTest, DeclaredRangeTooWideIsAnErrorNamingTheRangeThatWorks) {
  ImportOptions options;
  options.dim_ranges["seq"] = {2, 100};
  absl::StatusOr<ImportedModel> model = ImportOnnxBytes(PositionTableModel(), options);
  ASSERT_FALSE(model.ok());
  EXPECT_THAT(model.status().message(), HasSubstr("node 'add_positions' (Add): cannot broadcast"));
  EXPECT_THAT(model.status().message(), HasSubstr("holds only for seq <= 16; declare --dim seq=2..16"));
}

TEST(ImportNarrowingTest, DeclaredRangesAreNeverChanged) {
  ImportOptions options;
  options.dim_ranges["seq"] = {1, 10};
  options.dim_ranges["batch"] = {1, 8};
  absl::StatusOr<ImportedModel> model = ImportOnnxBytes(PositionTableModel(), options);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(RangeOf(*model, "seq"), "1..10");
  EXPECT_EQ(RangeOf(*model, "batch"), "1..8");
  EXPECT_THAT(model->notes, IsEmpty());
}

TEST(ImportNarrowingTest, RangeRecordedInTheModelCountsAsDeclared) {
  OnnxTestModel m(17);
  m.model().ParseFromString(PositionTableModel());
  onnx::StringStringEntryProto* recorded = m.model().add_metadata_props();
  recorded->set_key("shapeshift.dim.seq");
  recorded->set_value("1..64");
  absl::StatusOr<ImportedModel> model = ImportOnnxBytes(m.Bytes());
  ASSERT_FALSE(model.ok());
  EXPECT_THAT(model.status().message(), HasSubstr("declare --dim seq=1..16"));
}

TEST(ImportNarrowingTest, ConditionOnTwoDimsIsNotNarrowed) {
  OnnxTestModel m(17);
  m.Input("a", onnx::TensorProto::FLOAT, {"batch", "seq"});
  m.Input("b", onnx::TensorProto::FLOAT, {"batch", "len"});
  m.Node("Add", {"a", "b"}, {"y"}, "add_two_dims");
  m.Output("y", onnx::TensorProto::FLOAT, {"", ""});
  absl::StatusOr<ImportedModel> model = ImportOnnxBytes(m.Bytes());
  ASSERT_FALSE(model.ok());
  EXPECT_THAT(model.status().message(),
              HasSubstr("node 'add_two_dims' (Add): cannot broadcast [batch, seq] with [batch, len]: dims seq and len "
                        "are not provably equal and neither is provably 1"));
}

TEST(ImportNarrowingTest, NoRangeMakesTheModelValidKeepsTheError) {
  // seq == 16 is false at seq = 1 already: no range 1..hi is valid.
  OnnxTestModel m(17);
  m.Input("x", onnx::TensorProto::FLOAT, {"seq"});
  m.FloatInitializer("w", {16}, std::vector<float>(16, 1.0f));
  m.Node("Add", {"x", "w"}, {"y"}, "add_fixed");
  m.Output("y", onnx::TensorProto::FLOAT, {""});
  absl::StatusOr<ImportedModel> model = ImportOnnxBytes(m.Bytes());
  ASSERT_FALSE(model.ok());
  EXPECT_THAT(model.status().message(), HasSubstr("node 'add_fixed' (Add): cannot broadcast [seq] with [16]"));
  EXPECT_THAT(model.status().message(), Not(HasSubstr("declare --dim")));
}

// The committed tiny BERT export (TorchScript exporter): its position table
// has 512 rows, so without --dim the sequence dim becomes 1..512.
TEST(ImportNarrowingTest, TinyBertExportImportsWithoutRangesAndStatesItsLimit) {
  absl::StatusOr<ImportedModel> model = ImportOnnxFile(ExportPath("bert-base-torchscript"));
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(RangeOf(*model, "sequence"), "1..512");
  EXPECT_EQ(RangeOf(*model, "batch"), "1..65536");
  ASSERT_EQ(model->notes.size(), 1u);
  EXPECT_THAT(model->notes[0], HasSubstr("dim 'sequence' limited to 1..512: node '/model/embeddings/Add_1' (Add)"));
}

TEST(ImportNarrowingTest, TinyBertExportWithTooWideDeclaredRangeSaysWhatWorks) {
  ImportOptions options;
  options.dim_ranges["sequence"] = {1, 1024};
  absl::StatusOr<ImportedModel> model = ImportOnnxFile(ExportPath("bert-base-torchscript"), options);
  ASSERT_FALSE(model.ok());
  EXPECT_THAT(model.status().message(), HasSubstr("node '/model/embeddings/Add_1' (Add)"));
  EXPECT_THAT(model.status().message(), HasSubstr("holds only for sequence <= 512; declare --dim sequence=1..512"));
}

TEST(ShapeEnvNarrowRangeTest, OnlyShrinks) {
  ShapeEnv env;
  ASSERT_TRUE(env.DeclareSymbol({"seq", 1, 100}).ok());
  EXPECT_FALSE(env.NarrowRange("seq", 0, 50).ok());    // below the current range
  EXPECT_FALSE(env.NarrowRange("seq", 1, 101).ok());   // above it
  EXPECT_FALSE(env.NarrowRange("seq", 20, 10).ok());   // empty
  EXPECT_FALSE(env.NarrowRange("len", 1, 10).ok());    // unknown symbol
  ASSERT_TRUE(env.NarrowRange("seq", 2, 50).ok());
  EXPECT_EQ(env.FindSymbol("seq")->min, 2);
  EXPECT_EQ(env.FindSymbol("seq")->max, 50);
  EXPECT_TRUE(env.CanProve(Predicate::Le(SymExpr::Symbol("seq"), 50)));
}

TEST(ShapeEnvNarrowRangeTest, KeepsTheHintInside) {
  ShapeEnv env;
  ASSERT_TRUE(env.DeclareSymbol({"seq", 1, 100}).ok());
  ASSERT_TRUE(env.SetHint("seq", 80).ok());
  absl::Status s = env.NarrowRange("seq", 1, 64);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("hint 80"));
  EXPECT_EQ(env.FindSymbol("seq")->max, 100);
}

}  // namespace
}  // namespace shapeshift
