// ONNX importer: ModelProto → Graph with symbolic dimensions, plus the
// ShapeEnv holding those symbols and their declared ranges.
//
// Why a symbol per named dim: an exporter marks dynamic axes with
// `dim_param` names (`batch`, `sequence`); every occurrence of the same name
// is the same symbol, so `input_ids[batch, sequence]` and
// `attention_mask[batch, sequence]` are known to agree without a guard.
// Dynamic dims without a name get fresh symbols (`unk0`, `unk1`, ...).
//
// Ranges: ImportOptions::dim_ranges declares [min, max] per dim_param name;
// a dim the caller does not declare takes the range recorded in the model's
// metadata (`shapeshift.dim.<name>` = `lo..hi`, exporter.h), and otherwise
// defaults to [kDefaultDimMin, kDefaultDimMax] =
// [1, 65536] (dims of size 0 are rare in serving and a positive lower bound
// lets broadcasting and Reshape questions be proven) — except a KV cache's
// length, which defaults to [0, 65536] (empty at a generation's first step;
// cache_dims.h), or [1, 65536] with a note where a node needs it positive.
// Where the model itself
// only works on part of that default (a position table of 512 rows), shape
// inference narrows the undeclared dim to the widest range it can prove the
// model valid on, and says so in ImportedModel::notes; a declared range is
// never narrowed (the error names the range that works). Why that is sound:
// graph/README.md.
//
// The importer runs the ONNX checker, expands ONNX Runtime's fused ops
// (contrib_ops.h), converts initializers (inline and
// external data, relative to the model's directory), runs symbolic shape
// inference node by node, and reports every unsupported op (op type, node
// name, opset) in one error — never a crash, never a partial graph.
#ifndef SHAPESHIFT_GRAPH_ONNX_IMPORTER_H_
#define SHAPESHIFT_GRAPH_ONNX_IMPORTER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "base/file_descriptor.h"
#include "graph/graph.h"
#include "graph/onnx/weights_left_in_file.h"
#include "shapes/shape_env.h"

namespace onnx {
class ModelProto;
}  // namespace onnx

namespace shapeshift {

class ConstantSpill;  // graph/constant_spill.h

struct DimRange {
  int64_t min = 1;
  int64_t max = 65536;
};

inline constexpr int64_t kDefaultDimMin = 1;
inline constexpr int64_t kDefaultDimMax = 65536;

struct ImportOptions {
  // dim_param name → declared inclusive range (e.g. {"seq", {1, 512}}).
  std::map<std::string, DimRange> dim_ranges;
  // dim_param name → the dims it is the sum of (`--dim
  // total_sequence=past_sequence+sequence`): the axis gets that expression
  // instead of a symbol of its own, so the model's contract (a GPT-2 mask
  // covers past and new tokens) is known to shape inference; inputs that
  // break it are rejected when dims are bound.
  std::map<std::string, std::vector<std::string>> dim_sums;
  // Directory external-data paths are resolved against; ImportOnnxFile sets
  // it to the model file's directory when empty.
  std::string base_dir;
  // Run onnx::checker::check_model first (on by default).
  bool run_checker = true;
  // Initializers of kSpillMinBytes or more are written straight from the
  // message (or external file) to this spill file instead of the heap
  // (graph/constant_spill.h); null = in memory. Must be open during import
  // only: the tensors keep their mappings.
  ConstantSpill* spill = nullptr;
};

// The result owns both the symbols and the graph that mentions them.
struct ImportedModel {
  std::unique_ptr<ShapeEnv> env;
  std::unique_ptr<Graph> graph;
  int64_t ir_version = 0;
  int opset = 0;                // default-domain opset
  std::string producer;         // producer_name + version, e.g. "pytorch 2.1"
  // What the importer did that a user may want to know (e.g. an IR-10 model
  // checked as IR 8: model_checker.h; an undeclared dim narrowed to the range
  // the model implies, naming the node that needed it); one sentence each.
  std::vector<std::string> notes;
};

absl::StatusOr<ImportedModel> ImportOnnxFile(const std::string& path,
                                             const ImportOptions& options = {});

// A model file's message as ParseOnnxFile reads it. Its raw initializers of
// kSpillMinBytes or more are not copied into the message: they stay in the
// file, described in the message as external data naming that file
// (graph/onnx/weights_left_in_file.h), and `fd` holds the file open so the
// import reads each of them from the file it was parsed from (straight into
// the weights spill or the tensor: never through the message).
struct OnnxFile {
  OnnxFile();
  ~OnnxFile();
  OnnxFile(OnnxFile&&) noexcept;
  OnnxFile& operator=(OnnxFile&&) noexcept;
  std::string path;
  std::unique_ptr<onnx::ModelProto> model;
  std::vector<WeightInFile> weights;          // left in the file, in initializer order
  std::shared_ptr<const FileDescriptor> fd;   // open on `path` while `weights` is not empty
};

// The two halves of ImportOnnxFile, for callers that read the message before
// importing it (the CLI reads the dim ranges recorded in its metadata).
// ImportParsedOnnxFile releases each initializer's data from the message once
// it has become a tensor, so the weights are held once, not twice. A path
// that is a directory is an error saying so (not a parse failure).
absl::StatusOr<OnnxFile> ParseOnnxFile(const std::string& path);
absl::StatusOr<ImportedModel> ImportParsedOnnxFile(OnnxFile& file, const ImportOptions& options = {});
// A message that is not a file of its own (an AOT bundle's model record):
// external data is resolved in options.base_dir, by the checker as well.
// `what` names the source in error messages.
absl::StatusOr<ImportedModel> ImportParsedOnnx(onnx::ModelProto& model, const ImportOptions& options,
                                               const std::string& what);
// `what` names the source in error messages (e.g. a file name). The ONNX
// checker only sees bytes here, so it looks for external data relative to
// the working directory: for models with external data prefer
// ImportOnnxFile (or set run_checker = false and base_dir).
absl::StatusOr<ImportedModel> ImportOnnxBytes(const std::string& bytes,
                                              const ImportOptions& options = {},
                                              const std::string& what = "<bytes>");

// Parses the CLI's --dim syntax `name=lo..hi` into `options->dim_ranges`.
absl::Status ParseDimRangeFlag(const std::string& flag, ImportOptions* options);
// Also accepts `name=a+b[+...]` (other dim names) into `options->dim_sums`;
// the model metadata `shapeshift.dim.<name>` uses this form.
absl::Status ParseDimFlag(const std::string& flag, ImportOptions* options);

}  // namespace shapeshift

#endif  // SHAPESHIFT_GRAPH_ONNX_IMPORTER_H_
