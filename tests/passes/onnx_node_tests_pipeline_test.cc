// The pipeline on every ONNX backend node test model shipped by Debian's
// libonnx-testdata: it must never crash, every error must be a Status, and
// wherever the interpreter runs the original graph the optimized graph must
// give the same outputs on the test's own inputs (floats within rtol 1e-4 /
// atol 1e-5, NaN equal to NaN; integers exactly). Hundreds of small graphs
// exercise folding, simplification and CSE on ops no hand-written test covers.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "graph/interpreter.h"
#include "graph/onnx/importer.h"
#include "graph/tensor_proto.h"
#include "gtest/gtest.h"
#include "passes/pipeline.h"

namespace shapeshift::passes {
namespace {

namespace fs = std::filesystem;

constexpr char kNodeTests[] = "/usr/share/libonnx-testdata/data/node";

std::vector<Tensor> ReadInputs(const fs::path& set) {
  std::vector<Tensor> out;
  for (int i = 0;; ++i) {
    fs::path p = set / ("input_" + std::to_string(i) + ".pb");
    if (!fs::exists(p)) break;
    absl::StatusOr<Tensor> t = ReadTensorProtoFile(p.string());
    if (!t.ok()) return {};
    out.push_back(*std::move(t));
  }
  return out;
}

bool Same(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    if (IsFloat(a.dtype())) {
      double x = a.GetAsDouble(i), y = b.GetAsDouble(i);
      if (std::isnan(x) && std::isnan(y)) continue;
      if (x == y) continue;  // equal infinities
      if (!(std::abs(x - y) <= 1e-5 + 1e-4 * std::abs(y))) return false;
    } else if (a.GetAsInt64(i) != b.GetAsInt64(i)) {
      return false;
    }
  }
  return true;
}

TEST(OnnxNodeTestsPipelineTest, OptimizedGraphsComputeWhatTheOriginalsCompute) {
  // libonnx-testdata is a declared dependency (scripts/setup-deps.sh): its
  // absence is a broken set-up, not a reason to skip.
  ASSERT_TRUE(fs::exists(kNodeTests)) << kNodeTests << " is not installed (run scripts/setup-deps.sh)";
  int compared = 0;
  std::vector<std::string> pipeline_errors;
  for (const fs::directory_entry& dir : fs::directory_iterator(kNodeTests)) {
    fs::path model_path = dir.path() / "model.onnx";
    fs::path set = dir.path() / "test_data_set_0";
    if (!fs::exists(model_path) || !fs::exists(set)) continue;
    std::vector<Tensor> inputs = ReadInputs(set);
    absl::StatusOr<ImportedModel> original = ImportOnnxFile(model_path.string());
    if (!original.ok() || inputs.size() != original->graph->inputs().size()) continue;
    absl::StatusOr<std::vector<Tensor>> want = Interpret(*original->graph, inputs);
    if (!want.ok()) continue;
    absl::StatusOr<ImportedModel> model = ImportOnnxFile(model_path.string());
    ASSERT_TRUE(model.ok());
    absl::StatusOr<PipelineResult> result = RunPipeline(*model->graph, *model->env);
    if (!result.ok()) {
      pipeline_errors.push_back(dir.path().filename().string() + ": " + std::string(result.status().message()));
      continue;
    }
    absl::StatusOr<std::vector<Tensor>> got = Interpret(*model->graph, inputs);
    ASSERT_TRUE(got.ok()) << dir.path().filename() << ": " << got.status();
    ASSERT_EQ(got->size(), want->size()) << dir.path().filename();
    for (size_t i = 0; i < want->size(); ++i) {
      EXPECT_TRUE(Same((*got)[i], (*want)[i]))
          << dir.path().filename() << " output " << i << ": " << (*got)[i].DebugString() << " vs "
          << (*want)[i].DebugString();
    }
    ++compared;
  }
  std::ostringstream errors;
  for (const std::string& e : pipeline_errors) errors << "\n  " << e;
  EXPECT_TRUE(pipeline_errors.empty()) << pipeline_errors.size() << " pipeline errors:" << errors.str();
  EXPECT_GE(compared, 500);
}

}  // namespace
}  // namespace shapeshift::passes
