// Helpers for tests that import the committed exports, read the ranges the
// importer gave their dims, and read their test data sets.
#ifndef SHAPESHIFT_TESTS_GRAPH_IMPORTED_MODEL_UTIL_H_
#define SHAPESHIFT_TESTS_GRAPH_IMPORTED_MODEL_UTIL_H_

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "graph/onnx/importer.h"
#include "graph/tensor_proto.h"
#include "gtest/gtest.h"

namespace shapeshift::testing {

// tests/data/models/<name>/model.onnx in the source tree.
inline std::string ExportPath(const std::string& name) {
  return std::string(SHAPESHIFT_SOURCE_DIR) + "/tests/data/models/" + name + "/model.onnx";
}

// The range `name` has after import, as "lo..hi" ("<no symbol>" if none).
inline std::string RangeOf(const ImportedModel& model, const std::string& name) {
  const SymbolInfo* s = model.env->FindSymbol(name);
  if (s == nullptr) return "<no symbol>";
  return std::to_string(s->min) + ".." + std::to_string(s->max);
}

// Tensors `prefix`_0.pb, _1.pb, ... of `dir` (a test_data_set_N/ with its
// trailing slash), in order, up to the first missing one; an unreadable file
// fails the test naming it.
inline std::vector<Tensor> ReadNumbered(const std::string& dir, const std::string& prefix) {
  std::vector<Tensor> tensors;
  for (int k = 0;; ++k) {
    std::string path = dir + prefix + "_" + std::to_string(k) + ".pb";
    if (!std::filesystem::exists(path)) break;
    absl::StatusOr<Tensor> t = ReadTensorProtoFile(path);
    EXPECT_TRUE(t.ok()) << path << ": " << t.status();
    if (!t.ok()) break;
    tensors.push_back(*std::move(t));
  }
  return tensors;
}

}  // namespace shapeshift::testing

#endif  // SHAPESHIFT_TESTS_GRAPH_IMPORTED_MODEL_UTIL_H_
