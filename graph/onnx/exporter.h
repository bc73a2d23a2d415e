// ONNX exporter: Graph (+ the ShapeEnv naming its symbols) → ModelProto.
//
// Why: models built in C++ (examples/ builders, graphs a pass produced)
// should be usable everywhere an ONNX file is — `shapeshift run model.onnx`,
// ONNX Runtime, Netron — and going through a file and back through the
// importer proves the builder graph and the importer agree on semantics.
//
// Constants become initializers; inputs and outputs get value_info whose
// symbolic dims are written as `dim_param`, constant dims as `dim_value`. A
// symbol is written by its name; a derived input dim that is a sum of
// symbols (`past + seq`) by a name of its own (`past_plus_seq`) recorded as
// metadata_props `shapeshift.dim.past_plus_seq` = `past+seq`, which the
// importer reads back as the sum (any other derived input dim is an error:
// ONNX names an input's dims); a derived output dim by its text
// (documentation to importers). The declared ranges of the symbols are
// recorded as metadata_props `shapeshift.dim.<name>` = `lo..hi` (ONNX has no
// field for them; other tools ignore the entries). The result passes the ONNX
// checker, which the exporter runs before returning (the importer's:
// model_checker.h, so a graph of an opset newer than the linked libonnx
// exports as it imported).
#ifndef SHAPESHIFT_GRAPH_ONNX_EXPORTER_H_
#define SHAPESHIFT_GRAPH_ONNX_EXPORTER_H_

#include <functional>
#include <map>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "graph/onnx/importer.h"
#include "shapes/shape_env.h"

namespace onnx {
class ModelProto;
}

namespace shapeshift {

// Where initializers' bytes go instead of the message (ONNX external data):
// the message stays small whatever the weights weigh (protobuf caps one at
// 2 GiB). `write` is called once per initializer of `min_bytes` or more, in
// graph order, puts its bytes somewhere in the file `location` (a name in
// `dir`, where the checker looks for it) and returns their offset there.
struct ExternalDataSink {
  std::string dir;
  std::string location;
  size_t min_bytes = 0;
  std::function<absl::StatusOr<int64_t>(const Tensor&)> write;
};

struct ExportOptions {
  std::string producer_name = "shapeshift";
  std::string graph_name = "shapeshift_graph";
  // Unset: every initializer's bytes are in the message.
  std::optional<ExternalDataSink> external_data;
};

// Prefix of the metadata_props keys holding declared dim ranges.
inline constexpr char kDimRangeMetadataPrefix[] = "shapeshift.dim.";

// Fills `model`; an error names the node or attribute that cannot be
// written, or quotes the ONNX checker.
absl::Status ExportOnnxModel(const Graph& graph, const ShapeEnv& env, const ExportOptions& options,
                             onnx::ModelProto* model);
absl::StatusOr<std::string> ExportOnnxBytes(const Graph& graph, const ShapeEnv& env,
                                            const ExportOptions& options = {});
// Writes the serialized model to `path`; an error names the file.
absl::Status ExportOnnxFile(const Graph& graph, const ShapeEnv& env, const std::string& path,
                            const ExportOptions& options = {});

// The dims a model recorded in its `shapeshift.dim.<name>` metadata, parsed
// like --dim flags: ranges (written by this exporter) and sums (written by
// bench/peers/export_models.py, e.g. total_sequence = past_sequence+sequence);
// empty for other models. An error names a malformed entry.
absl::StatusOr<ImportOptions> ReadRecordedDims(const onnx::ModelProto& model);

}  // namespace shapeshift

#endif  // SHAPESHIFT_GRAPH_ONNX_EXPORTER_H_
