// TensorView: a borrowed, read-only tensor — element type, shape and a
// pointer to dense row-major data the caller owns.
//
// Why a view next to graph/tensor.h's owning Tensor: a serving loop already
// holds its request data (token ids in its own vector); copying it into a
// Tensor per request would be an allocation and a copy on the hot path.
// The shape is a span too, so building a view allocates nothing. The data
// must stay valid and unchanged for the duration of Session::Run.
#ifndef SHAPESHIFT_RUNTIME_TENSOR_VIEW_H_
#define SHAPESHIFT_RUNTIME_TENSOR_VIEW_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "graph/dtype.h"
#include "graph/tensor.h"

namespace shapeshift::runtime {

// Where a view's bytes are: host memory, or device memory of the CUDA
// device a Program runs on (the caller's device buffer, used in place by a
// Device::kCuda program; a CPU program refuses it).
enum class MemorySpace { kHost, kCuda };

struct TensorView {
  DType dtype = DType::kF32;
  absl::Span<const int64_t> shape;
  const void* data = nullptr;  // for kCuda, a CUdeviceptr
  MemorySpace space = MemorySpace::kHost;

  // A view of an owning tensor (valid while `t` lives).
  static TensorView Of(const Tensor& t) { return TensorView{t.dtype(), t.shape(), t.raw()}; }
};

// Views of a list of owning tensors, allocation-free for the common case of a
// few inputs (valid while `tensors` lives).
class TensorViewList {
 public:
  explicit TensorViewList(const std::vector<Tensor>& tensors) : size_(tensors.size()) {
    TensorView* views = inline_;
    if (size_ > kInline) {
      heap_.resize(size_);
      views = heap_.data();
    }
    for (size_t i = 0; i < size_; ++i) views[i] = TensorView::Of(tensors[i]);
  }
  TensorViewList(const TensorViewList&) = delete;
  TensorViewList& operator=(const TensorViewList&) = delete;

  absl::Span<const TensorView> span() const {
    return {size_ > kInline ? heap_.data() : inline_, size_};
  }

 private:
  static constexpr size_t kInline = 8;
  TensorView inline_[kInline];
  std::vector<TensorView> heap_;
  size_t size_;
};

}  // namespace shapeshift::runtime

#endif  // SHAPESHIFT_RUNTIME_TENSOR_VIEW_H_
