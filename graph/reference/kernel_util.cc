// Shared kernel plumbing; see kernel_util.h.
#include "graph/reference/kernel_util.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_join.h"

namespace shapeshift::reference {

absl::Status Unsupported(absl::string_view what) {
  return absl::UnimplementedError(absl::StrCat("unsupported ", what));
}

absl::Status UnsupportedDType(const KernelArgs& args, DType dtype, absl::string_view role) {
  return absl::UnimplementedError(absl::StrCat("unsupported dtype ", DTypeName(dtype), " for ",
                                               args.op_type, " ", role));
}

std::string ShapeToString(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

absl::StatusOr<const Tensor*> RequiredInput(const KernelArgs& args, int i) {
  const Tensor* t = OptionalInput(args, i);
  if (t == nullptr) {
    return Invalid("missing required input ", i, " (", args.inputs.size(), " given)");
  }
  return t;
}

const Tensor* OptionalInput(const KernelArgs& args, int i) {
  if (i < 0 || static_cast<size_t>(i) >= args.inputs.size()) return nullptr;
  return args.inputs[i];
}

absl::StatusOr<std::vector<int64_t>> ToInt64s(const Tensor& t, absl::string_view what) {
  if (t.dtype() != DType::kI64 && t.dtype() != DType::kI32) {
    return Invalid(what, " must be an i64 or i32 tensor, got ", DTypeName(t.dtype()));
  }
  std::vector<int64_t> out(t.num_elements());
  for (int64_t i = 0; i < t.num_elements(); ++i) out[i] = t.GetAsInt64(i);
  return out;
}

absl::StatusOr<int64_t> ToScalarInt64(const Tensor& t, absl::string_view what) {
  absl::StatusOr<std::vector<int64_t>> v = ToInt64s(t, what);
  if (!v.ok()) return v.status();
  if (v->size() != 1) return Invalid(what, " must have one element, got ", v->size());
  return (*v)[0];
}

absl::Status RequireSameDType(const KernelArgs& args, const std::vector<const Tensor*>& tensors) {
  for (size_t i = 1; i < tensors.size(); ++i) {
    if (tensors[i]->dtype() != tensors[0]->dtype()) {
      return Invalid("input ", i, " has dtype ", DTypeName(tensors[i]->dtype()),
                     " but input 0 has ", DTypeName(tensors[0]->dtype()));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> NormalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) {
    return Invalid("axis ", axis, " is out of range for rank ", rank);
  }
  return axis < 0 ? axis + rank : axis;
}

absl::StatusOr<std::vector<int64_t>> NormalizeAxes(const std::vector<int64_t>& axes,
                                                   int64_t rank) {
  std::vector<int64_t> out;
  std::set<int64_t> seen;
  for (int64_t a : axes) {
    absl::StatusOr<int64_t> n = NormalizeAxis(a, rank);
    if (!n.ok()) return n.status();
    if (!seen.insert(*n).second) return Invalid("axis ", a, " is repeated");
    out.push_back(*n);
  }
  return out;
}

int64_t Product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < std::min(end, dims.size()); ++i) p *= dims[i];
  return p;
}

std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i) {
    strides[i] = strides[i + 1] * shape[i + 1];
  }
  return strides;
}

absl::StatusOr<std::vector<int64_t>> BroadcastShapes(
    const std::vector<std::vector<int64_t>>& shapes) {
  size_t rank = 0;
  for (const auto& s : shapes) rank = std::max(rank, s.size());
  std::vector<int64_t> out(rank, 1);
  for (const auto& s : shapes) {
    const size_t pad = rank - s.size();
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t& o = out[pad + i];
      if (s[i] == o || s[i] == 1) continue;
      if (o == 1) {
        o = s[i];
        continue;
      }
      std::vector<std::string> all;
      for (const auto& t : shapes) all.push_back(ShapeToString(t));
      return Invalid("shapes ", absl::StrJoin(all, " and "), " do not broadcast");
    }
  }
  return out;
}

IndexWalker::IndexWalker(const std::vector<int64_t>& shape,
                         std::vector<std::vector<int64_t>> strides, std::vector<int64_t> base)
    : shape_(shape), index_(shape.size(), 0), strides_(std::move(strides)), offsets_(std::move(base)) {
  offsets_.resize(strides_.size(), 0);
}

IndexWalker IndexWalker::Broadcast(const std::vector<int64_t>& out_shape,
                                   const std::vector<std::vector<int64_t>>& operand_shapes) {
  const size_t rank = out_shape.size();
  std::vector<std::vector<int64_t>> strides;
  for (const auto& shape : operand_shapes) {
    std::vector<int64_t> own = RowMajorStrides(shape);
    std::vector<int64_t> aligned(rank, 0);
    const size_t pad = rank - shape.size();
    for (size_t i = 0; i < shape.size(); ++i) aligned[pad + i] = shape[i] == 1 ? 0 : own[i];
    strides.push_back(std::move(aligned));
  }
  return IndexWalker(out_shape, std::move(strides));
}

void IndexWalker::Next() {
  for (int64_t d = static_cast<int64_t>(shape_.size()) - 1; d >= 0; --d) {
    if (++index_[d] < shape_[d]) {
      for (size_t k = 0; k < offsets_.size(); ++k) offsets_[k] += strides_[k][d];
      return;
    }
    index_[d] = 0;
    for (size_t k = 0; k < offsets_.size(); ++k) offsets_[k] -= strides_[k][d] * (shape_[d] - 1);
  }
}

absl::StatusOr<Tensor> NewOutput(DType dtype, const std::vector<int64_t>& shape) {
  return Tensor::Zeros(dtype, shape);
}

}  // namespace shapeshift::reference
