// Tensor: a concrete, dense, row-major array with an element type and a
// shape of plain integers. It is what the reference interpreter computes on,
// what initializers and constants hold, and what test data decodes to.
// Copies share the underlying buffer (copy-on-write is not provided: treat a
// Tensor received from elsewhere as immutable; use Clone() to get a private
// copy before writing).
#ifndef SHAPESHIFT_GRAPH_TENSOR_H_
#define SHAPESHIFT_GRAPH_TENSOR_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "graph/dtype.h"

namespace shapeshift {

class Tensor {
 public:
  Tensor();  // f32 scalar 0
  // Zero-filled tensor. Fails (returns an error) if the element count
  // overflows or exceeds `kMaxElements`.
  static absl::StatusOr<Tensor> Zeros(DType dtype, std::vector<int64_t> shape);
  // The bytes a tensor of `dtype` and `shape` holds, with the checks Zeros
  // makes (no negative dims, at most kMaxElements).
  static absl::StatusOr<size_t> ByteSizeOf(DType dtype, const std::vector<int64_t>& shape);
  // A tensor whose storage comes from `allocate(byte_size())` (called once the
  // shape is checked, like Zeros) and is not zeroed: the caller is about to
  // write every byte. How a runtime hands out output buffers it recycles
  // (runtime/output_pool.h).
  static absl::StatusOr<Tensor> Uninitialized(
      DType dtype, std::vector<int64_t> shape,
      absl::FunctionRef<std::shared_ptr<std::byte[]>(size_t bytes)> allocate);
  template <typename T>
  static Tensor FromVector(DType dtype, std::vector<int64_t> shape, const std::vector<T>& values);
  static Tensor Scalar(float v);
  static Tensor ScalarI64(int64_t v);

  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t num_elements() const { return num_elements_; }
  size_t byte_size() const { return static_cast<size_t>(num_elements_) * DTypeSize(dtype_); }

  const void* raw() const { return data_.get(); }
  void* mutable_raw() { return data_.get(); }
  template <typename T>
  const T* data() const { return static_cast<const T*>(raw()); }
  template <typename T>
  T* mutable_data() { return static_cast<T*>(mutable_raw()); }
  template <typename T>
  absl::Span<const T> values() const { return {data<T>(), static_cast<size_t>(num_elements_)}; }

  // Element i converted to double / int64 (any dtype); for tests and printing.
  double GetAsDouble(int64_t i) const;
  int64_t GetAsInt64(int64_t i) const;

  Tensor Clone() const;
  // Same data, new shape with the same element count.
  absl::StatusOr<Tensor> Reshaped(std::vector<int64_t> shape) const;
  std::string DebugString(int max_elements = 8) const;  // "f32[2, 3] {1, 2, ...}"

  static constexpr int64_t kMaxElements = int64_t{1} << 34;  // refuse absurd sizes

 private:
  DType dtype_ = DType::kF32;
  std::vector<int64_t> shape_;
  int64_t num_elements_ = 1;
  std::shared_ptr<std::byte[]> data_;
};

template <typename T>
Tensor Tensor::FromVector(DType dtype, std::vector<int64_t> shape, const std::vector<T>& values) {
  Tensor t = Zeros(dtype, std::move(shape)).value();
  // Caller guarantees sizeof(T) == DTypeSize(dtype) and matching count.
  std::copy(values.begin(), values.end(), t.mutable_data<T>());
  return t;
}

}  // namespace shapeshift

#endif  // SHAPESHIFT_GRAPH_TENSOR_H_
