// ScatterND reference kernel: out = data, then for each index tuple u in
// order, out[indices[u], ...] = updates[u, ...] (or combined with it by
// `reduction`: add, mul, max, min; opset 16/18). Negative indices count from
// the end; anything outside the data is an error naming the index. With
// reduction "none", duplicate tuples are undefined in ONNX; here, as in
// ONNX Runtime's CPU kernel, the last one wins.
#include <algorithm>
#include <cstring>

#include "graph/reference/kernel_util.h"

namespace shapeshift::reference {
namespace {

enum class Reduction { kNone, kAdd, kMul, kMax, kMin };

template <typename T>
void Combine(T* dst, const T* src, int64_t n, Reduction r) {
  for (int64_t i = 0; i < n; ++i) {
    switch (r) {
      case Reduction::kNone: dst[i] = src[i]; break;
      case Reduction::kAdd: dst[i] = static_cast<T>(dst[i] + src[i]); break;
      case Reduction::kMul: dst[i] = static_cast<T>(dst[i] * src[i]); break;
      case Reduction::kMax: dst[i] = std::max(dst[i], src[i]); break;
      case Reduction::kMin: dst[i] = std::min(dst[i], src[i]); break;
    }
  }
}

KernelResult ScatterND(const KernelArgs& args) {
  absl::StatusOr<const Tensor*> data = RequiredInput(args, 0);
  if (!data.ok()) return data.status();
  absl::StatusOr<const Tensor*> indices = RequiredInput(args, 1);
  if (!indices.ok()) return indices.status();
  absl::StatusOr<const Tensor*> updates = RequiredInput(args, 2);
  if (!updates.ok()) return updates.status();
  absl::StatusOr<std::string> reduction_name = args.attrs->GetString("reduction", "none");
  if (!reduction_name.ok()) return reduction_name.status();
  Reduction reduction;
  if (*reduction_name == "none") {
    reduction = Reduction::kNone;
  } else if (*reduction_name == "add") {
    reduction = Reduction::kAdd;
  } else if (*reduction_name == "mul") {
    reduction = Reduction::kMul;
  } else if (*reduction_name == "max") {
    reduction = Reduction::kMax;
  } else if (*reduction_name == "min") {
    reduction = Reduction::kMin;
  } else {
    return Invalid("ScatterND: unknown reduction '", *reduction_name, "'");
  }
  const std::vector<int64_t>& dshape = (*data)->shape();
  const std::vector<int64_t>& ishape = (*indices)->shape();
  const int64_t r = static_cast<int64_t>(dshape.size()), q = static_cast<int64_t>(ishape.size());
  if (q < 1) return Invalid("ScatterND: indices must have rank >= 1");
  const int64_t k = ishape.back();
  if (k < 1 || k > r) return Invalid("ScatterND: index tuples of length ", k, " do not fit data ", ShapeToString(dshape));
  std::vector<int64_t> want(ishape.begin(), ishape.end() - 1);
  want.insert(want.end(), dshape.begin() + k, dshape.end());
  if ((*updates)->shape() != want) {
    return Invalid("ScatterND: updates have shape ", ShapeToString((*updates)->shape()), ", expected ",
                   ShapeToString(want));
  }
  if ((*updates)->dtype() != (*data)->dtype()) return Invalid("ScatterND: updates and data differ in type");
  absl::StatusOr<std::vector<int64_t>> idx = ToInt64s(**indices, "indices");
  if (!idx.ok()) return idx.status();
  Tensor out = (*data)->Clone();
  const std::vector<int64_t> strides = RowMajorStrides(dshape);
  const int64_t slice = Product(dshape, k);
  const int64_t tuples = Product(ishape, 0, q - 1);
  absl::Status status = VisitComputable(args, (*data)->dtype(), [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    T* dst = out.mutable_data<T>();
    const T* src = (*updates)->data<T>();
    for (int64_t u = 0; u < tuples; ++u) {
      int64_t offset = 0;
      for (int64_t j = 0; j < k; ++j) {
        const int64_t i = (*idx)[u * k + j], dim = dshape[j];
        if (i < -dim || i >= dim) return Invalid("ScatterND: index ", i, " is out of range for dim ", dim);
        offset += (i < 0 ? i + dim : i) * strides[j];
      }
      Combine(dst + offset, src + u * slice, slice, reduction);
    }
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return std::vector<Tensor>{std::move(out)};
}

}  // namespace

void RegisterScatterNDKernel(KernelRegistry& registry) { registry.Add("ScatterND", ScatterND); }

}  // namespace shapeshift::reference
