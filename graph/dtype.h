// Element types shapeshift knows. f32, i64, i32 and bool are complete end to
// end; f16/bf16 are carried by the IR and the importer (stored as raw 16-bit
// words) so models that mention them can be inspected and reported clearly.
#ifndef SHAPESHIFT_GRAPH_DTYPE_H_
#define SHAPESHIFT_GRAPH_DTYPE_H_

#include <cstddef>
#include <cstdint>
#include <optional>

#include "absl/strings/string_view.h"

namespace shapeshift {

enum class DType : uint8_t {
  kF32,
  kF64,
  kF16,
  kBF16,
  kI64,
  kI32,
  kI8,
  kU8,
  kBool,
};

size_t DTypeSize(DType t);
absl::string_view DTypeName(DType t);  // "f32", "i64", "bool", ...
bool IsFloat(DType t);
bool IsInteger(DType t);  // signed or unsigned integer types (not bool)

// Mapping to and from onnx::TensorProto_DataType numbers (FLOAT = 1, ...);
// nullopt for element types shapeshift does not support.
std::optional<DType> DTypeFromOnnx(int onnx_elem_type);
int DTypeToOnnx(DType t);

}  // namespace shapeshift

#endif  // SHAPESHIFT_GRAPH_DTYPE_H_
