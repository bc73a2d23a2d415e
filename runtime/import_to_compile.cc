#include "runtime/import_to_compile.h"

#include <cstdint>
#include <string>

#include "absl/container/flat_hash_set.h"

#include "codegen/cpu/packed_weights.h"
#include "onnx/onnx_pb.h"

namespace shapeshift::runtime {
namespace {

// The initializers read only as a Gather's table (embeddings: looked up by
// row, never packed), by name.
absl::flat_hash_set<std::string> EmbeddingTables(const onnx::GraphProto& graph) {
  absl::flat_hash_set<std::string> gathered, other;
  for (const onnx::NodeProto& node : graph.node()) {
    for (int i = 0; i < node.input_size(); ++i) {
      (node.op_type() == "Gather" && i == 0 ? gathered : other).insert(node.input(i));
    }
  }
  absl::flat_hash_set<std::string> tables;
  for (const std::string& name : gathered) {
    if (!other.contains(name)) tables.insert(name);
  }
  return tables;
}

}  // namespace

bool CompilePacksWeights(const CompileOptions& options) {
  return options.device == Device::kCpu && options.pack_small_row_gemms;
}

absl::StatusOr<ImportedModel> ImportOnnxFileToCompile(const std::string& path, const ImportOptions& import,
                                                      bool packs) {
  absl::StatusOr<OnnxFile> file = ParseOnnxFile(path);
  if (!file.ok()) return file.status();
  if (packs) {
      int64_t bytes = 0, count = 0;
    const absl::flat_hash_set<std::string> tables = EmbeddingTables(file->model->graph());
    for (const WeightInFile& w : file->weights) {
      if (tables.contains(w.name)) continue;
      bytes += w.size;
      ++count;
    }
    codegen::cpu::ReservePackedPages(bytes, count);
  }
  absl::StatusOr<ImportedModel> model = ImportParsedOnnxFile(*file, import);
  if (!model.ok()) codegen::cpu::ReleaseUnclaimedPackedPages();
  return model;
}

}  // namespace shapeshift::runtime
