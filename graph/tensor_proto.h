// Conversion between onnx::TensorProto and Tensor: initializers, Constant
// values and the backend test data (`input_0.pb`) all travel as TensorProto.
// Handles raw_data and the typed repeated fields, and external data files
// (resolved relative to `base_dir`, never escaping it).
#ifndef SHAPESHIFT_GRAPH_TENSOR_PROTO_H_
#define SHAPESHIFT_GRAPH_TENSOR_PROTO_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "graph/tensor.h"

namespace onnx {
class TensorProto;
}

namespace shapeshift {

// `what` names the tensor in error messages (e.g. "initializer 'bert.w0'").
absl::StatusOr<Tensor> TensorFromProto(const onnx::TensorProto& proto, const std::string& base_dir,
                                       const std::string& what);
// A tensor's raw bytes, where they are: the message's raw_data, or a range
// of an external data file (open while a RawTensorMaker runs, its range
// checked against the file's size). Nothing is read until asked.
struct RawBytes {
  const std::string* memory = nullptr;  // the message's bytes; null: external
  int fd = -1;                          // external: the file, read with pread
  int64_t offset = 0;
  size_t size = 0;
  std::string file;  // external: its path, for messages
  // All `size` bytes into `dst`; DATA_LOSS naming the file on a short read.
  absl::Status ReadInto(void* dst) const;
};
// The same, but a tensor stored as raw bytes (in the message or an external
// file) is first offered to `raw(dtype, shape, bytes)` once its header and
// size are checked: a tensor it makes is the result (how the importer writes
// large weights straight to a spill file, graph/constant_spill.h, never
// copying them into the heap); nullopt decodes it into memory as usual —
// an external one read straight into the tensor's storage.
// `located`, when given, is where an external tensor's bytes are, found by
// the caller (an open file and a range: the weights ParseOnnxFile left in the
// model file); it is used instead of resolving the message's location, and
// its file is not closed here.
using RawTensorMaker = absl::FunctionRef<absl::StatusOr<std::optional<Tensor>>(
    DType, const std::vector<int64_t>&, const RawBytes& bytes)>;
absl::StatusOr<Tensor> TensorFromProto(const onnx::TensorProto& proto, const std::string& base_dir,
                                       const std::string& what, RawTensorMaker raw,
                                       const RawBytes* located = nullptr);
void TensorToProto(const Tensor& tensor, const std::string& name, onnx::TensorProto* proto);
// The same tensor as external data: its type and dims, and `location` /
// `offset` / `length` (its byte_size) where the caller put its bytes.
void TensorToExternalProto(const Tensor& tensor, const std::string& name, const std::string& location,
                           int64_t offset, onnx::TensorProto* proto);
// Reads a serialized TensorProto file (e.g. test_data_set_0/input_0.pb).
absl::StatusOr<Tensor> ReadTensorProtoFile(const std::string& path, std::string* name = nullptr);

}  // namespace shapeshift

#endif  // SHAPESHIFT_GRAPH_TENSOR_PROTO_H_
