// Tensor storage, element access for tests/printing, and reshaping.
#include "graph/tensor.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/reference/float16.h"

namespace shapeshift {
namespace {

std::string ShapeString(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

// Element count of `shape`, or an error for negative dims, overflow, or more
// than Tensor::kMaxElements elements.
absl::StatusOr<int64_t> CountElements(const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor shape ", ShapeString(shape), " has a negative dimension"));
    }
    if (d != 0 && count > Tensor::kMaxElements / d) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "tensor shape ", ShapeString(shape), " has more than ", Tensor::kMaxElements, " elements"));
    }
    count *= d;
  }
  return count;
}

}  // namespace

Tensor::Tensor() : data_(std::make_shared<std::byte[]>(sizeof(float))) {}

absl::StatusOr<Tensor> Tensor::Zeros(DType dtype, std::vector<int64_t> shape) {
  absl::StatusOr<int64_t> count = CountElements(shape);
  if (!count.ok()) return count.status();
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.num_elements_ = *count;
  t.data_ = std::make_shared<std::byte[]>(static_cast<size_t>(*count) * DTypeSize(dtype));
  return t;
}

absl::StatusOr<size_t> Tensor::ByteSizeOf(DType dtype, const std::vector<int64_t>& shape) {
  absl::StatusOr<int64_t> count = CountElements(shape);
  if (!count.ok()) return count.status();
  return static_cast<size_t>(*count) * DTypeSize(dtype);
}

absl::StatusOr<Tensor> Tensor::Uninitialized(DType dtype, std::vector<int64_t> shape,
                                             absl::FunctionRef<std::shared_ptr<std::byte[]>(size_t)> allocate) {
  absl::StatusOr<int64_t> count = CountElements(shape);
  if (!count.ok()) return count.status();
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.num_elements_ = *count;
  t.data_ = allocate(t.byte_size());
  if (t.data_ == nullptr) {
    return absl::ResourceExhaustedError(absl::StrCat("cannot allocate ", t.byte_size(), " bytes for a tensor"));
  }
  return t;
}

Tensor Tensor::Scalar(float v) { return FromVector<float>(DType::kF32, {}, {v}); }

Tensor Tensor::ScalarI64(int64_t v) { return FromVector<int64_t>(DType::kI64, {}, {v}); }

double Tensor::GetAsDouble(int64_t i) const {
  switch (dtype_) {
    case DType::kF32: return data<float>()[i];
    case DType::kF64: return data<double>()[i];
    case DType::kF16: return HalfBitsToFloat(data<uint16_t>()[i]);
    case DType::kBF16: return BFloat16BitsToFloat(data<uint16_t>()[i]);
    case DType::kI64: return static_cast<double>(data<int64_t>()[i]);
    case DType::kI32: return data<int32_t>()[i];
    case DType::kI8: return data<int8_t>()[i];
    case DType::kU8: return data<uint8_t>()[i];
    case DType::kBool: return data<uint8_t>()[i] != 0 ? 1.0 : 0.0;
  }
  return 0.0;
}

int64_t Tensor::GetAsInt64(int64_t i) const {
  switch (dtype_) {
    case DType::kI64: return data<int64_t>()[i];
    case DType::kI32: return data<int32_t>()[i];
    case DType::kI8: return data<int8_t>()[i];
    case DType::kU8: return data<uint8_t>()[i];
    case DType::kBool: return data<uint8_t>()[i] != 0 ? 1 : 0;
    default: {
      const double v = GetAsDouble(i);
      if (std::isnan(v)) return 0;
      if (v >= 9.2233720368547758e18) return std::numeric_limits<int64_t>::max();
      if (v <= -9.2233720368547758e18) return std::numeric_limits<int64_t>::min();
      return static_cast<int64_t>(v);
    }
  }
}

Tensor Tensor::Clone() const {
  Tensor copy = *this;
  if (data_) {
    const size_t bytes = byte_size();
    copy.data_ = std::shared_ptr<std::byte[]>(new std::byte[bytes]);
    std::memcpy(copy.data_.get(), data_.get(), bytes);
  }
  return copy;
}

absl::StatusOr<Tensor> Tensor::Reshaped(std::vector<int64_t> shape) const {
  absl::StatusOr<int64_t> count = CountElements(shape);
  if (!count.ok()) return count.status();
  if (*count != num_elements_) {
    return absl::InvalidArgumentError(absl::StrCat("cannot reshape ", ShapeString(shape_), " (",
                                                   num_elements_, " elements) to ",
                                                   ShapeString(shape), " (", *count, " elements)"));
  }
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

std::string Tensor::DebugString(int max_elements) const {
  std::string out = absl::StrCat(DTypeName(dtype_), ShapeString(shape_), " {");
  const int64_t shown = std::min<int64_t>(num_elements_, std::max(max_elements, 0));
  for (int64_t i = 0; i < shown; ++i) {
    if (i > 0) absl::StrAppend(&out, ", ");
    if (IsFloat(dtype_)) {
      absl::StrAppend(&out, GetAsDouble(i));
    } else if (dtype_ == DType::kBool) {
      absl::StrAppend(&out, GetAsInt64(i) ? "true" : "false");
    } else {
      absl::StrAppend(&out, GetAsInt64(i));
    }
  }
  if (shown < num_elements_) absl::StrAppend(&out, shown > 0 ? ", ..." : "...");
  absl::StrAppend(&out, "}");
  return out;
}

}  // namespace shapeshift
