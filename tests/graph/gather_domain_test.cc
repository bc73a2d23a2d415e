// The domain a model can serve, derived from its Gathers (graph/README.md,
// "Model-implied dim ranges"; graph/value_bounds.h): a table of N rows
// indexed by positions computed from shapes (Range(0, sequence), plus an
// offset, or RoBERTa's CumSum of a 0/1 mask) is read past its end once the
// dim passes N minus the offset. At import an undeclared dim is narrowed to
// where every index provably stays inside, with a note naming the Gather and
// its table; a declared range that goes past it is an error naming the range
// that works; indices read from data are left to the run-time check. A
// bound on a sum of dims (GPT-2 with past) becomes a relation of the domain.
#include <string>

#include "gmock/gmock.h"
#include "graph/onnx/importer.h"
#include "gtest/gtest.h"
#include "tests/graph/imported_model_util.h"
#include "tests/graph/onnx_test_model.h"

namespace shapeshift {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::ExportPath;
using testing::OnnxTestModel;
using testing::RangeOf;

// How the positions of PositionModel are computed from ids i64[batch, seq].
enum class Positions {
  kRange,           // Range(0, seq, 1)                       : 0..seq-1
  kRangePlusTwo,    // Range(0, seq, 1) + 2                   : 2..seq+1
  kMaskCumSum,      // CumSum(ids != 1, axis 1) * mask + 1     : RoBERTa's, up to seq+1
  kTokenIds,        // the ids themselves: data, no bound
};

// ids i64[batch, seq] → embeddings of `positions` in a table of `rows` rows.
std::string PositionModel(Positions positions, int64_t rows) {
  OnnxTestModel m(17);
  m.Input("ids", onnx::TensorProto::INT64, {"batch", "seq"});
  m.FloatInitializer("table", {rows, 4}, std::vector<float>(rows * 4, 0.25f));
  m.IntInitializer("one", {}, {1});
  m.IntInitializer("zero", {}, {0});
  m.IntInitializer("two", {}, {2});
  m.IntInitializer("axis0", {1}, {0});
  m.Node("Shape", {"ids"}, {"shape"}, "shape");
  m.Node("Gather", {"shape", "one"}, {"seq"}, "gather_seq");
  m.Node("Range", {"zero", "seq", "one"}, {"range"}, "range");
  std::string index;
  switch (positions) {
    case Positions::kRange:
      m.Node("Unsqueeze", {"range", "axis0"}, {"pos"}, "unsqueeze");
      index = "pos";
      break;
    case Positions::kRangePlusTwo:
      m.Node("Add", {"range", "two"}, {"shifted"}, "offset");
      m.Node("Unsqueeze", {"shifted", "axis0"}, {"pos"}, "unsqueeze");
      index = "pos";
      break;
    case Positions::kMaskCumSum: {
      m.Node("Equal", {"ids", "one"}, {"is_pad"}, "is_pad");
      m.Node("Not", {"is_pad"}, {"not_pad"}, "not_pad");
      onnx::NodeProto& cast = m.Node("Cast", {"not_pad"}, {"mask"}, "cast_mask");
      OnnxTestModel::AttrInt(cast, "to", onnx::TensorProto::INT64);
      m.Node("CumSum", {"mask", "one"}, {"cumsum"}, "cumsum");
      m.Node("Mul", {"cumsum", "mask"}, {"masked"}, "mul_mask");
      m.Node("Add", {"masked", "one"}, {"pos"}, "add_padding_idx");
      index = "pos";
      break;
    }
    case Positions::kTokenIds:
      index = "ids";
      break;
  }
  m.Node("Gather", {"table", index}, {"y"}, "gather_positions");
  m.Output("y", onnx::TensorProto::FLOAT, {"", "", ""});
  return m.Bytes();
}

TEST(GatherDomainTest, RangeOfTheSequenceBoundsItByTheTableRows) {
  absl::StatusOr<ImportedModel> model = ImportOnnxBytes(PositionModel(Positions::kRange, 32));
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(RangeOf(*model, "seq"), "1..32");
  EXPECT_EQ(RangeOf(*model, "batch"), "1..65536");
  ASSERT_EQ(model->notes.size(), 1u);
  EXPECT_THAT(model->notes[0], HasSubstr("dim 'seq' limited to 1..32: node 'gather_positions' (Gather) reads rows up "
                                         "to seq - 1 of table 'table' (32 rows)"));
  EXPECT_THAT(model->notes[0], HasSubstr("declare --dim seq=lo..hi"));
  // The env keeps the note with the range, for the refusals of the domain checks.
  EXPECT_EQ(model->env->FindSymbol("seq")->range_note, model->notes[0]);
}

TEST(GatherDomainTest, AnOffsetOnThePositionsComesOffTheBound) {
  absl::StatusOr<ImportedModel> model = ImportOnnxBytes(PositionModel(Positions::kRangePlusTwo, 32));
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(RangeOf(*model, "seq"), "1..30");
}

TEST(GatherDomainTest, RobertaStylePositionsFromAMaskCumSumAreBoundedToo) {
  // Positions 1..seq+1 (padding_idx + 1 onwards) in 34 rows: seq <= 32.
  absl::StatusOr<ImportedModel> model = ImportOnnxBytes(PositionModel(Positions::kMaskCumSum, 34));
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(RangeOf(*model, "seq"), "1..32");
  ASSERT_EQ(model->notes.size(), 1u);
  EXPECT_THAT(model->notes[0], HasSubstr("node 'gather_positions' (Gather)"));
}

TEST(GatherDomainTest, TokenIdsAreDataAndLeaveTheDomainAlone) {
  absl::StatusOr<ImportedModel> model = ImportOnnxBytes(PositionModel(Positions::kTokenIds, 32));
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(RangeOf(*model, "seq"), "1..65536");
  EXPECT_THAT(model->notes, IsEmpty());
}

TEST(GatherDomainTest, ADeclaredRangePastTheTableIsAnErrorNamingTheGatherAndTheRangeThatWorks) {
  ImportOptions options;
  options.dim_ranges["seq"] = {1, 100};
  absl::StatusOr<ImportedModel> model = ImportOnnxBytes(PositionModel(Positions::kRange, 32), options);
  ASSERT_FALSE(model.ok());
  EXPECT_THAT(model.status().message(), HasSubstr("node 'gather_positions' (Gather): indices 'pos' reach seq - 1, past "
                                                  "the last row of table 'table' (32 rows)"));
  EXPECT_THAT(model.status().message(), HasSubstr("; the model serves only seq <= 32; declare --dim seq=1..32"));
}

TEST(GatherDomainTest, ADeclaredRangeInsideTheTableImportsUnchanged) {
  ImportOptions options;
  options.dim_ranges["seq"] = {1, 20};
  absl::StatusOr<ImportedModel> model = ImportOnnxBytes(PositionModel(Positions::kRange, 32), options);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(RangeOf(*model, "seq"), "1..20");
  EXPECT_THAT(model->notes, IsEmpty());
}

// ids i64[batch, seq], past f32[batch, past_seq] → rows Range(past_seq,
// past_seq + seq) of a `rows`-row table (GPT-2 with past's positions).
std::string PastPositionModel(int64_t rows) {
  OnnxTestModel m(17);
  m.Input("ids", onnx::TensorProto::INT64, {"batch", "seq"});
  m.Input("past", onnx::TensorProto::FLOAT, {"batch", "past_seq"});
  m.FloatInitializer("table", {rows, 4}, std::vector<float>(rows * 4, 0.25f));
  m.IntInitializer("one", {}, {1});
  m.IntInitializer("axis0", {1}, {0});
  m.Node("Shape", {"ids"}, {"shape"}, "shape");
  m.Node("Gather", {"shape", "one"}, {"seq"}, "gather_seq");
  m.Node("Shape", {"past"}, {"past_shape"}, "past_shape");
  m.Node("Gather", {"past_shape", "one"}, {"past_len"}, "gather_past");
  m.Node("Add", {"past_len", "seq"}, {"end"}, "end");
  m.Node("Range", {"past_len", "end", "one"}, {"range"}, "range");
  m.Node("Unsqueeze", {"range", "axis0"}, {"pos"}, "unsqueeze");
  m.Node("Gather", {"table", "pos"}, {"y"}, "gather_positions");
  m.Output("y", onnx::TensorProto::FLOAT, {"", "", ""});
  return m.Bytes();
}

// A bound on the sum of two dims is no range of either: it becomes a
// relation of the domain (ShapeEnv::domain_constraints()), each dim's range
// shrinks to what the relation leaves it, and the note names the Gather.
TEST(GatherDomainTest, ABoundOnTwoDimsBecomesARelationOfTheDomain) {
  absl::StatusOr<ImportedModel> model = ImportOnnxBytes(PastPositionModel(64));
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_EQ(model->env->domain_constraints().size(), 1u);
  const DomainConstraint& relation = model->env->domain_constraints()[0];
  EXPECT_EQ(relation.predicate.ToString(), "past_seq + seq <= 64");
  // past_seq >= 1 and seq >= 1 (the default lower bound): each is at most 63.
  EXPECT_EQ(RangeOf(*model, "seq"), "1..63");
  EXPECT_EQ(RangeOf(*model, "past_seq"), "1..63");
  EXPECT_EQ(RangeOf(*model, "batch"), "1..65536");
  ASSERT_EQ(model->notes.size(), 1u);
  EXPECT_THAT(model->notes[0], HasSubstr("dims 'past_seq' and 'seq' limited to past_seq + seq <= 64: node "
                                         "'gather_positions' (Gather) reads rows up to past_seq + seq - 1 of table "
                                         "'table' (64 rows)"));
  EXPECT_EQ(relation.note, model->notes[0]);
  EXPECT_EQ(model->env->FindSymbol("seq")->range_note, model->notes[0]);
  // Every question assumes it, and the domain predicate holds it.
  EXPECT_TRUE(model->env->CanProve(Predicate::Le(SymExpr::Symbol("past_seq") + SymExpr::Symbol("seq"), 64)));
  EXPECT_FALSE(model->env->CanProve(Predicate::Le(SymExpr::Symbol("seq"), 62)));
  EXPECT_THAT(model->env->DomainPredicate().ToString(), HasSubstr("past_seq + seq <= 64"));
}

TEST(GatherDomainTest, DeclaredRangesWhoseEveryValueTheRelationLeavesKeepItAsARelation) {
  // seq 1..32 and past_seq 0..40: each value of each range meets
  // past_seq + seq <= 64 with some value of the other, not every pair does.
  ImportOptions options;
  options.dim_ranges["seq"] = {1, 32};
  options.dim_ranges["past_seq"] = {0, 40};
  absl::StatusOr<ImportedModel> model = ImportOnnxBytes(PastPositionModel(64), options);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(RangeOf(*model, "seq"), "1..32");  // declared ranges are never narrowed
  EXPECT_EQ(RangeOf(*model, "past_seq"), "0..40");
  ASSERT_EQ(model->env->domain_constraints().size(), 1u);
  EXPECT_EQ(model->env->domain_constraints()[0].predicate.ToString(), "past_seq + seq <= 64");
}

TEST(GatherDomainTest, ADeclaredValueNoRequestCanHaveIsAnErrorNamingTheRelation) {
  // seq = 80 meets past_seq + seq <= 64 with no past_seq >= 0.
  ImportOptions options;
  options.dim_ranges["seq"] = {1, 80};
  options.dim_ranges["past_seq"] = {0, 40};
  absl::StatusOr<ImportedModel> model = ImportOnnxBytes(PastPositionModel(64), options);
  ASSERT_FALSE(model.ok());
  EXPECT_THAT(model.status().message(), HasSubstr("node 'gather_positions' (Gather): indices 'pos' reach "));
  EXPECT_THAT(model.status().message(), HasSubstr("; the model serves only past_seq + seq <= 64, which no request "
                                                  "with seq = 80 meets within the declared ranges"));
}

TEST(GatherDomainTest, ARelationWithOneDimDeclaredNarrowsTheOther) {
  ImportOptions options;
  options.dim_ranges["past_seq"] = {0, 40};
  absl::StatusOr<ImportedModel> model = ImportOnnxBytes(PastPositionModel(64), options);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(RangeOf(*model, "past_seq"), "0..40");
  EXPECT_EQ(RangeOf(*model, "seq"), "1..64");  // at past_seq = 0
  ASSERT_EQ(model->env->domain_constraints().size(), 1u);
}

// The committed exports (tests/data/models): GPT-2's 1024-row position
// table indexed by Range(sequence) in both exporters' graphs, RoBERTa's 514
// rows indexed from padding_idx + 1 = 2 (cumsum of the mask).
TEST(GatherDomainTest, Gpt2ExportsServeUpTo1024Positions) {
  for (const char* name : {"gpt2-torchscript", "gpt2-dynamo"}) {
    absl::StatusOr<ImportedModel> model = ImportOnnxFile(ExportPath(name));
    ASSERT_TRUE(model.ok()) << name << ": " << model.status();
    EXPECT_EQ(RangeOf(*model, "sequence"), "1..1024") << name;
    EXPECT_EQ(RangeOf(*model, "batch"), "1..65536") << name;
    bool named = false;
    for (const std::string& note : model->notes) {
      named = named || (note.find("dim 'sequence' limited to 1..1024: node '") != std::string::npos &&
                        note.find("(Gather) reads rows up to ") != std::string::npos &&
                        note.find("(1024 rows)") != std::string::npos);
    }
    EXPECT_TRUE(named) << name << ": no note names the Gather: " << ::testing::PrintToString(model->notes);
  }
}

TEST(GatherDomainTest, RobertaExportsServeUpTo512PositionsAfterTheOffset) {
  for (const char* name : {"roberta-base-torchscript", "roberta-base-dynamo"}) {
    absl::StatusOr<ImportedModel> model = ImportOnnxFile(ExportPath(name));
    ASSERT_TRUE(model.ok()) << name << ": " << model.status();
    EXPECT_EQ(RangeOf(*model, "sequence"), "1..512") << name;
    bool named = false;
    for (const std::string& note : model->notes) {
      named = named || (note.find("dim 'sequence' limited to 1..512: node '") != std::string::npos &&
                        note.find("(514 rows)") != std::string::npos);
    }
    EXPECT_TRUE(named) << name << ": " << ::testing::PrintToString(model->notes);
  }
}

TEST(GatherDomainTest, BertExportsStillServeUpTo512) {
  for (const char* name : {"bert-base-torchscript", "bert-base-dynamo", "distilbert-torchscript",
                           "distilbert-dynamo"}) {
    absl::StatusOr<ImportedModel> model = ImportOnnxFile(ExportPath(name));
    ASSERT_TRUE(model.ok()) << name << ": " << model.status();
    EXPECT_EQ(RangeOf(*model, "sequence"), "1..512") << name;
  }
}

// GPT-2 with past reads rows past_sequence .. past_sequence + sequence - 1
// of its 1024-row table: that sum is the limit (ORT fails past it too).
TEST(GatherDomainTest, Gpt2PastExportsServePastPlusNewTokensUpTo1024) {
  for (const char* name : {"gpt2-past-torchscript", "gpt2-past-dynamo"}) {
    absl::StatusOr<ImportedModel> model = ImportOnnxFile(ExportPath(name));
    ASSERT_TRUE(model.ok()) << name << ": " << model.status();
    ASSERT_EQ(model->env->domain_constraints().size(), 1u) << name;
    EXPECT_EQ(model->env->domain_constraints()[0].predicate.ToString(), "past_sequence + sequence <= 1024") << name;
    // Undeclared dims start at 1 (graph/README.md), a cache's length at 0
    // (graph/onnx/cache_dims.h): a prompt of 1024 tokens with an empty cache.
    EXPECT_EQ(RangeOf(*model, "sequence"), "1..1024") << name;
    EXPECT_EQ(RangeOf(*model, "past_sequence"), "0..1023") << name;
    EXPECT_THAT(model->env->domain_constraints()[0].note, HasSubstr("(Gather) reads rows up to ")) << name;
    EXPECT_THAT(model->env->domain_constraints()[0].note, HasSubstr("(1024 rows)")) << name;
  }
}

TEST(GatherDomainTest, Gpt2ExportDeclaredPastItsTableSaysWhatWorks) {
  ImportOptions options;
  options.dim_ranges["sequence"] = {1, 65536};
  absl::StatusOr<ImportedModel> model = ImportOnnxFile(ExportPath("gpt2-torchscript"), options);
  ASSERT_FALSE(model.ok());
  EXPECT_THAT(model.status().message(), HasSubstr("(Gather): indices "));
  EXPECT_THAT(model.status().message(), HasSubstr("(1024 rows)"));
  EXPECT_THAT(model.status().message(), HasSubstr("declare --dim sequence=1..1024"));
}

}  // namespace
}  // namespace shapeshift
