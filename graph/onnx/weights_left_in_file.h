// Reading a model file without copying its weights: the message is parsed
// from a small copy of the file's bytes in which every large raw initializer
// names its own bytes in the file, as ONNX external data, instead of holding
// them. The importer then reads (or copies file to file into the weights
// spill, graph/constant_spill.h) each weight from the file it is already in.
//
// Why: parsing a 650 MB GPT-2 export made protobuf copy every weight into
// fresh heap strings (650 MB of pages zeroed, then filled by 80 000 reads),
// only for the importer to write them out again to the spill file; that was
// most of a cold start's load time and its peak memory.
//
// The rewrite works on the protobuf wire format, one level per message: the
// ModelProto's `graph`, the GraphProto's `initializer`s, each TensorProto's
// fields. Every other byte is kept as it is, so the message parsed from the
// result is the one the file holds, but for the rewritten initializers:
// `data_location` EXTERNAL with `location` (the model's file name), `offset`
// and `length` where its raw_data bytes lie in the file — a faithful ONNX
// description of the same bytes that the ONNX checker accepts. Anything the
// rewrite does not understand (groups, a second `graph`, a truncated field)
// makes it decline: the caller parses the whole file as before, and a bad
// file gets the parser's own error.
#ifndef SHAPESHIFT_GRAPH_ONNX_WEIGHTS_LEFT_IN_FILE_H_
#define SHAPESHIFT_GRAPH_ONNX_WEIGHTS_LEFT_IN_FILE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shapeshift {

// One initializer whose raw bytes stayed in the file.
struct WeightInFile {
  int index = 0;      // in the graph's initializer list
  std::string name;   // its `name`, for a cross-check where it is read
  int64_t offset = 0; // of its first raw byte in the file
  int64_t size = 0;
};

struct ModelWithoutWeights {
  std::string message;  // the serialized ModelProto, weights left out
  std::vector<WeightInFile> weights;
};

// `file` is a serialized ModelProto (a whole model file's bytes), `location`
// the file's name as external data names it (relative to the model's
// directory). Top-level initializers whose raw_data has `min_bytes` or more
// are left in the file; nullopt where the bytes are not a message this
// rewrite understands, or where nothing is large enough to leave out.
// Reads only the fields' headers: the weights' bytes are never touched (on a
// mapped file their pages are not read).
std::optional<ModelWithoutWeights> LeaveWeightsInFile(std::string_view file, const std::string& location,
                                                      size_t min_bytes);

}  // namespace shapeshift

#endif  // SHAPESHIFT_GRAPH_ONNX_WEIGHTS_LEFT_IN_FILE_H_
