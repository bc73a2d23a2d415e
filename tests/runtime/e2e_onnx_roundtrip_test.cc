// The example models written as ONNX (graph/onnx/exporter.h) and read back
// (graph/onnx/importer.h): the checker accepts them, the recorded ranges
// come back, and the imported graph computes bit-identical outputs — so the
// same models also exercise the importer path of the compiler.
#include <string>
#include <vector>

#include "examples/models/bert.h"
#include "examples/models/gpt2.h"
#include "graph/interpreter.h"
#include "graph/onnx/exporter.h"
#include "graph/onnx/importer.h"
#include "gtest/gtest.h"
#include "onnx/onnx_pb.h"
#include "tests/runtime/e2e_util.h"

namespace shapeshift::examples {
namespace {

using ::shapeshift::testing::TensorsClose;

// Exports `model` and imports it back; the importer takes the ranges the
// file recorded.
ImportedModel RoundTrip(const ImportedModel& model) {
  onnx::ModelProto proto;
  absl::Status exported = ExportOnnxModel(*model.graph, *model.env, {}, &proto);
  EXPECT_TRUE(exported.ok()) << exported;
  absl::StatusOr<ImportedModel> imported = ImportOnnxBytes(proto.SerializeAsString(), {}, "round trip");
  EXPECT_TRUE(imported.ok()) << imported.status();
  return imported.ok() ? *std::move(imported) : ImportedModel{};
}

void ExpectSameDomain(const ShapeEnv& a, const ShapeEnv& b) {
  for (const SymbolInfo& s : a.symbols()) {
    const SymbolInfo* other = b.FindSymbol(s.name);
    ASSERT_NE(other, nullptr) << s.name;
    EXPECT_EQ(other->min, s.min) << s.name;
    EXPECT_EQ(other->max, s.max) << s.name;
  }
}

void ExpectIdenticalOutputs(const Graph& original, const Graph& imported, const std::vector<Tensor>& inputs) {
  absl::StatusOr<std::vector<Tensor>> want = Interpret(original, inputs);
  absl::StatusOr<std::vector<Tensor>> got = Interpret(imported, inputs);
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), want->size());
  for (size_t i = 0; i < got->size(); ++i) EXPECT_TRUE(TensorsClose((*got)[i], (*want)[i], 0, 0)) << "output " << i;
}

TEST(OnnxRoundTripTest, Bert) {
  BertConfig c;
  c.layers = 2;
  c.hidden = 32;
  c.heads = 2;
  c.intermediate = 64;
  c.vocab = 101;
  c.decomposed_layer_norm = true;
  absl::StatusOr<ImportedModel> model = BuildBert(c);
  ASSERT_TRUE(model.ok()) << model.status();
  ImportedModel imported = RoundTrip(*model);
  ASSERT_NE(imported.graph, nullptr);
  ExpectSameDomain(*model->env, *imported.env);
  EXPECT_EQ(imported.graph->outputs()[0]->type().ToString(), "f32[batch, seq, 32]");
  for (auto [batch, seq] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {3, 11}}) {
    ExpectIdenticalOutputs(*model->graph, *imported.graph, MakeBertInputs(c, batch, seq, 9, true));
  }
}

TEST(OnnxRoundTripTest, Gpt2AndKvCacheVariant) {
  for (bool kv : {false, true}) {
    Gpt2Config c;
    c.layers = 2;
    c.hidden = 32;
    c.heads = 4;
    c.vocab = 53;
    c.kv_cache = kv;
    absl::StatusOr<ImportedModel> model = BuildGpt2(c);
    ASSERT_TRUE(model.ok()) << model.status();
    ImportedModel imported = RoundTrip(*model);
    ASSERT_NE(imported.graph, nullptr);
    ExpectSameDomain(*model->env, *imported.env);
    ASSERT_EQ(imported.graph->outputs().size(), model->graph->outputs().size());
    for (size_t i = 0; i < model->graph->outputs().size(); ++i) {
      EXPECT_EQ(imported.graph->outputs()[i]->type(), model->graph->outputs()[i]->type()) << "output " << i;
    }
    for (auto [seq, past] : std::vector<std::pair<int64_t, int64_t>>{{1, 0}, {5, 3}}) {
      ExpectIdenticalOutputs(*model->graph, *imported.graph, MakeGpt2Inputs(c, 2, seq, past, 4));
    }
  }
}

}  // namespace
}  // namespace shapeshift::examples
