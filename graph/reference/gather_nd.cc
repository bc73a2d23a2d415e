// GatherND reference kernel: out[p, ...] = data[batch(p), idx(p)_0, ...,
// idx(p)_{K-1}, ...] with ONNX batch_dims semantics; negative indices count
// from the end and anything outside the data is an error naming the value.
#include <cstring>

#include "graph/reference/kernel_util.h"

namespace shapeshift::reference {
namespace {

KernelResult GatherND(const KernelArgs& args) {
  absl::StatusOr<const Tensor*> data = RequiredInput(args, 0);
  if (!data.ok()) return data.status();
  absl::StatusOr<const Tensor*> indices = RequiredInput(args, 1);
  if (!indices.ok()) return indices.status();
  absl::StatusOr<int64_t> batch_dims = args.attrs->GetInt("batch_dims", 0);
  if (!batch_dims.ok()) return batch_dims.status();
  const std::vector<int64_t>& dshape = (*data)->shape();
  const std::vector<int64_t>& ishape = (*indices)->shape();
  const int64_t b = *batch_dims;
  const int64_t r = static_cast<int64_t>(dshape.size()), q = static_cast<int64_t>(ishape.size());
  if (q < 1 || b < 0 || b >= q || b >= r) return Invalid("GatherND: batch_dims ", b, " does not fit");
  const int64_t k = ishape.back();
  if (k < 1 || k > r - b) return Invalid("GatherND: index tuples of length ", k, " do not fit data ", ShapeToString(dshape));
  for (int64_t d = 0; d < b; ++d) {
    if (dshape[d] != ishape[d]) return Invalid("GatherND: batch dim ", d, " differs between data and indices");
  }
  absl::StatusOr<std::vector<int64_t>> idx = ToInt64s(**indices, "indices");
  if (!idx.ok()) return idx.status();
  std::vector<int64_t> out_shape(ishape.begin(), ishape.end() - 1);
  out_shape.insert(out_shape.end(), dshape.begin() + b + k, dshape.end());
  absl::StatusOr<Tensor> out = NewOutput((*data)->dtype(), out_shape);
  if (!out.ok()) return out.status();
  const size_t size = DTypeSize((*data)->dtype());
  const std::vector<int64_t> strides = RowMajorStrides(dshape);
  const int64_t slice_bytes = Product(dshape, b + k) * static_cast<int64_t>(size);
  const int64_t batches = Product(ishape, 0, b);
  const int64_t per_batch = Product(ishape, b, q - 1);
  const auto* src = static_cast<const std::byte*>((*data)->raw());
  auto* dst = static_cast<std::byte*>(out->mutable_raw());
  for (int64_t batch = 0; batch < batches; ++batch) {
    for (int64_t p = 0; p < per_batch; ++p) {
      int64_t offset = batch * (b > 0 ? strides[b - 1] : 0);
      const int64_t* tuple = idx->data() + (batch * per_batch + p) * k;
      for (int64_t j = 0; j < k; ++j) {
        int64_t i = tuple[j], dim = dshape[b + j];
        if (i < -dim || i >= dim) return Invalid("GatherND: index ", i, " is out of range for dim ", dim);
        offset += (i < 0 ? i + dim : i) * strides[b + j];
      }
      std::memcpy(dst, src + offset * static_cast<int64_t>(size), slice_bytes);
      dst += slice_bytes;
    }
  }
  return std::vector<Tensor>{*std::move(out)};
}

}  // namespace

void RegisterGatherNDKernel(KernelRegistry& registry) { registry.Add("GatherND", GatherND); }

}  // namespace shapeshift::reference
