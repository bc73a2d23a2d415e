#include "python/src/tensors.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "python/src/errors.h"

namespace nb = nanobind;

namespace shapeshift::python {
namespace {

using Code = nb::dlpack::dtype_code;

std::optional<DType> FromDlpack(nb::dlpack::dtype t) {
  if (t.lanes != 1) return std::nullopt;
  const auto code = static_cast<Code>(t.code);
  switch (t.bits) {
    case 8:
      if (code == Code::Int) return DType::kI8;
      if (code == Code::UInt) return DType::kU8;
      if (code == Code::Bool) return DType::kBool;
      break;
    case 16:
      if (code == Code::Float) return DType::kF16;
      if (code == Code::Bfloat) return DType::kBF16;
      break;
    case 32:
      if (code == Code::Float) return DType::kF32;
      if (code == Code::Int) return DType::kI32;
      break;
    case 64:
      if (code == Code::Float) return DType::kF64;
      if (code == Code::Int) return DType::kI64;
      break;
    default:
      break;
  }
  return std::nullopt;
}

nb::dlpack::dtype ToDlpack(DType dtype) {
  auto make = [](Code code, uint8_t bits) { return nb::dlpack::dtype{static_cast<uint8_t>(code), bits, 1}; };
  switch (dtype) {
    case DType::kF32: return make(Code::Float, 32);
    case DType::kF64: return make(Code::Float, 64);
    case DType::kF16: return make(Code::Float, 16);
    case DType::kBF16: return make(Code::Bfloat, 16);
    case DType::kI64: return make(Code::Int, 64);
    case DType::kI32: return make(Code::Int, 32);
    case DType::kI8: return make(Code::Int, 8);
    case DType::kU8: return make(Code::UInt, 8);
    case DType::kBool: return make(Code::Bool, 8);
  }
  return make(Code::Float, 32);
}

std::string DlpackName(nb::dlpack::dtype t) {
  const char* kind = "type code " ;
  switch (static_cast<Code>(t.code)) {
    case Code::Int: kind = "int"; break;
    case Code::UInt: kind = "uint"; break;
    case Code::Float: kind = "float"; break;
    case Code::Bfloat: kind = "bfloat"; break;
    case Code::Complex: kind = "complex"; break;
    case Code::Bool: kind = "bool"; break;
    default: return absl::StrCat("type code ", t.code, " of ", t.bits, " bits");
  }
  return absl::StrCat(kind, t.bits, t.lanes != 1 ? absl::StrCat("x", t.lanes) : "");
}

}  // namespace

std::string OrtTypeName(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "tensor(float)";
    case DType::kF64: return "tensor(double)";
    case DType::kF16: return "tensor(float16)";
    case DType::kBF16: return "tensor(bfloat16)";
    case DType::kI64: return "tensor(int64)";
    case DType::kI32: return "tensor(int32)";
    case DType::kI8: return "tensor(int8)";
    case DType::kU8: return "tensor(uint8)";
    case DType::kBool: return "tensor(bool)";
  }
  return "tensor(unknown)";
}

void RequestInputs::Add(nb::handle object, const std::string& name) {
  Array array;
  // Without conversion first: an array that is already C-contiguous host
  // memory is used in place. Only then may nanobind make a contiguous copy.
  if (!nb::try_cast(object, array, /*convert=*/false)) {
    if (!nb::try_cast(object, array, /*convert=*/true)) {
      ThrowAs(PyExc_TypeError,
              absl::StrCat("input '", name, "': expected an array in host memory (numpy, an object with __dlpack__ "
                           "or the buffer protocol), got ",
                           nb::type_name(object.type()).c_str()));
    }
    ++copies_;
  }
  std::optional<DType> dtype = FromDlpack(array.dtype());
  if (!dtype) {
    ThrowAs(PyExc_TypeError, absl::StrCat("input '", name, "': element type ", DlpackName(array.dtype()),
                                          " is not supported by shapeshift"));
  }
  std::vector<int64_t>& shape = shapes_.emplace_back(array.shape_ptr(), array.shape_ptr() + array.ndim());
  views_.push_back(runtime::TensorView{*dtype, shape, array.data()});
  arrays_.push_back(std::move(array));
}

nb::object ToNumpy(Tensor tensor) {
  auto* owned = new Tensor(std::move(tensor));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<Tensor*>(p); });
  std::vector<size_t> shape(owned->shape().begin(), owned->shape().end());
  nb::ndarray<nb::numpy> array(owned->mutable_raw(), shape.size(), shape.data(), owner, nullptr,
                               ToDlpack(owned->dtype()));
  return array.cast();
}

}  // namespace shapeshift::python
