// Cast between every element type shapeshift knows, including f16/bf16
// (rounded to nearest even) and bool. Float to integer truncates toward zero
// as ONNX specifies; values outside the target range (and NaN) are
// saturated instead of being undefined behaviour. Integer to narrower
// integer wraps (two's complement), like numpy's astype.
#include <cmath>
#include <limits>

#include "graph/reference/float16.h"
#include "graph/reference/kernel_util.h"

namespace shapeshift::reference {
namespace {

// One element, held exactly: floats as double, integers and bools as int64.
struct Element {
  bool is_float;
  double f;
  int64_t i;
};

Element Read(const Tensor& t, int64_t n) {
  switch (t.dtype()) {
    case DType::kF32: return {true, t.data<float>()[n], 0};
    case DType::kF64: return {true, t.data<double>()[n], 0};
    case DType::kF16: return {true, HalfBitsToFloat(t.data<uint16_t>()[n]), 0};
    case DType::kBF16: return {true, BFloat16BitsToFloat(t.data<uint16_t>()[n]), 0};
    default: return {false, 0.0, t.GetAsInt64(n)};
  }
}

template <typename T>
T TruncateSaturating(double v) {
  if (std::isnan(v)) return T{0};
  if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
  if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return static_cast<T>(v);
}

template <typename T>
void WriteInteger(Tensor& out, int64_t n, const Element& e) {
  out.mutable_data<T>()[n] = e.is_float ? TruncateSaturating<T>(e.f) : static_cast<T>(e.i);
}

void Write(Tensor& out, int64_t n, const Element& e) {
  const double as_double = e.is_float ? e.f : static_cast<double>(e.i);
  switch (out.dtype()) {
    case DType::kF32:
      out.mutable_data<float>()[n] = e.is_float ? static_cast<float>(e.f) : static_cast<float>(e.i);
      return;
    case DType::kF64: out.mutable_data<double>()[n] = as_double; return;
    case DType::kF16: out.mutable_data<uint16_t>()[n] = DoubleToHalfBits(as_double); return;
    case DType::kBF16:
      out.mutable_data<uint16_t>()[n] = FloatToBFloat16Bits(static_cast<float>(as_double));
      return;
    case DType::kBool: out.mutable_data<uint8_t>()[n] = e.is_float ? e.f != 0.0 : e.i != 0; return;
    case DType::kI64: WriteInteger<int64_t>(out, n, e); return;
    case DType::kI32: WriteInteger<int32_t>(out, n, e); return;
    case DType::kI8: WriteInteger<int8_t>(out, n, e); return;
    case DType::kU8: WriteInteger<uint8_t>(out, n, e); return;
  }
}

KernelResult Cast(const KernelArgs& args) {
  absl::StatusOr<const Tensor*> x = RequiredInput(args, 0);
  if (!x.ok()) return x.status();
  absl::StatusOr<int64_t> to = args.attrs->GetInt("to");
  if (!to.ok()) return to.status();
  std::optional<DType> target = DTypeFromOnnx(static_cast<int>(*to));
  if (!target) return Unsupported(absl::StrCat("Cast target element type ", *to));
  absl::StatusOr<Tensor> out = NewOutput(*target, (*x)->shape());
  if (!out.ok()) return out.status();
  for (int64_t n = 0; n < (*x)->num_elements(); ++n) Write(*out, n, Read(**x, n));
  return std::vector<Tensor>{*std::move(out)};
}

}  // namespace

void RegisterCastKernels(KernelRegistry& registry) { registry.Add("Cast", Cast); }

}  // namespace shapeshift::reference
