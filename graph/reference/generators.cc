// Ops whose output is made from attributes or small parameters rather than
// from input elements: Constant (every value_* attribute form),
// ConstantOfShape and Range.
#include <cmath>
#include <cstring>

#include "graph/reference/kernel_util.h"

namespace shapeshift::reference {
namespace {

KernelResult Constant(const KernelArgs& args) {
  const Attributes& a = *args.attrs;
  if (a.Has("value")) {
    absl::StatusOr<Tensor> t = a.GetTensor("value");
    if (!t.ok()) return t.status();
    return std::vector<Tensor>{*t};
  }
  if (a.Has("value_float")) {
    absl::StatusOr<float> v = a.GetFloat("value_float", 0.f);
    if (!v.ok()) return v.status();
    return std::vector<Tensor>{Tensor::Scalar(*v)};
  }
  if (a.Has("value_floats")) {
    absl::StatusOr<std::vector<float>> v = a.GetFloats("value_floats");
    if (!v.ok()) return v.status();
    return std::vector<Tensor>{
        Tensor::FromVector<float>(DType::kF32, {static_cast<int64_t>(v->size())}, *v)};
  }
  if (a.Has("value_int")) {
    absl::StatusOr<int64_t> v = a.GetInt("value_int");
    if (!v.ok()) return v.status();
    return std::vector<Tensor>{Tensor::ScalarI64(*v)};
  }
  if (a.Has("value_ints")) {
    absl::StatusOr<std::vector<int64_t>> v = a.GetInts("value_ints");
    if (!v.ok()) return v.status();
    return std::vector<Tensor>{
        Tensor::FromVector<int64_t>(DType::kI64, {static_cast<int64_t>(v->size())}, *v)};
  }
  for (const char* name : {"value_string", "value_strings"}) {
    if (a.Has(name)) return Unsupported(absl::StrCat("Constant attribute ", name, " (string tensors)"));
  }
  if (a.Has("sparse_value")) return Unsupported("Constant attribute sparse_value");
  return Invalid("Constant has none of the value_* attributes");
}

KernelResult ConstantOfShape(const KernelArgs& args) {
  absl::StatusOr<const Tensor*> shape_input = RequiredInput(args, 0);
  if (!shape_input.ok()) return shape_input.status();
  absl::StatusOr<std::vector<int64_t>> shape = ToInt64s(**shape_input, "shape input");
  if (!shape.ok()) return shape.status();
  Tensor value = Tensor::Scalar(0.f);
  if (args.attrs->Has("value")) {
    absl::StatusOr<Tensor> v = args.attrs->GetTensor("value");
    if (!v.ok()) return v.status();
    if (v->num_elements() != 1) {
      return Invalid("value must have one element, got ", v->DebugString());
    }
    value = *v;
  }
  absl::StatusOr<Tensor> out = NewOutput(value.dtype(), *shape);
  if (!out.ok()) return out.status();
  const size_t size = DTypeSize(value.dtype());
  auto* dst = static_cast<std::byte*>(out->mutable_raw());
  for (int64_t i = 0; i < out->num_elements(); ++i) std::memcpy(dst + i * size, value.raw(), size);
  return std::vector<Tensor>{*std::move(out)};
}

// Range(start, limit, delta): max(ceil((limit - start) / delta), 0) elements.
KernelResult Range(const KernelArgs& args) {
  std::vector<const Tensor*> in;
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<const Tensor*> t = RequiredInput(args, i);
    if (!t.ok()) return t.status();
    if ((*t)->num_elements() != 1) return Invalid("Range input ", i, " must be a scalar");
    in.push_back(*t);
  }
  absl::Status same = RequireSameDType(args, in);
  if (!same.ok()) return same;
  absl::StatusOr<Tensor> out;
  absl::Status st = VisitNumeric(args, in[0]->dtype(), [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    const T start = in[0]->data<T>()[0];
    const T limit = in[1]->data<T>()[0];
    const T delta = in[2]->data<T>()[0];
    if (delta == T{0}) return Invalid("Range delta must not be 0");
    const double count = std::ceil((static_cast<double>(limit) - static_cast<double>(start)) /
                                   static_cast<double>(delta));
    if (!(count <= static_cast<double>(Tensor::kMaxElements))) {
      return Invalid("Range would have ", count, " elements");
    }
    const int64_t n = count > 0 ? static_cast<int64_t>(count) : 0;
    out = NewOutput(in[0]->dtype(), {n});
    if (!out.ok()) return out.status();
    T* o = out->mutable_data<T>();
    for (int64_t i = 0; i < n; ++i) o[i] = static_cast<T>(start + static_cast<T>(i) * delta);
    return absl::OkStatus();
  });
  if (!st.ok()) return st;
  return std::vector<Tensor>{*std::move(out)};
}

}  // namespace

void RegisterGeneratorKernels(KernelRegistry& registry) {
  registry.Add("Constant", Constant);
  registry.Add("ConstantOfShape", ConstantOfShape);
  registry.Add("Range", Range);
}

}  // namespace shapeshift::reference
