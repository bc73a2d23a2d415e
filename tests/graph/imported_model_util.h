// Helpers for tests that import the committed exports and read the ranges
// the importer gave their dims.
#ifndef SHAPESHIFT_TESTS_GRAPH_IMPORTED_MODEL_UTIL_H_
#define SHAPESHIFT_TESTS_GRAPH_IMPORTED_MODEL_UTIL_H_

#include <string>

#include "graph/onnx/importer.h"

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

}  // namespace shapeshift::testing

#endif  // SHAPESHIFT_TESTS_GRAPH_IMPORTED_MODEL_UTIL_H_
