// ONNX importer: symbols from dim_param names, anonymous dims, initializers
// (inline and external data), opset variants, the tiny BERT exports, and a
// clear error for each kind of malformed model.
#include "graph/onnx/importer.h"

#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "graph/printer.h"
#include "gtest/gtest.h"
#include "tests/graph/onnx_test_model.h"

namespace shapeshift {
namespace {

using ::testing::HasSubstr;
using testing::AttentionReshapeModel;
using testing::OnnxTestModel;

std::string ModelPath(const std::string& name) {
  return std::string(SHAPESHIFT_SOURCE_DIR) + "/tests/data/models/" + name;
}

TEST(ImporterTest, NamedDimsShareOneSymbolAnonymousDimsGetFreshOnes) {
  OnnxTestModel m(17);
  m.Input("a", onnx::TensorProto::INT64, {"batch", "seq"});
  m.Input("b", onnx::TensorProto::INT64, {"batch", "seq"});
  m.Input("c", onnx::TensorProto::FLOAT, {"", "4"});
  m.Node("Add", {"a", "b"}, {"y"});
  m.Output("y", onnx::TensorProto::INT64, {"batch", "seq"});
  m.Output("c", onnx::TensorProto::FLOAT, {"", "4"});
  ImportOptions options;
  options.dim_ranges["seq"] = {1, 512};
  absl::StatusOr<ImportedModel> model = ImportOnnxBytes(m.Bytes(), options);
  ASSERT_TRUE(model.ok()) << model.status();
  const Graph& g = *model->graph;
  EXPECT_EQ(g.inputs()[0]->type().ToString(), "i64[batch, seq]");
  EXPECT_EQ(g.inputs()[1]->type(), g.inputs()[0]->type());
  SymExpr anon = g.inputs()[2]->type().shape[0];
  EXPECT_TRUE(anon.IsSymbol());
  EXPECT_EQ(g.outputs()[0]->type().ToString(), "i64[batch, seq]");
  const SymbolInfo* seq = model->env->FindSymbol("seq");
  ASSERT_NE(seq, nullptr);
  EXPECT_EQ(seq->max, 512);
  const SymbolInfo* batch = model->env->FindSymbol("batch");
  EXPECT_EQ(batch->min, kDefaultDimMin);
  EXPECT_EQ(batch->max, kDefaultDimMax);
  EXPECT_EQ(model->opset, 17);
}

TEST(ImporterTest, ShapeChainReshapePrintsSymbolically) {
  for (int opset : {11, 14}) {
    absl::StatusOr<ImportedModel> model = ImportOnnxBytes(AttentionReshapeModel(opset).Bytes());
    ASSERT_TRUE(model.ok()) << model.status();
    EXPECT_EQ(model->graph->outputs()[0]->type().ToString(), "f32[batch, seq, 12, 64]") << "opset " << opset;
    EXPECT_THAT(model->graph->ToString(), HasSubstr("= Reshape(%x, %target)"));
  }
}

TEST(ImporterTest, InitializersAndConstantNodesBecomeConstants) {
  OnnxTestModel m(13);
  m.Input("x", onnx::TensorProto::FLOAT, {"n", "2"});
  m.FloatInitializer("w", {2, 3}, {1, 2, 3, 4, 5, 6});
  auto& c = m.Node("Constant", {}, {"axes"});
  OnnxTestModel::AttrIntTensor(c, "value", {1}, {0});
  m.Node("MatMul", {"x", "w"}, {"y"});
  m.Node("Unsqueeze", {"y", "axes"}, {"z"});
  m.Output("z", onnx::TensorProto::FLOAT, {"", "", ""});
  absl::StatusOr<ImportedModel> model = ImportOnnxBytes(m.Bytes());
  ASSERT_TRUE(model.ok()) << model.status();
  const Graph& g = *model->graph;
  EXPECT_EQ(g.constants().size(), 2u);
  EXPECT_EQ(g.num_nodes(), 2);
  EXPECT_TRUE(g.FindValue("axes")->is_constant());
  EXPECT_EQ(g.outputs()[0]->type().ToString(), "f32[1, n, 3]");
}

TEST(ImporterTest, ExternalDataIsReadRelativeToTheModel) {
  std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "shapeshift_external";
  std::filesystem::create_directories(dir);
  std::vector<float> weights = {1, 2, 3, 4};
  {
    std::ofstream f(dir / "weights.bin", std::ios::binary);
    f.write(reinterpret_cast<const char*>(weights.data()), weights.size() * sizeof(float));
  }
  OnnxTestModel m(17);
  m.Input("x", onnx::TensorProto::FLOAT, {"n", "2"});
  onnx::TensorProto* w = m.model().mutable_graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(2);
  w->add_dims(2);
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* loc = w->add_external_data();
  loc->set_key("location");
  loc->set_value("weights.bin");
  m.Node("MatMul", {"x", "w"}, {"y"});
  m.Output("y", onnx::TensorProto::FLOAT, {"", ""});
  std::string path = (dir / "model.onnx").string();
  {
    std::ofstream f(path, std::ios::binary);
    f << m.Bytes();
  }
  absl::StatusOr<ImportedModel> model = ImportOnnxFile(path);
  ASSERT_TRUE(model.ok()) << model.status();
  const Tensor* t = model->graph->FindValue("w")->constant();
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->GetAsDouble(3), 4.0);
  // Missing file: the checker's error names the file; our own names the initializer.
  std::filesystem::remove(dir / "weights.bin");
  absl::StatusOr<ImportedModel> broken = ImportOnnxFile(path);
  ASSERT_FALSE(broken.ok());
  EXPECT_THAT(std::string(broken.status().message()), HasSubstr("weights.bin"));
  ImportOptions no_checker;
  no_checker.run_checker = false;
  broken = ImportOnnxFile(path, no_checker);
  ASSERT_FALSE(broken.ok());
  EXPECT_THAT(std::string(broken.status().message()), HasSubstr("initializer 'w'"));
}

TEST(ImporterTest, OpsetVariantsOfSqueezeSplitClipReduceSum) {
  for (int opset : {11, 13}) {
    OnnxTestModel m(opset);
    m.Input("x", onnx::TensorProto::FLOAT, {"batch", "1", "6"});
    if (opset >= 13) {
      m.IntInitializer("axes", {1}, {1}).IntInitializer("split", {2}, {2, 4});
      m.Node("Squeeze", {"x", "axes"}, {"sq"});
      auto& s = m.Node("Split", {"sq", "split"}, {"p", "q"});
      OnnxTestModel::AttrInt(s, "axis", 1);
      m.Node("ReduceSum", {"q", "axes"}, {"r"});
    } else {
      auto& sq = m.Node("Squeeze", {"x"}, {"sq"});
      OnnxTestModel::AttrInts(sq, "axes", {1});
      auto& s = m.Node("Split", {"sq"}, {"p", "q"});
      OnnxTestModel::AttrInt(s, "axis", 1);
      OnnxTestModel::AttrInts(s, "split", {2, 4});
      auto& r = m.Node("ReduceSum", {"q"}, {"r"});
      OnnxTestModel::AttrInts(r, "axes", {1});
    }
    m.FloatInitializer("lo", {}, {0.f}).FloatInitializer("hi", {}, {1.f});
    m.Node("Clip", {"p", "lo", "hi"}, {"c"});
    m.Output("c", onnx::TensorProto::FLOAT, {"", ""});
    m.Output("r", onnx::TensorProto::FLOAT, {"", ""});
    absl::StatusOr<ImportedModel> model = ImportOnnxBytes(m.Bytes());
    ASSERT_TRUE(model.ok()) << "opset " << opset << ": " << model.status();
    EXPECT_EQ(model->graph->outputs()[0]->type().ToString(), "f32[batch, 2]");
    EXPECT_EQ(model->graph->outputs()[1]->type().ToString(), "f32[batch, 1]");
  }
}

TEST(ImporterTest, TinyBertExportsImportWithSymbolicShapes) {
  for (const char* file : {"tiny_bert_opset14.onnx", "tiny_bert_opset17.onnx"}) {
    absl::StatusOr<ImportedModel> model = ImportOnnxFile(ModelPath(file));
    ASSERT_TRUE(model.ok()) << file << ": " << model.status();
    const Graph& g = *model->graph;
    EXPECT_EQ(g.inputs()[0]->type().ToString(), "i64[batch, sequence]") << file;
    EXPECT_EQ(g.outputs()[0]->type().ToString(), "f32[batch, sequence, 64]") << file;
    // Every Reshape target is symbolic: no data-dependent dims anywhere.
    for (const Node* n : g.nodes()) {
      for (const Value* v : n->outputs()) {
        for (SymExpr d : v->type().shape) {
          for (const std::string& s : d.Symbols()) {
            EXPECT_TRUE(s == "batch" || s == "sequence") << file << ": " << PrintNode(*n);
          }
        }
      }
      if (n->op_type() == "Reshape" && n->output(0)->type().rank() == 4) {
        EXPECT_EQ(n->output(0)->type().ToString(), "f32[batch, sequence, 4, 16]") << file;
      }
    }
    EXPECT_TRUE(model->env->guards().empty()) << file;
  }
}

// --- Malformed models: each gives one clear error naming the problem.

TEST(ImporterErrorsTest, TruncatedBytes) {
  std::string bytes = AttentionReshapeModel().Bytes();
  absl::StatusOr<ImportedModel> model = ImportOnnxBytes(bytes.substr(0, bytes.size() / 2), {}, "half.onnx");
  ASSERT_FALSE(model.ok());
  EXPECT_THAT(model.status().message(), HasSubstr("half.onnx"));
  EXPECT_THAT(model.status().message(), HasSubstr("not a valid ONNX model"));
  EXPECT_FALSE(ImportOnnxBytes("").ok());
  EXPECT_THAT(ImportOnnxFile("/nonexistent/model.onnx").status().message(), HasSubstr("cannot open"));
}

TEST(ImporterErrorsTest, ADirectoryIsNamedAsOne) {
  // Not "not a valid ONNX model": reading a directory is not a parse failure.
  const std::string dir = ::testing::TempDir();
  absl::StatusOr<ImportedModel> model = ImportOnnxFile(dir);
  ASSERT_FALSE(model.ok());
  EXPECT_THAT(model.status().message(), HasSubstr("is a directory"));
  EXPECT_THAT(model.status().message(), HasSubstr(dir));
  EXPECT_THAT(model.status().message(), ::testing::Not(HasSubstr("not a valid ONNX model")));
}

TEST(ImporterErrorsTest, UnsupportedOpsAreAllListedWithNodeAndOpset) {
  OnnxTestModel m(17);
  m.Input("x", onnx::TensorProto::FLOAT, {"n"});
  m.Node("NonZero", {"x"}, {"nz"}, "find");
  m.Node("Relu", {"x"}, {"r"});
  m.Node("Unique", {"r"}, {"u"}, "uniq");
  m.Output("u", onnx::TensorProto::FLOAT, {""});
  absl::StatusOr<ImportedModel> model = ImportOnnxBytes(m.Bytes());
  ASSERT_FALSE(model.ok());
  EXPECT_THAT(model.status().message(), HasSubstr("2 unsupported op(s)"));
  EXPECT_THAT(model.status().message(), HasSubstr("'NonZero' (node 'find', opset 17)"));
  EXPECT_THAT(model.status().message(), HasSubstr("'Unique' (node 'uniq', opset 17)"));
}

TEST(ImporterErrorsTest, CustomDomainAndSubgraphOpsAreUnsupported) {
  OnnxTestModel m(17);
  onnx::OperatorSetIdProto* ms = m.model().add_opset_import();
  ms->set_domain("com.microsoft");
  ms->set_version(1);
  m.Input("x", onnx::TensorProto::FLOAT, {"n"});
  // (FastGelu and the other fused ops contrib_ops.h expands are supported.)
  onnx::NodeProto& n = m.Node("Attention", {"x"}, {"y"}, "attention");
  n.set_domain("com.microsoft");
  m.Output("y", onnx::TensorProto::FLOAT, {""});
  ImportOptions no_checker;
  no_checker.run_checker = false;  // the checker has no schema for the custom op
  absl::StatusOr<ImportedModel> model = ImportOnnxBytes(m.Bytes(), no_checker);
  ASSERT_FALSE(model.ok());
  EXPECT_THAT(model.status().message(), HasSubstr("com.microsoft::Attention"));
  EXPECT_THAT(model.status().message(), HasSubstr("'attention'"));
}

TEST(ImporterErrorsTest, MissingInputIsNamed) {
  OnnxTestModel m(17);
  m.Input("x", onnx::TensorProto::FLOAT, {"n"});
  m.Node("Add", {"x", "ghost"}, {"y"}, "adder");
  m.Output("y", onnx::TensorProto::FLOAT, {""});
  ImportOptions no_checker;
  no_checker.run_checker = false;
  absl::StatusOr<ImportedModel> model = ImportOnnxBytes(m.Bytes(), no_checker);
  ASSERT_FALSE(model.ok());
  EXPECT_THAT(model.status().message(), HasSubstr("'ghost'"));
  EXPECT_THAT(model.status().message(), HasSubstr("adder"));
  // With the checker on, the checker's own report is returned as a Status.
  absl::StatusOr<ImportedModel> checked = ImportOnnxBytes(m.Bytes());
  ASSERT_FALSE(checked.ok());
  EXPECT_THAT(checked.status().message(), HasSubstr("ghost"));
}

TEST(ImporterErrorsTest, BadOpset) {
  OnnxTestModel m(99);
  m.Input("x", onnx::TensorProto::FLOAT, {"n"});
  m.Node("Relu", {"x"}, {"y"});
  m.Output("y", onnx::TensorProto::FLOAT, {""});
  ImportOptions no_checker;
  no_checker.run_checker = false;
  absl::StatusOr<ImportedModel> model = ImportOnnxBytes(m.Bytes(), no_checker);
  ASSERT_FALSE(model.ok());
  EXPECT_THAT(model.status().message(), HasSubstr("opset 99 is not supported"));
  EXPECT_FALSE(ImportOnnxBytes(m.Bytes()).ok());
}

TEST(ImporterErrorsTest, DtypeMismatch) {
  OnnxTestModel m(17);
  m.Input("a", onnx::TensorProto::FLOAT, {"n"});
  m.Input("b", onnx::TensorProto::INT64, {"n"});
  m.Node("Add", {"a", "b"}, {"y"}, "mixed");
  m.Output("y", onnx::TensorProto::FLOAT, {""});
  absl::StatusOr<ImportedModel> model = ImportOnnxBytes(m.Bytes());
  ASSERT_FALSE(model.ok());
  EXPECT_THAT(model.status().message(), HasSubstr("node 'mixed' (Add)"));
  EXPECT_THAT(model.status().message(), HasSubstr("dtypes differ"));

  OnnxTestModel wrong_output(17);
  wrong_output.Input("a", onnx::TensorProto::FLOAT, {"n"});
  wrong_output.Node("Relu", {"a"}, {"y"});
  wrong_output.Output("y", onnx::TensorProto::INT64, {""});
  model = ImportOnnxBytes(wrong_output.Bytes());
  ASSERT_FALSE(model.ok());
  EXPECT_THAT(model.status().message(), HasSubstr("graph output 'y' is declared i64"));

  OnnxTestModel wrong_dim(17);
  wrong_dim.Input("a", onnx::TensorProto::FLOAT, {"n", "4"});
  wrong_dim.Node("Relu", {"a"}, {"y"});
  wrong_dim.Output("y", onnx::TensorProto::FLOAT, {"n", "5"});
  model = ImportOnnxBytes(wrong_dim.Bytes());
  ASSERT_FALSE(model.ok());
  EXPECT_THAT(model.status().message(), HasSubstr("graph output 'y' dim 1 is declared 5 but computes f32[n, 4]"));
}

TEST(ImporterErrorsTest, DimFlagsAreChecked) {
  ImportOptions options;
  options.dim_ranges["sequence_length"] = {1, 128};
  absl::StatusOr<ImportedModel> model = ImportOnnxBytes(AttentionReshapeModel().Bytes(), options);
  ASSERT_FALSE(model.ok());
  EXPECT_THAT(model.status().message(), HasSubstr("'sequence_length' is not a dynamic dim"));
  EXPECT_THAT(model.status().message(), HasSubstr("batch, seq"));

  ImportOptions parsed;
  EXPECT_TRUE(ParseDimRangeFlag("seq=1..512", &parsed).ok());
  EXPECT_EQ(parsed.dim_ranges["seq"].max, 512);
  EXPECT_FALSE(ParseDimRangeFlag("seq=512..1", &parsed).ok());
  EXPECT_FALSE(ParseDimRangeFlag("seq", &parsed).ok());
  EXPECT_FALSE(ParseDimRangeFlag("seq=a..b", &parsed).ok());
}

}  // namespace
}  // namespace shapeshift
