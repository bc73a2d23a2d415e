// Tests for graph/onnx/exporter.cc: the written ModelProto passes the ONNX
// checker, carries symbols as dim_param and ranges as metadata, writes every
// attribute kind, and round-trips through the importer to a graph that
// computes the same outputs.
#include "graph/onnx/exporter.h"

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "graph/interpreter.h"
#include "graph/onnx/importer.h"
#include "graph/shape_inference.h"
#include "gtest/gtest.h"
#include "onnx/onnx_pb.h"

namespace shapeshift {
namespace {

using ::testing::HasSubstr;

// y = Softmax(Reshape(x, Concat(Shape(x)[0], Shape(x)[1], [2, 3])) * 0.5 + b,
// axis=-1), plus Transpose and a Concat on a symbolic axis (`2*seq`).
struct SmallModel {
  std::unique_ptr<ShapeEnv> env = std::make_unique<ShapeEnv>();
  std::unique_ptr<Graph> graph = std::make_unique<Graph>(17);
};

SmallModel BuildSmallModel() {
  SmallModel m;
  SymbolInfo batch{"batch", 1, 4};
  SymbolInfo seq{"seq", 1, 16};
  SymExpr b = m.env->DeclareSymbol(batch).value();
  SymExpr s = m.env->DeclareSymbol(seq).value();
  Graph& g = *m.graph;
  Value* x = g.AddInput("x", TensorType(DType::kF32, {b, s, 6}));
  Value* shape = g.AddNode("Shape", {x}, 1)->output(0);
  auto dim = [&](int64_t i) {
    Value* index = g.AddConstant("", Tensor::ScalarI64(i));
    Value* scalar = g.AddNode("Gather", {shape, index}, 1)->output(0);
    Value* axes = g.AddConstant("", Tensor::FromVector<int64_t>(DType::kI64, {1}, {0}));
    return g.AddNode("Unsqueeze", {scalar, axes}, 1)->output(0);
  };
  Value* tail = g.AddConstant("tail", Tensor::FromVector<int64_t>(DType::kI64, {2}, {2, 3}));
  Attributes concat_axis;
  concat_axis.Set("axis", int64_t{0});
  Value* target = g.AddNode("Concat", {dim(0), dim(1), tail}, 1, concat_axis)->output(0);
  Value* reshaped = g.AddNode("Reshape", {x, target}, 1, {}, "reshape")->output(0);
  Value* half = g.AddConstant("half", Tensor::Scalar(0.5f));
  Value* bias = g.AddConstant("bias", Tensor::FromVector<float>(DType::kF32, {3}, {0.1f, -0.2f, 0.3f}));
  Value* scaled = g.AddNode("Mul", {reshaped, half}, 1)->output(0);
  Value* biased = g.AddNode("Add", {scaled, bias}, 1)->output(0);
  Attributes softmax_axis;
  softmax_axis.Set("axis", int64_t{-1});
  Value* y = g.AddNode("Softmax", {biased}, 1, softmax_axis, "softmax", {"y"})->output(0);
  Attributes perm;
  perm.Set("perm", std::vector<int64_t>{1, 0, 2, 3});
  Value* t = g.AddNode("Transpose", {y}, 1, perm)->output(0);
  Attributes seq_axis;
  seq_axis.Set("axis", int64_t{0});
  Value* doubled = g.AddNode("Concat", {t, t}, 1, seq_axis, "concat", {"doubled"})->output(0);
  g.AddOutput(y);
  g.AddOutput(doubled);
  EXPECT_TRUE(InferShapes(g, *m.env).ok());
  return m;
}

Tensor Iota(std::vector<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = 0.1f * static_cast<float>(i % 17) - 0.7f;
  return Tensor::FromVector(DType::kF32, std::move(shape), v);
}

TEST(ExporterTest, WritesSymbolsAsDimParamAndRangesAsMetadata) {
  SmallModel m = BuildSmallModel();
  onnx::ModelProto proto;
  ASSERT_TRUE(ExportOnnxModel(*m.graph, *m.env, {}, &proto).ok());
  EXPECT_EQ(proto.opset_import(0).version(), 17);
  ASSERT_EQ(proto.graph().input_size(), 1);
  const auto& dims = proto.graph().input(0).type().tensor_type().shape().dim();
  ASSERT_EQ(dims.size(), 3);
  EXPECT_EQ(dims[0].dim_param(), "batch");
  EXPECT_EQ(dims[1].dim_param(), "seq");
  EXPECT_EQ(dims[2].dim_value(), 6);
  ASSERT_EQ(proto.graph().output_size(), 2);
  EXPECT_EQ(proto.graph().output(1).name(), "doubled");
  EXPECT_EQ(proto.graph().output(1).type().tensor_type().shape().dim(0).dim_param(), "2*seq");
  std::map<std::string, std::string> metadata;
  for (const auto& entry : proto.metadata_props()) metadata[entry.key()] = entry.value();
  EXPECT_EQ(metadata["shapeshift.dim.batch"], "1..4");
  EXPECT_EQ(metadata["shapeshift.dim.seq"], "1..16");
  absl::StatusOr<ImportOptions> recorded = ReadRecordedDims(proto);
  ASSERT_TRUE(recorded.ok()) << recorded.status();
  const std::map<std::string, DimRange>& ranges = recorded->dim_ranges;
  ASSERT_EQ(ranges.size(), 2u);
  EXPECT_EQ(ranges.at("seq").min, 1);
  EXPECT_EQ(ranges.at("seq").max, 16);
  EXPECT_EQ(proto.graph().initializer_size(), static_cast<int>(m.graph->constants().size()));
}

// The small model's outputs from `graph` equal those of the original.
void ExpectTheSmallModelsOutputs(const SmallModel& m, const Graph& graph) {
  for (auto [batch, seq] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {2, 5}, {4, 16}}) {
    std::vector<Tensor> inputs = {Iota({batch, seq, 6})};
    absl::StatusOr<std::vector<Tensor>> want = Interpret(*m.graph, inputs);
    absl::StatusOr<std::vector<Tensor>> got = Interpret(graph, inputs);
    ASSERT_TRUE(want.ok()) << want.status();
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(got->size(), want->size());
    for (size_t i = 0; i < got->size(); ++i) {
      ASSERT_EQ((*got)[i].shape(), (*want)[i].shape());
      for (int64_t e = 0; e < (*got)[i].num_elements(); ++e) {
        ASSERT_EQ((*got)[i].GetAsDouble(e), (*want)[i].GetAsDouble(e)) << "output " << i << " element " << e;
      }
    }
  }
}

TEST(ExporterTest, RoundTripsThroughTheImporterWithIdenticalOutputs) {
  SmallModel m = BuildSmallModel();
  absl::StatusOr<std::string> bytes = ExportOnnxBytes(*m.graph, *m.env);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  ImportOptions options;
  options.dim_ranges = {{"batch", {1, 4}}, {"seq", {1, 16}}};
  absl::StatusOr<ImportedModel> imported = ImportOnnxBytes(*bytes, options, "exported");
  ASSERT_TRUE(imported.ok()) << imported.status();
  EXPECT_EQ(imported->graph->outputs()[1]->type().ToString(), "f32[2*seq, batch, 2, 3]");
  ExpectTheSmallModelsOutputs(m, *imported->graph);
}

// With a sink, every initializer's bytes go to it (here one file, at the
// offsets it returns) and the message names them as external data; the
// message alone, checked and imported with that file's directory, computes
// the same outputs (how an AOT bundle holds weights past 2 GiB).
TEST(ExporterTest, InitializersGoToTheSinkAsExternalDataAndImportBack) {
  SmallModel m = BuildSmallModel();
  const std::string dir = ::testing::TempDir();
  const std::string name = "exporter_test_weights.bin";
  std::FILE* file = std::fopen((dir + "/" + name).c_str(), "wb");
  ASSERT_NE(file, nullptr);
  int64_t written = 0;
  ExportOptions options;
  options.external_data = ExternalDataSink{dir, name, 0, [&](const Tensor& t) -> absl::StatusOr<int64_t> {
                                             const int64_t at = written + 3;  // not where the last one ended
                                             std::fseek(file, at, SEEK_SET);
                                             std::fwrite(t.raw(), 1, t.byte_size(), file);
                                             written = at + static_cast<int64_t>(t.byte_size());
                                             std::fflush(file);
                                             return at;
                                           }};
  onnx::ModelProto proto;
  absl::Status exported = ExportOnnxModel(*m.graph, *m.env, options, &proto);
  std::fclose(file);
  ASSERT_TRUE(exported.ok()) << exported;
  ASSERT_GT(proto.graph().initializer_size(), 0);
  for (const onnx::TensorProto& init : proto.graph().initializer()) {
    EXPECT_EQ(init.data_location(), onnx::TensorProto::EXTERNAL) << init.name();
    EXPECT_TRUE(init.raw_data().empty()) << init.name();
  }
  ImportOptions import_options;
  import_options.base_dir = dir;
  absl::StatusOr<ImportedModel> imported = ImportParsedOnnx(proto, import_options, "the message");
  ASSERT_TRUE(imported.ok()) << imported.status();
  ExpectTheSmallModelsOutputs(m, *imported->graph);

  // Checked against the directory: the same message where the file is not is refused.
  import_options.base_dir = dir + "/exporter_test_no_such_dir";
  EXPECT_FALSE(ImportParsedOnnx(proto, import_options, "the message").ok());
}

// torch's dynamo exporter writes opset 18, where ReduceMean and Split take
// their axes and sizes as inputs: newer than Debian's libonnx, whose own
// check_model held such a node to opset 13's one-input ReduceMean and refused
// the export (`shapeshift compile` of a dynamo-exported Llama failed so). The
// export passes the importer's checker and imports back to the same outputs.
TEST(ExporterTest, AnOpset18GraphExportsAndImportsBack) {
  ShapeEnv env;
  SymExpr seq = env.DeclareSymbol(SymbolInfo{"seq", 1, 64}).value();
  Graph g(18);
  Value* x = g.AddInput("x", TensorType(DType::kF32, {seq, 8}));
  Value* axes = g.AddConstant("axes", Tensor::FromVector<int64_t>(DType::kI64, {1}, {-1}));
  Attributes keep;
  keep.Set("keepdims", int64_t{1});
  Value* mean = g.AddNode("ReduceMean", {x, axes}, 1, keep, "node_mean")->output(0);
  Value* centered = g.AddNode("Sub", {x, mean}, 1)->output(0);
  Value* sizes = g.AddConstant("sizes", Tensor::FromVector<int64_t>(DType::kI64, {2}, {3, 5}));
  Attributes split_axis;
  split_axis.Set("axis", int64_t{1});
  Node* split = g.AddNode("Split", {centered, sizes}, 2, split_axis, "split", {"left", "right"});
  g.AddOutput(split->output(0));
  g.AddOutput(split->output(1));
  ASSERT_TRUE(InferShapes(g, env).ok());
  absl::StatusOr<std::string> bytes = ExportOnnxBytes(g, env);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  absl::StatusOr<ImportedModel> imported = ImportOnnxBytes(*bytes, {}, "exported");
  ASSERT_TRUE(imported.ok()) << imported.status();
  EXPECT_EQ(imported->graph->opset(), 18);
  for (int64_t s : {1, 7}) {
    std::vector<Tensor> inputs = {Iota({s, 8})};
    absl::StatusOr<std::vector<Tensor>> want = Interpret(g, inputs);
    absl::StatusOr<std::vector<Tensor>> got = Interpret(*imported->graph, inputs);
    ASSERT_TRUE(want.ok()) << want.status();
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(got->size(), 2u);
    for (size_t i = 0; i < got->size(); ++i) {
      ASSERT_EQ((*got)[i].shape(), (*want)[i].shape());
      for (int64_t e = 0; e < (*got)[i].num_elements(); ++e) {
        ASSERT_EQ((*got)[i].GetAsDouble(e), (*want)[i].GetAsDouble(e)) << "output " << i << " element " << e;
      }
    }
  }
}

// GPT-2 with past's mask is [batch, past + seq]: a derived input dim gets a
// name of its own, recorded as the sum, and imports back as that sum.
TEST(ExporterTest, ADerivedInputDimIsWrittenAsANamedSumAndImportsBack) {
  ShapeEnv env;
  SymExpr past = env.DeclareSymbol({"past", 0, 8}).value();
  SymExpr seq = env.DeclareSymbol({"seq", 1, 8}).value();
  Graph g(17);
  Value* mask = g.AddInput("mask", TensorType(DType::kF32, {past + seq}));
  Value* kv = g.AddInput("kv", TensorType(DType::kF32, {past}));
  Value* ids = g.AddInput("ids", TensorType(DType::kF32, {seq}));
  Attributes axis;
  axis.Set("axis", int64_t{0});
  Value* joined = g.AddNode("Concat", {kv, ids}, 1, axis)->output(0);
  g.AddOutput(g.AddNode("Add", {mask, joined}, 1, {}, "add", {"y"})->output(0));
  ASSERT_TRUE(InferShapes(g, env).ok());
  onnx::ModelProto proto;
  ASSERT_TRUE(ExportOnnxModel(g, env, {}, &proto).ok());
  EXPECT_EQ(proto.graph().input(0).type().tensor_type().shape().dim(0).dim_param(), "past_plus_seq");
  EXPECT_EQ(proto.graph().output(0).type().tensor_type().shape().dim(0).dim_param(), "past_plus_seq");
  std::map<std::string, std::string> metadata;
  for (const auto& entry : proto.metadata_props()) metadata[entry.key()] = entry.value();
  EXPECT_EQ(metadata["shapeshift.dim.past_plus_seq"], "past+seq");
  std::string bytes;
  ASSERT_TRUE(proto.SerializeToString(&bytes));
  absl::StatusOr<ImportedModel> imported = ImportOnnxBytes(bytes, {}, "exported");
  ASSERT_TRUE(imported.ok()) << imported.status();
  EXPECT_EQ(imported->graph->inputs()[0]->type().ToString(), "f32[past + seq]");
  EXPECT_FALSE(imported->env->HasSymbol("past_plus_seq"));
}

TEST(ExporterTest, ADerivedInputDimThatIsNoSumIsAnErrorNamingIt) {
  ShapeEnv env;
  SymExpr seq = env.DeclareSymbol({"seq", 1, 8}).value();
  Graph g(17);
  Value* x = g.AddInput("x", TensorType(DType::kF32, {2 * seq}));
  g.AddOutput(g.AddNode("Relu", {x}, 1)->output(0));
  ASSERT_TRUE(InferShapes(g, env).ok());
  onnx::ModelProto proto;
  absl::Status s = ExportOnnxModel(g, env, {}, &proto);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("input 'x' dim 0 is 2*seq"));
}

TEST(ExporterTest, WritesEveryAttributeKind) {
  Graph g(17);
  ShapeEnv env;
  Value* x = g.AddInput("x", TensorType(DType::kF32, {3}));
  Attributes attrs;
  attrs.Set("i", int64_t{7});
  attrs.Set("f", 1.5f);
  attrs.Set("s", std::string("hello"));
  attrs.Set("ints", std::vector<int64_t>{1, 2});
  attrs.Set("floats", std::vector<float>{0.5f});
  attrs.Set("strings", std::vector<std::string>{"a", "b"});
  attrs.Set("t", Tensor::ScalarI64(3));
  g.AddOutput(g.AddNode("Identity", {x}, 1, attrs, "id", {"y"})->output(0));
  onnx::ModelProto proto;
  // Identity has none of these attributes, so the checker must reject the
  // model — after the exporter wrote every kind, which is what is tested.
  absl::Status s = ExportOnnxModel(g, env, {}, &proto);
  EXPECT_THAT(std::string(s.message()), HasSubstr("ONNX checker"));
  const onnx::NodeProto& node = proto.graph().node(0);
  std::map<std::string, onnx::AttributeProto::AttributeType> types;
  for (const auto& a : node.attribute()) types[a.name()] = a.type();
  EXPECT_EQ(types["i"], onnx::AttributeProto::INT);
  EXPECT_EQ(types["f"], onnx::AttributeProto::FLOAT);
  EXPECT_EQ(types["s"], onnx::AttributeProto::STRING);
  EXPECT_EQ(types["ints"], onnx::AttributeProto::INTS);
  EXPECT_EQ(types["floats"], onnx::AttributeProto::FLOATS);
  EXPECT_EQ(types["strings"], onnx::AttributeProto::STRINGS);
  EXPECT_EQ(types["t"], onnx::AttributeProto::TENSOR);
}

// The file carries its domain: an import with no declared ranges takes the
// recorded ones, and a caller's declaration of a dim overrides its record.
TEST(ExporterTest, ImporterTakesRecordedRangesUnlessTheCallerDeclaresThem) {
  SmallModel m = BuildSmallModel();
  absl::StatusOr<std::string> bytes = ExportOnnxBytes(*m.graph, *m.env);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  absl::StatusOr<ImportedModel> plain = ImportOnnxBytes(*bytes, {}, "exported");
  ASSERT_TRUE(plain.ok()) << plain.status();
  ASSERT_NE(plain->env->FindSymbol("seq"), nullptr);
  EXPECT_EQ(plain->env->FindSymbol("seq")->max, 16);
  EXPECT_EQ(plain->env->FindSymbol("batch")->max, 4);
  ImportOptions options;
  options.dim_ranges = {{"seq", {2, 8}}};
  absl::StatusOr<ImportedModel> declared = ImportOnnxBytes(*bytes, options, "exported");
  ASSERT_TRUE(declared.ok()) << declared.status();
  EXPECT_EQ(declared->env->FindSymbol("seq")->min, 2);
  EXPECT_EQ(declared->env->FindSymbol("seq")->max, 8);
  EXPECT_EQ(declared->env->FindSymbol("batch")->max, 4);
}

// Import moves the weights out of the message: a model's weights are never
// held twice (issue 7's peak-RSS finding), and the tensors keep the values.
TEST(ExporterTest, ImportReleasesInitializerDataFromTheMessage) {
  SmallModel m = BuildSmallModel();
  onnx::ModelProto proto;
  ASSERT_TRUE(ExportOnnxModel(*m.graph, *m.env, {}, &proto).ok());
  ASSERT_GT(proto.graph().initializer_size(), 0);
  size_t bytes_before = 0;
  for (const onnx::TensorProto& init : proto.graph().initializer()) bytes_before += init.raw_data().size();
  ASSERT_GT(bytes_before, 0u);
  OnnxFile file;
  file.path = ::testing::TempDir() + "/release_model.onnx";
  file.model = std::make_unique<onnx::ModelProto>(std::move(proto));
  absl::StatusOr<ImportedModel> imported = ImportParsedOnnxFile(file, {});
  ASSERT_TRUE(imported.ok()) << imported.status();
  for (const onnx::TensorProto& init : file.model->graph().initializer()) {
    EXPECT_TRUE(init.raw_data().empty()) << init.name();
    EXPECT_EQ(init.float_data_size(), 0) << init.name();
    const Value* value = imported->graph->FindValue(init.name());
    ASSERT_NE(value, nullptr) << init.name();
    const Tensor* constant = value->constant();
    ASSERT_NE(constant, nullptr) << init.name();
    EXPECT_GT(constant->byte_size(), 0u) << init.name();
  }
  for (const Value* original : m.graph->constants()) {
    const Value* value = imported->graph->FindValue(original->name());
    ASSERT_NE(value, nullptr) << original->name();
    const Tensor* copy = value->constant();
    ASSERT_NE(copy, nullptr) << original->name();
    ASSERT_EQ(copy->byte_size(), original->constant()->byte_size()) << original->name();
    EXPECT_EQ(std::memcmp(copy->raw(), original->constant()->raw(), copy->byte_size()), 0) << original->name();
  }
}

TEST(ExporterTest, MalformedRecordedRangeIsNamed) {
  onnx::ModelProto proto;
  onnx::StringStringEntryProto* entry = proto.add_metadata_props();
  entry->set_key("shapeshift.dim.seq");
  entry->set_value("9..x");
  absl::StatusOr<ImportOptions> recorded = ReadRecordedDims(proto);
  ASSERT_FALSE(recorded.ok());
  EXPECT_THAT(std::string(recorded.status().message()), HasSubstr("shapeshift.dim.seq"));
}

TEST(ExporterTest, UnwritablePathIsNamed) {
  SmallModel m = BuildSmallModel();
  absl::Status s = ExportOnnxFile(*m.graph, *m.env, "/nonexistent-dir/model.onnx");
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("/nonexistent-dir/model.onnx"));
}

}  // namespace
}  // namespace shapeshift
