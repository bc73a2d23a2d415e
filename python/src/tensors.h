// Tensors across the Python boundary, without copies where none is needed.
//
// In: anything nanobind's ndarray caster accepts — a numpy array, an object
// with `__dlpack__` (a torch tensor), or a buffer-protocol object — becomes a
// TensorView over the caller's memory when it is C-contiguous host memory;
// only a non-contiguous one is copied (counted: RequestInputs::copies). The
// element type is never converted: a float64 array fed to a float input is
// refused, as ONNX Runtime refuses it.
// Out: each output Tensor moves into a capsule that a numpy array owns, so
// the array *is* the tensor's storage (no copy) and frees it when it dies.
#ifndef SHAPESHIFT_PYTHON_SRC_TENSORS_H_
#define SHAPESHIFT_PYTHON_SRC_TENSORS_H_

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstdint>
#include <string>
#include <vector>

#include "graph/dtype.h"
#include "graph/tensor.h"
#include "runtime/tensor_view.h"

namespace shapeshift::python {

// ONNX Runtime's name of an element type: "tensor(float)", "tensor(int64)", ...
std::string OrtTypeName(DType dtype);

// The converted inputs of one request; the arrays keep the caller's memory
// alive (and the copies, if any) while the views point into it.
class RequestInputs {
 public:
  // `names` are the model's inputs in graph order (for messages).
  explicit RequestInputs(size_t count) { arrays_.reserve(count); shapes_.reserve(count); views_.reserve(count); }
  // Converts `object` for input `name`; a TypeError naming the input when it
  // is not an array, is not in host memory, or has an element type
  // shapeshift does not know.
  void Add(nanobind::handle object, const std::string& name);
  const std::vector<runtime::TensorView>& views() const { return views_; }
  int copies() const { return copies_; }

 private:
  using Array = nanobind::ndarray<nanobind::ro, nanobind::c_contig, nanobind::device::cpu>;
  std::vector<Array> arrays_;
  std::vector<std::vector<int64_t>> shapes_;  // reserved up front: views_ point into them
  std::vector<runtime::TensorView> views_;
  int copies_ = 0;
};

// A numpy array owning `tensor`'s storage.
nanobind::object ToNumpy(Tensor tensor);

}  // namespace shapeshift::python

#endif  // SHAPESHIFT_PYTHON_SRC_TENSORS_H_
