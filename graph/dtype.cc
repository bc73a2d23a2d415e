// DType facts and the mapping to ONNX's TensorProto element-type numbers.
#include "graph/dtype.h"

namespace shapeshift {
namespace {

// onnx::TensorProto_DataType values; spelled out so this file needs no
// protobuf header (the numbers are part of the ONNX file format).
constexpr int kOnnxFloat = 1;
constexpr int kOnnxUint8 = 2;
constexpr int kOnnxInt8 = 3;
constexpr int kOnnxInt32 = 6;
constexpr int kOnnxInt64 = 7;
constexpr int kOnnxBool = 9;
constexpr int kOnnxFloat16 = 10;
constexpr int kOnnxDouble = 11;
constexpr int kOnnxBFloat16 = 16;

}  // namespace

size_t DTypeSize(DType t) {
  switch (t) {
    case DType::kF32: return 4;
    case DType::kF64: return 8;
    case DType::kF16: return 2;
    case DType::kBF16: return 2;
    case DType::kI64: return 8;
    case DType::kI32: return 4;
    case DType::kI8: return 1;
    case DType::kU8: return 1;
    case DType::kBool: return 1;
  }
  return 0;
}

absl::string_view DTypeName(DType t) {
  switch (t) {
    case DType::kF32: return "f32";
    case DType::kF64: return "f64";
    case DType::kF16: return "f16";
    case DType::kBF16: return "bf16";
    case DType::kI64: return "i64";
    case DType::kI32: return "i32";
    case DType::kI8: return "i8";
    case DType::kU8: return "u8";
    case DType::kBool: return "bool";
  }
  return "?";
}

bool IsFloat(DType t) {
  return t == DType::kF32 || t == DType::kF64 || t == DType::kF16 || t == DType::kBF16;
}

bool IsInteger(DType t) {
  return t == DType::kI64 || t == DType::kI32 || t == DType::kI8 || t == DType::kU8;
}

std::optional<DType> DTypeFromOnnx(int onnx_elem_type) {
  switch (onnx_elem_type) {
    case kOnnxFloat: return DType::kF32;
    case kOnnxUint8: return DType::kU8;
    case kOnnxInt8: return DType::kI8;
    case kOnnxInt32: return DType::kI32;
    case kOnnxInt64: return DType::kI64;
    case kOnnxBool: return DType::kBool;
    case kOnnxFloat16: return DType::kF16;
    case kOnnxDouble: return DType::kF64;
    case kOnnxBFloat16: return DType::kBF16;
    default: return std::nullopt;
  }
}

int DTypeToOnnx(DType t) {
  switch (t) {
    case DType::kF32: return kOnnxFloat;
    case DType::kF64: return kOnnxDouble;
    case DType::kF16: return kOnnxFloat16;
    case DType::kBF16: return kOnnxBFloat16;
    case DType::kI64: return kOnnxInt64;
    case DType::kI32: return kOnnxInt32;
    case DType::kI8: return kOnnxInt8;
    case DType::kU8: return kOnnxUint8;
    case DType::kBool: return kOnnxBool;
  }
  return 0;
}

}  // namespace shapeshift
