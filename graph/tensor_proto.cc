// TensorProto <-> Tensor. ONNX stores the same tensor several ways (raw
// little-endian bytes, typed repeated fields where small types widen to
// int32, or an external file); all of them decode to one dense Tensor here so
// no other code needs to know about the variants.
#include "graph/tensor_proto.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/file_descriptor.h"
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

// Opens the external file named by the proto and checks the range it names,
// refusing paths that leave `base_dir` (a model must not read arbitrary
// files). Reads nothing: `bytes` says where the tensor's bytes are, and
// `bytes->fd` is the caller's to close.
absl::Status OpenExternalData(const onnx::TensorProto& proto, const std::string& base_dir, const std::string& what,
                              RawBytes* bytes) {
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
  // O_NONBLOCK: a FIFO named as the data is refused below, not waited on.
  const int fd = open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  struct stat st {};
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    if (fd >= 0) close(fd);
    return absl::NotFoundError(absl::StrCat(what, ": cannot open external data file ", file.string()));
  }
  const int64_t file_size = static_cast<int64_t>(st.st_size);
  if (length < 0) length = std::max<int64_t>(file_size - offset, 0);
  if (offset > file_size || length > file_size - offset) {
    close(fd);
    return absl::InvalidArgumentError(absl::StrCat(what, ": external data range [", offset, ", +",
                                                   length, ") exceeds file ", file.string(), " (",
                                                   file_size, " bytes)"));
  }
  bytes->fd = fd;
  bytes->offset = offset;
  bytes->size = static_cast<size_t>(length);
  bytes->file = file.string();
  return absl::OkStatus();
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
                                         const std::string& what, std::optional<RawTensorMaker> raw_maker,
                                         const RawBytes* located) {
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
  RawBytes raw_bytes;
  const RawBytes* raw = nullptr;
  std::optional<FileDescriptor> closer;  // a file opened here
  if (proto.data_location() == onnx::TensorProto::EXTERNAL && located != nullptr) {
    raw = located;
  } else if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
    if (absl::Status s = OpenExternalData(proto, base_dir, what, &raw_bytes); !s.ok()) return s;
    closer.emplace(raw_bytes.fd);
    raw = &raw_bytes;
  } else if (proto.has_raw_data()) {
    raw_bytes.memory = &proto.raw_data();
    raw_bytes.size = proto.raw_data().size();
    raw = &raw_bytes;
  }
  if (raw != nullptr && static_cast<int64_t>(raw->size) != declared_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": raw data has ", raw->size,
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
  // Raw bytes go straight into the tensor's storage: it is not zeroed first,
  // and an external file's bytes never pass through a buffer of their own.
  absl::StatusOr<Tensor> tensor =
      raw != nullptr ? Tensor::Uninitialized(*dtype, shape,
                                             [](size_t bytes) {
                                               return std::shared_ptr<std::byte[]>(new std::byte[bytes]);
                                             })
                     : Tensor::Zeros(*dtype, shape);
  if (!tensor.ok()) {
    return absl::Status(tensor.status().code(), absl::StrCat(what, ": ", tensor.status().message()));
  }
  if (raw == nullptr) {
    if (absl::Status s = CopyTypedData(proto, &*tensor, what); !s.ok()) return s;
    return tensor;
  }
  if (absl::Status s = raw->ReadInto(tensor->mutable_raw()); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat(what, ": ", s.message()));
  }
  return tensor;
}

}  // namespace

absl::Status RawBytes::ReadInto(void* dst) const {
  if (memory != nullptr) {
    if (size > 0) std::memcpy(dst, memory->data(), size);
    return absl::OkStatus();
  }
  if (!PreadFully(fd, dst, size, offset)) return absl::DataLossError(absl::StrCat("short read from ", file));
  return absl::OkStatus();
}

absl::StatusOr<Tensor> TensorFromProto(const onnx::TensorProto& proto, const std::string& base_dir,
                                       const std::string& what) {
  return DecodeTensorProto(proto, base_dir, what, std::nullopt, nullptr);
}

absl::StatusOr<Tensor> TensorFromProto(const onnx::TensorProto& proto, const std::string& base_dir,
                                       const std::string& what, RawTensorMaker raw, const RawBytes* located) {
  return DecodeTensorProto(proto, base_dir, what, raw, located);
}

void TensorToProto(const Tensor& tensor, const std::string& name, onnx::TensorProto* proto) {
  proto->Clear();
  proto->set_name(name);
  proto->set_data_type(DTypeToOnnx(tensor.dtype()));
  for (int64_t d : tensor.shape()) proto->add_dims(d);
  proto->set_raw_data(static_cast<const char*>(tensor.raw()), tensor.byte_size());
}

void TensorToExternalProto(const Tensor& tensor, const std::string& name, const std::string& location,
                           int64_t offset, onnx::TensorProto* proto) {
  proto->Clear();
  proto->set_name(name);
  proto->set_data_type(DTypeToOnnx(tensor.dtype()));
  for (int64_t d : tensor.shape()) proto->add_dims(d);
  proto->set_data_location(onnx::TensorProto::EXTERNAL);
  const std::pair<const char*, std::string> entries[] = {
      {"location", location}, {"offset", absl::StrCat(offset)}, {"length", absl::StrCat(tensor.byte_size())}};
  for (const auto& [key, value] : entries) {
    onnx::StringStringEntryProto* entry = proto->add_external_data();
    entry->set_key(key);
    entry->set_value(value);
  }
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
