#include "tests/fuzz/checks/onnx_import_check.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "graph/interpreter.h"
#include "graph/onnx/importer.h"
#include "graph/tensor.h"
#include "tests/fuzz/checks/weights_left_in_file_check.h"

namespace shapeshift::fuzz {
namespace {

// A directory that does not exist: external data never resolves when the
// checker is off, so a fuzz input cannot make the importer read real files.
constexpr char kNoSuchBaseDir[] = "/nonexistent/shapeshift-fuzz";

void FillSmallValues(Tensor* t) {
  const int64_t n = t->num_elements();
  for (int64_t i = 0; i < n; ++i) {
    switch (t->dtype()) {
      case DType::kF32: t->mutable_data<float>()[i] = static_cast<float>(i % 7) * 0.25f - 0.5f; break;
      case DType::kF64: t->mutable_data<double>()[i] = static_cast<double>(i % 5) - 1.0; break;
      case DType::kI64: t->mutable_data<int64_t>()[i] = i % 3; break;
      case DType::kI32: t->mutable_data<int32_t>()[i] = static_cast<int32_t>(i % 3); break;
      case DType::kBool: t->mutable_data<bool>()[i] = (i % 2) == 0; break;
      default: return;  // zeros
    }
  }
}

// Inputs with every symbol bound to 2 (clamped into its declared range);
// std::nullopt when some input would be larger than the bound.
std::optional<std::vector<Tensor>> SmallInputs(const ImportedModel& model) {
  Assignment values;
  for (const SymbolInfo& s : model.env->symbols()) {
    values[s.name] = std::clamp<int64_t>(2, s.min, std::max(s.min, s.max));
  }
  std::vector<Tensor> inputs;
  for (const Value* input : model.graph->inputs()) {
    absl::StatusOr<std::vector<int64_t>> shape = input->type().Evaluate(values);
    if (!shape.ok()) return std::nullopt;
    int64_t elements = 1;
    for (int64_t d : *shape) {
      if (d < 0 || (d > 0 && elements > kMaxInterpretInputElements / d)) return std::nullopt;
      elements *= d;
    }
    absl::StatusOr<Tensor> t = Tensor::Zeros(input->type().dtype, *shape);
    if (!t.ok()) return std::nullopt;
    FillSmallValues(&*t);
    inputs.push_back(*std::move(t));
  }
  return inputs;
}

Violation CheckOne(const std::string& bytes, const ImportOptions& options, absl::string_view mode) {
  absl::StatusOr<ImportedModel> model = ImportOnnxBytes(bytes, options, "fuzz-input");
  if (!model.ok()) {
    if (model.status().message().empty()) {
      return absl::StrCat("ImportOnnxBytes (", mode, ") rejects the input with an empty message");
    }
    return std::nullopt;
  }
  if (model->graph == nullptr || model->env == nullptr) {
    return absl::StrCat("ImportOnnxBytes (", mode, ") returns OK without a graph or env");
  }
  if (absl::Status verified = model->graph->Verify(); !verified.ok()) {
    return absl::StrCat("ImportOnnxBytes (", mode, ") accepts a model whose graph fails Verify: ",
                        verified.ToString());
  }
  if (std::optional<std::vector<Tensor>> inputs = SmallInputs(*model)) {
    absl::StatusOr<std::vector<Tensor>> outputs = Interpret(*model->graph, *inputs);
    if (!outputs.ok() && outputs.status().message().empty()) {
      return absl::StrCat("Interpret (", mode, ") fails with an empty message");
    }
  }
  return std::nullopt;
}

}  // namespace

Violation CheckOnnxImport(absl::string_view bytes) {
  if (Violation v = CheckWeightsLeftInFile(bytes)) return absl::StrCat("model file rewrite: ", *v);
  const std::string owned(bytes);
  ImportOptions checked;
  if (Violation v = CheckOne(owned, checked, "checker on")) return v;
  ImportOptions unchecked;
  unchecked.run_checker = false;
  unchecked.base_dir = kNoSuchBaseDir;
  return CheckOne(owned, unchecked, "checker off");
}

}  // namespace shapeshift::fuzz
