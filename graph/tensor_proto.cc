// TensorProto <-> Tensor. ONNX stores the same tensor several ways (raw
// little-endian bytes, typed repeated fields where small types widen to
// int32, or an external file); all of them decode to one dense Tensor here so
// no other code needs to know about the variants.
#include "graph/tensor_proto.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "onnx/onnx_pb.h"

namespace shapeshift {
namespace {

namespace fs = std::filesystem;

// Copies a typed repeated field into the tensor, narrowing each element to
// the tensor's element type T (ONNX widens int8/bool/f16 to int32 here).
template <typename T, typename Field>
absl::Status CopyTypedField(const Field& field, Tensor* tensor, const std::string& what) {
  if (static_cast<int64_t>(field.size()) != tensor->num_elements()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": has ", field.size(),
                                                   " values but its shape needs ",
                                                   tensor->num_elements()));
  }
  T* out = tensor->mutable_data<T>();
  for (int i = 0; i < field.size(); ++i) out[i] = static_cast<T>(field.Get(i));
  return absl::OkStatus();
}

absl::Status CopyRawBytes(const std::string& bytes, Tensor* tensor, const std::string& what) {
  if (bytes.size() != tensor->byte_size()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": raw data has ", bytes.size(),
                                                   " bytes but its shape and type need ",
                                                   tensor->byte_size()));
  }
  if (!bytes.empty()) std::memcpy(tensor->mutable_raw(), bytes.data(), bytes.size());
  return absl::OkStatus();
}

// Reads `length` bytes at `offset` of the external file named by the proto,
// refusing paths that leave `base_dir` (a model must not read arbitrary files).
absl::StatusOr<std::string> ReadExternalData(const onnx::TensorProto& proto,
                                             const std::string& base_dir,
                                             const std::string& what) {
  std::string location;
  int64_t offset = 0;
  int64_t length = -1;
  for (const onnx::StringStringEntryProto& entry : proto.external_data()) {
    if (entry.key() == "location") {
      location = entry.value();
    } else if (entry.key() == "offset" || entry.key() == "length") {
      int64_t v;
      if (!absl::SimpleAtoi(entry.value(), &v) || v < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(what, ": bad external data ", entry.key(), " '", entry.value(), "'"));
      }
      (entry.key() == "offset" ? offset : length) = v;
    }
  }
  if (location.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": external data without a location"));
  }
  std::error_code ec;
  const fs::path base = fs::weakly_canonical(fs::path(base_dir.empty() ? "." : base_dir), ec);
  const fs::path file = fs::weakly_canonical(base / location, ec);
  const auto [base_end, unused] = std::mismatch(base.begin(), base.end(), file.begin(), file.end());
  if (ec || fs::path(location).is_absolute() || base_end != base.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": external data location '", location, "' is outside ", base.string()));
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat(what, ": cannot open external data file ", file.string()));
  }
  in.seekg(0, std::ios::end);
  const int64_t file_size = static_cast<int64_t>(in.tellg());
  if (length < 0) length = file_size - offset;
  if (offset > file_size || length > file_size - offset) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": external data range [", offset, ", +",
                                                   length, ") exceeds file ", file.string(), " (",
                                                   file_size, " bytes)"));
  }
  std::string bytes(static_cast<size_t>(length), '\0');
  in.seekg(offset);
  in.read(bytes.data(), length);
  if (!in) return absl::DataLossError(absl::StrCat(what, ": short read from ", file.string()));
  return bytes;
}

// The element count a shape declares, refusing negative dims and counts that
// overflow or exceed Tensor::kMaxElements — computed without allocating.
absl::StatusOr<int64_t> DeclaredElementCount(const std::vector<int64_t>& shape,
                                             const std::string& what) {
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": negative dimension ", d));
    }
    if (d != 0 && count > Tensor::kMaxElements / d) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": shape has more than ", Tensor::kMaxElements, " elements"));
    }
    count *= d;
  }
  return count;
}

// Number of values in the typed repeated field that holds `dtype`'s data.
int64_t TypedFieldSize(const onnx::TensorProto& proto, DType dtype) {
  switch (dtype) {
    case DType::kF32: return proto.float_data_size();
    case DType::kF64: return proto.double_data_size();
    case DType::kI64: return proto.int64_data_size();
    default: return proto.int32_data_size();
  }
}

absl::Status CopyTypedData(const onnx::TensorProto& proto, Tensor* tensor,
                           const std::string& what) {
  switch (tensor->dtype()) {
    case DType::kF32: return CopyTypedField<float>(proto.float_data(), tensor, what);
    case DType::kF64: return CopyTypedField<double>(proto.double_data(), tensor, what);
    case DType::kI64: return CopyTypedField<int64_t>(proto.int64_data(), tensor, what);
    case DType::kI32: return CopyTypedField<int32_t>(proto.int32_data(), tensor, what);
    case DType::kI8: return CopyTypedField<int8_t>(proto.int32_data(), tensor, what);
    case DType::kU8: return CopyTypedField<uint8_t>(proto.int32_data(), tensor, what);
    case DType::kBool: return CopyTypedField<uint8_t>(proto.int32_data(), tensor, what);
    case DType::kF16:
    case DType::kBF16: return CopyTypedField<uint16_t>(proto.int32_data(), tensor, what);
  }
  return absl::InternalError(absl::StrCat(what, ": unhandled element type"));
}

}  // namespace

namespace {

// Both TensorFromProto forms: `raw`, when given, makes the tensors stored as
// raw bytes.
absl::StatusOr<Tensor> DecodeTensorProto(const onnx::TensorProto& proto, const std::string& base_dir,
                                         const std::string& what, std::optional<RawTensorMaker> raw_maker) {
  std::optional<DType> dtype = DTypeFromOnnx(proto.data_type());
  if (!dtype) {
    const std::string type_name =
        onnx::TensorProto_DataType_IsValid(proto.data_type())
            ? onnx::TensorProto_DataType_Name(
                  static_cast<onnx::TensorProto_DataType>(proto.data_type()))
            : absl::StrCat(proto.data_type());
    return absl::UnimplementedError(
        absl::StrCat(what, ": unsupported element type ", type_name));
  }
  if (proto.has_segment()) {
    return absl::UnimplementedError(absl::StrCat(what, ": segmented tensors are not supported"));
  }
  std::vector<int64_t> shape(proto.dims().begin(), proto.dims().end());
  // Compare the declared size with the data actually present BEFORE
  // allocating: a header that claims f32[2^33] with no data must cost nothing.
  absl::StatusOr<int64_t> declared = DeclaredElementCount(shape, what);
  if (!declared.ok()) return declared.status();
  const int64_t declared_bytes = *declared * static_cast<int64_t>(DTypeSize(*dtype));
  std::string external_bytes;
  const std::string* raw = nullptr;
  if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
    absl::StatusOr<std::string> bytes = ReadExternalData(proto, base_dir, what);
    if (!bytes.ok()) return bytes.status();
    external_bytes = *std::move(bytes);
    raw = &external_bytes;
  } else if (proto.has_raw_data()) {
    raw = &proto.raw_data();
  }
  if (raw != nullptr && static_cast<int64_t>(raw->size()) != declared_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": raw data has ", raw->size(),
                                                   " bytes but its shape and type need ",
                                                   declared_bytes));
  }
  if (raw == nullptr && TypedFieldSize(proto, *dtype) != *declared) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": has ", TypedFieldSize(proto, *dtype),
                                                   " values but its shape needs ", *declared));
  }
  if (raw != nullptr && raw_maker.has_value()) {
    absl::StatusOr<std::optional<Tensor>> made = (*raw_maker)(*dtype, shape, *raw);
    if (!made.ok()) return absl::Status(made.status().code(), absl::StrCat(what, ": ", made.status().message()));
    if (made->has_value()) return **std::move(made);
  }
  absl::StatusOr<Tensor> tensor = Tensor::Zeros(*dtype, shape);
  if (!tensor.ok()) {
    return absl::Status(tensor.status().code(), absl::StrCat(what, ": ", tensor.status().message()));
  }
  absl::Status copied =
      raw != nullptr ? CopyRawBytes(*raw, &*tensor, what) : CopyTypedData(proto, &*tensor, what);
  if (!copied.ok()) return copied;
  return tensor;
}

}  // namespace

absl::StatusOr<Tensor> TensorFromProto(const onnx::TensorProto& proto, const std::string& base_dir,
                                       const std::string& what) {
  return DecodeTensorProto(proto, base_dir, what, std::nullopt);
}

absl::StatusOr<Tensor> TensorFromProto(const onnx::TensorProto& proto, const std::string& base_dir,
                                       const std::string& what, RawTensorMaker raw) {
  return DecodeTensorProto(proto, base_dir, what, raw);
}

void TensorToProto(const Tensor& tensor, const std::string& name, onnx::TensorProto* proto) {
  proto->Clear();
  proto->set_name(name);
  proto->set_data_type(DTypeToOnnx(tensor.dtype()));
  for (int64_t d : tensor.shape()) proto->add_dims(d);
  proto->set_raw_data(static_cast<const char*>(tensor.raw()), tensor.byte_size());
}

absl::StatusOr<Tensor> ReadTensorProtoFile(const std::string& path, std::string* name) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open tensor file ", path));
  std::stringstream buffer;
  buffer << in.rdbuf();
  onnx::TensorProto proto;
  if (!proto.ParseFromString(buffer.str())) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a valid serialized TensorProto"));
  }
  if (name != nullptr) *name = proto.name();
  return TensorFromProto(proto, fs::path(path).parent_path().string(),
                         absl::StrCat("tensor file ", path));
}

}  // namespace shapeshift
