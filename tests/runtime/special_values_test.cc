// The second oracle: ONNX Runtime's outputs for special values (NaN, +-Inf,
// -0, denormals, +-FLT_MAX, huge and tiny magnitudes, mixed rows), committed
// as ONNX test data in tests/data/special_values/ by
// bench/peers/special_values.py (see the README there). Each case runs
// through the reference interpreter (on the imported graph) and through a
// compiled Session, and both must agree with ORT under the one comparison
// rule (graph/tensor_compare.h): NaN exactly where ORT has NaN, infinities
// by sign, finite values within 1e-3 + 1e-3 * |expected|.
//
// Why both: the interpreter is the oracle for `run --check` and `fuzz`; a
// bug it shares with the kernels (Relu turning NaN into 0 was one) is
// invisible to them, not to ONNX Runtime.
//
// The coverage test reads which ops the compiled path computes from the code
// that decides it (the op registry, the fusion planner's group kinds, and
// whether a Session compiles a one-node model), so a newly compiled op
// without a special-value case fails here.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/builder.h"
#include "graph/interpreter.h"
#include "graph/onnx/importer.h"
#include "graph/op_table.h"
#include "graph/tensor_compare.h"
#include "graph/tensor_proto.h"
#include "gtest/gtest.h"
#include "passes/pipeline.h"
#include "runtime/session.h"

namespace shapeshift::runtime {
namespace {

namespace fs = std::filesystem;

const fs::path kRoot = fs::path(SHAPESHIFT_SOURCE_DIR) / "tests" / "data" / "special_values";

std::vector<std::string> CaseNames() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(kRoot, ec)) {
    if (entry.is_directory() && fs::exists(entry.path() / "model.onnx")) names.push_back(entry.path().filename());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Tensors `prefix`_0.pb, _1.pb, ... of `dir`, in order.
absl::StatusOr<std::vector<Tensor>> ReadNumbered(const fs::path& dir, const std::string& prefix) {
  std::vector<Tensor> tensors;
  for (int k = 0;; ++k) {
    const fs::path path = dir / (prefix + "_" + std::to_string(k) + ".pb");
    if (!fs::exists(path)) break;
    absl::StatusOr<Tensor> t = ReadTensorProtoFile(path.string());
    if (!t.ok()) return t.status();
    tensors.push_back(*std::move(t));
  }
  return tensors;
}

struct CaseData {
  std::vector<Tensor> inputs;
  std::vector<Tensor> expected;  // ONNX Runtime's
};

CaseData LoadCase(const std::string& name) {
  CaseData data;
  const fs::path set = kRoot / name / "test_data_set_0";
  absl::StatusOr<std::vector<Tensor>> inputs = ReadNumbered(set, "input");
  absl::StatusOr<std::vector<Tensor>> expected = ReadNumbered(set, "output");
  EXPECT_TRUE(inputs.ok()) << inputs.status();
  EXPECT_TRUE(expected.ok()) << expected.status();
  if (inputs.ok()) data.inputs = *std::move(inputs);
  if (expected.ok()) data.expected = *std::move(expected);
  EXPECT_FALSE(data.inputs.empty() || data.expected.empty()) << set << " has no data";
  return data;
}

std::string Describe(const TensorComparison& c) {
  return absl::StrCat(c.mismatches, " element(s) disagree with ONNX Runtime; first: ", c.first_mismatch);
}

class SpecialValuesTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SpecialValuesTest, InterpreterAgreesWithOnnxRuntime) {
  CaseData data = LoadCase(GetParam());
  absl::StatusOr<ImportedModel> model = ImportOnnxFile((kRoot / GetParam() / "model.onnx").string());
  ASSERT_TRUE(model.ok()) << model.status();
  absl::StatusOr<std::vector<Tensor>> got = Interpret(*model->graph, data.inputs);
  ASSERT_TRUE(got.ok()) << got.status();
  TensorComparison c = CompareTensorLists(*got, data.expected);
  EXPECT_TRUE(c.agree) << Describe(c);
}

TEST_P(SpecialValuesTest, CompiledProgramAgreesWithOnnxRuntime) {
  CaseData data = LoadCase(GetParam());
  absl::StatusOr<std::unique_ptr<Session>> session =
      Session::Create(ModelSource::OnnxFile((kRoot / GetParam() / "model.onnx").string()));
  ASSERT_TRUE(session.ok()) << session.status();
  absl::StatusOr<std::vector<Tensor>> got = (*session)->Run(data.inputs);
  ASSERT_TRUE(got.ok()) << got.status();
  TensorComparison c = CompareTensorLists(*got, data.expected);
  EXPECT_TRUE(c.agree) << Describe(c);
  EXPECT_GT((*session)->stats().program.kernels + (*session)->stats().program.gemms, 0)
      << "nothing was compiled: the case tests no kernel";
}

INSTANTIATE_TEST_SUITE_P(Cases, SpecialValuesTest, ::testing::ValuesIn(CaseNames()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

// ---- Coverage ---------------------------------------------------------------

// The op types of every committed case's model, as imported and after the
// passes (which turn the exporters' GELU decomposition into a Gelu node).
std::set<std::string> CoveredOps() {
  std::set<std::string> ops;
  for (const std::string& name : CaseNames()) {
    absl::StatusOr<ImportedModel> model = ImportOnnxFile((kRoot / name / "model.onnx").string());
    EXPECT_TRUE(model.ok()) << name << ": " << model.status();
    if (!model.ok()) continue;
    for (const Node* node : model->graph->nodes()) ops.insert(node->op_type());
    absl::StatusOr<passes::PipelineResult> optimized = passes::RunPipeline(*model->graph, *model->env);
    EXPECT_TRUE(optimized.ok()) << name << ": " << optimized.status();
    for (const Node* node : model->graph->nodes()) ops.insert(node->op_type());
  }
  return ops;
}

// A one-node graph `op`(inputs of `shapes`, f32) with the node's first output
// as the graph output; nullptr when the op's shape rule refuses these inputs.
struct Probe {
  std::unique_ptr<Graph> graph;
  std::unique_ptr<ShapeEnv> env;
};
Probe MakeProbe(const std::string& op, const std::vector<std::vector<int64_t>>& shapes) {
  Probe p{std::make_unique<Graph>(17), std::make_unique<ShapeEnv>()};
  GraphBuilder b(*p.graph, *p.env);
  std::vector<Value*> inputs;
  for (size_t i = 0; i < shapes.size(); ++i) {
    std::vector<SymExpr> dims(shapes[i].begin(), shapes[i].end());
    inputs.push_back(b.Input("x" + std::to_string(i), TensorType{DType::kF32, dims}));
  }
  const OpInfo* info = FindOp(op);
  absl::StatusOr<std::vector<Value*>> out = b.MultiOp(op, inputs, info ? info->min_outputs : 1);
  if (!out.ok() || (*out)[0]->type().dtype != DType::kF32) return {};
  b.Output((*out)[0]);
  return p;
}

// The fusion group kind the planner gives `op` in its probe, or nullopt.
std::optional<passes::GroupKind> PlannedKind(const std::string& op, const std::vector<std::vector<int64_t>>& shapes) {
  Probe p = MakeProbe(op, shapes);
  if (!p.graph) return std::nullopt;
  absl::StatusOr<passes::PipelineResult> plan = passes::RunPipeline(*p.graph, *p.env);
  if (!plan.ok()) return std::nullopt;
  for (const passes::Group& g : plan->fusion.groups) {
    for (const Node* n : g.nodes) {
      if (n->op_type() == op) return g.kind;
    }
  }
  return std::nullopt;
}

bool Compiles(const std::string& op, const std::vector<std::vector<int64_t>>& shapes) {
  Probe p = MakeProbe(op, shapes);
  if (!p.graph) return false;
  return Session::Create(ModelSource::Built(std::move(p.graph), std::move(p.env))).ok();
}

// Every op the compiled path computes on f32 values (the fusion planner puts
// it in an elementwise, softmax, layer-norm, reduction, matmul or rotary group, and a
// Session compiles it) has a committed special-value case. Data-movement
// groups (views, copies, transposes, concat, slice, gather) only move bits.
TEST(SpecialValuesCoverageTest, EveryMathOpTheCompiledPathComputesHasACase) {
  const std::vector<std::vector<std::vector<int64_t>>> probes = {
      {{2, 8}}, {{2, 8}, {2, 8}}, {{2, 8}, {8}}, {{8, 8}, {8, 8}}, {{2, 8}, {2, 8}, {2, 8}}};
  const std::set<passes::GroupKind> math = {passes::GroupKind::kElementwise, passes::GroupKind::kSoftmax,
                                            passes::GroupKind::kLayerNorm, passes::GroupKind::kReduction,
                                            passes::GroupKind::kMatmul, passes::GroupKind::kRotary};
  // An op is computed when some probe plans it into a math group and
  // compiles; refused when probes plan it so but none compiles.
  std::set<std::string> computed, refused;
  for (const OpInfo* info : AllOps()) {
    const std::string& op = info->op_type;
    bool planned_as_math = false;
    for (const auto& shapes : probes) {
      std::optional<passes::GroupKind> kind = PlannedKind(op, shapes);
      if (!kind || !math.count(*kind)) continue;
      planned_as_math = true;
      if (Compiles(op, shapes)) {
        computed.insert(op);
        break;
      }
    }
    if (planned_as_math && !computed.count(op)) refused.insert(op);
  }
  const std::set<std::string> covered = CoveredOps();
  std::vector<std::string> missing;
  for (const std::string& op : computed) {
    if (!covered.count(op)) missing.push_back(op);
  }
  EXPECT_TRUE(missing.empty()) << "compiled ops without a special-value case (add one to "
                                  "bench/peers/special_values.py): "
                               << absl::StrJoin(missing, ", ");
  std::printf("special values: %zu cases cover %zu op types; the compiled path computes %zu f32 op types (%s);"
              " %zu planned as math but refused by the lowering (%s)\n",
              CaseNames().size(), covered.size(), computed.size(), absl::StrJoin(computed, " ").c_str(),
              refused.size(), absl::StrJoin(refused, " ").c_str());
  EXPECT_GE(CaseNames().size(), 50u) << "the committed data is missing; regenerate it (tests/data/special_values/README.md)";
}

}  // namespace
}  // namespace shapeshift::runtime
