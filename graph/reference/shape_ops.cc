// Ops that rearrange or relabel elements without computing on them:
// Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Expand, Tile, Shape,
// Size, Identity, Dropout (inference), and shapeshift's RelativePositionExpand.
// Element bytes are moved as opaque units, so every dtype (including f16/bf16) is supported.
//
// Opset differences: Reshape's target was an attribute before opset 5;
// Squeeze/Unsqueeze axes became an input at opset 13; Shape gained
// start/end at 15; Dropout's ratio became an input at 12. Where an op has
// both forms the input wins when present.
#include <algorithm>
#include <cstring>

#include "graph/reference/kernel_util.h"

namespace shapeshift::reference {
namespace {

// out[e] = x[offset_of(e's index)] in row-major order, element by element
// of any dtype: the copy of the kernels that only remap indices (Tile,
// RelativePositionExpand).
template <typename OffsetOf>
void CopyElementsFrom(const Tensor& x, Tensor& out, OffsetOf offset_of) {
  const size_t size = DTypeSize(x.dtype());
  const auto* src = static_cast<const std::byte*>(x.raw());
  auto* dst = static_cast<std::byte*>(out.mutable_raw());
  IndexWalker walk(out.shape(), {});
  for (int64_t e = 0; e < out.num_elements(); ++e, walk.Next()) {
    std::memcpy(dst + e * size, src + offset_of(walk.index()) * size, size);
  }
}

// Copies elements: out[i] = in[walk.offset(0)] while walking out's shape.
Tensor GatherBytes(const Tensor& in, Tensor out, IndexWalker walk) {
  const size_t size = DTypeSize(in.dtype());
  const auto* src = static_cast<const std::byte*>(in.raw());
  auto* dst = static_cast<std::byte*>(out.mutable_raw());
  for (int64_t i = 0; i < out.num_elements(); ++i, walk.Next()) {
    std::memcpy(dst + i * size, src + walk.offset(0) * size, size);
  }
  return out;
}

// Axes from input `input_index` when present, else from the attribute.
absl::StatusOr<std::optional<std::vector<int64_t>>> AxesInputOrAttribute(const KernelArgs& args,
                                                                         int input_index) {
  if (const Tensor* t = OptionalInput(args, input_index)) {
    absl::StatusOr<std::vector<int64_t>> v = ToInt64s(*t, "axes input");
    if (!v.ok()) return v.status();
    return std::optional<std::vector<int64_t>>(*v);
  }
  if (!args.attrs->Has("axes")) return std::optional<std::vector<int64_t>>();
  absl::StatusOr<std::vector<int64_t>> v = args.attrs->GetInts("axes");
  if (!v.ok()) return v.status();
  return std::optional<std::vector<int64_t>>(*v);
}

KernelResult Reshape(const KernelArgs& args) {
  absl::StatusOr<const Tensor*> x = RequiredInput(args, 0);
  if (!x.ok()) return x.status();
  std::vector<int64_t> target;
  if (const Tensor* t = OptionalInput(args, 1)) {
    absl::StatusOr<std::vector<int64_t>> v = ToInt64s(*t, "shape input");
    if (!v.ok()) return v.status();
    target = *v;
  } else {
    absl::StatusOr<std::vector<int64_t>> v = args.attrs->GetInts("shape");
    if (!v.ok()) return v.status();
    target = *v;
  }
  absl::StatusOr<int64_t> allowzero = args.attrs->GetInt("allowzero", 0);
  if (!allowzero.ok()) return allowzero.status();
  const std::vector<int64_t>& in_shape = (*x)->shape();
  int inferred = -1;
  int64_t known = 1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == 0 && !*allowzero) {
      if (i >= in_shape.size()) {
        return Invalid("shape ", ShapeToString(target), " copies dim ", i, " (0) but input ",
                       ShapeToString(in_shape), " has rank ", in_shape.size());
      }
      target[i] = in_shape[i];
    }
    if (target[i] == -1) {
      if (inferred >= 0) return Invalid("shape ", ShapeToString(target), " has two -1 entries");
      inferred = static_cast<int>(i);
    } else if (target[i] < 0 || target[i] > Tensor::kMaxElements) {
      return Invalid("shape ", ShapeToString(target), " has a negative or oversized entry");
    } else if (target[i] > 0 && known > Tensor::kMaxElements / target[i]) {
      return Invalid("shape ", ShapeToString(target), " has too many elements");
    } else {
      known *= target[i];
    }
  }
  if (inferred >= 0) {
    if (known == 0 || (*x)->num_elements() % known != 0) {
      return Invalid("cannot infer the -1 in ", ShapeToString(target), " for input ",
                     ShapeToString(in_shape));
    }
    target[inferred] = (*x)->num_elements() / known;
  }
  absl::StatusOr<Tensor> out = (*x)->Reshaped(target);
  if (!out.ok()) return out.status();
  return std::vector<Tensor>{*std::move(out)};
}

KernelResult Flatten(const KernelArgs& args) {
  absl::StatusOr<const Tensor*> x = RequiredInput(args, 0);
  if (!x.ok()) return x.status();
  absl::StatusOr<int64_t> axis = args.attrs->GetInt("axis", 1);
  if (!axis.ok()) return axis.status();
  const int64_t rank = (*x)->rank();
  if (*axis < -rank || *axis > rank) return Invalid("axis ", *axis, " is out of range for rank ", rank);
  const size_t split = static_cast<size_t>(*axis < 0 ? *axis + rank : *axis);
  absl::StatusOr<Tensor> out =
      (*x)->Reshaped({Product((*x)->shape(), 0, split), Product((*x)->shape(), split)});
  if (!out.ok()) return out.status();
  return std::vector<Tensor>{*std::move(out)};
}

KernelResult Squeeze(const KernelArgs& args) {
  absl::StatusOr<const Tensor*> x = RequiredInput(args, 0);
  if (!x.ok()) return x.status();
  absl::StatusOr<std::optional<std::vector<int64_t>>> axes = AxesInputOrAttribute(args, 1);
  if (!axes.ok()) return axes.status();
  const std::vector<int64_t>& shape = (*x)->shape();
  std::vector<bool> drop(shape.size(), false);
  if (axes->has_value()) {
    absl::StatusOr<std::vector<int64_t>> n = NormalizeAxes(**axes, (*x)->rank());
    if (!n.ok()) return n.status();
    for (int64_t a : *n) {
      if (shape[a] != 1) return Invalid("cannot squeeze axis ", a, " of ", ShapeToString(shape));
      drop[a] = true;
    }
  } else {
    for (size_t d = 0; d < shape.size(); ++d) drop[d] = shape[d] == 1;
  }
  std::vector<int64_t> out_shape;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!drop[d]) out_shape.push_back(shape[d]);
  }
  absl::StatusOr<Tensor> out = (*x)->Reshaped(out_shape);
  if (!out.ok()) return out.status();
  return std::vector<Tensor>{*std::move(out)};
}

KernelResult Unsqueeze(const KernelArgs& args) {
  absl::StatusOr<const Tensor*> x = RequiredInput(args, 0);
  if (!x.ok()) return x.status();
  absl::StatusOr<std::optional<std::vector<int64_t>>> axes = AxesInputOrAttribute(args, 1);
  if (!axes.ok()) return axes.status();
  if (!axes->has_value()) return Invalid("Unsqueeze needs axes");
  const int64_t out_rank = (*x)->rank() + static_cast<int64_t>((*axes)->size());
  absl::StatusOr<std::vector<int64_t>> n = NormalizeAxes(**axes, out_rank);
  if (!n.ok()) return n.status();
  std::vector<bool> inserted(out_rank, false);
  for (int64_t a : *n) inserted[a] = true;
  std::vector<int64_t> out_shape;
  size_t next = 0;
  for (int64_t d = 0; d < out_rank; ++d) {
    out_shape.push_back(inserted[d] ? 1 : (*x)->shape()[next++]);
  }
  absl::StatusOr<Tensor> out = (*x)->Reshaped(out_shape);
  if (!out.ok()) return out.status();
  return std::vector<Tensor>{*std::move(out)};
}

KernelResult Transpose(const KernelArgs& args) {
  absl::StatusOr<const Tensor*> x = RequiredInput(args, 0);
  if (!x.ok()) return x.status();
  const int64_t rank = (*x)->rank();
  std::vector<int64_t> reversed;
  for (int64_t d = rank - 1; d >= 0; --d) reversed.push_back(d);
  absl::StatusOr<std::vector<int64_t>> perm = args.attrs->GetInts("perm", reversed);
  if (!perm.ok()) return perm.status();
  if (static_cast<int64_t>(perm->size()) != rank) {
    return Invalid("perm ", ShapeToString(*perm), " does not match rank ", rank);
  }
  absl::StatusOr<std::vector<int64_t>> normalized = NormalizeAxes(*perm, rank);
  if (!normalized.ok()) return normalized.status();
  const std::vector<int64_t> in_strides = RowMajorStrides((*x)->shape());
  std::vector<int64_t> out_shape;
  std::vector<int64_t> strides;
  for (int64_t p : *normalized) {
    out_shape.push_back((*x)->shape()[p]);
    strides.push_back(in_strides[p]);
  }
  absl::StatusOr<Tensor> out = NewOutput((*x)->dtype(), out_shape);
  if (!out.ok()) return out.status();
  return std::vector<Tensor>{GatherBytes(**x, *std::move(out), IndexWalker(out_shape, {strides}))};
}

KernelResult Expand(const KernelArgs& args) {
  absl::StatusOr<const Tensor*> x = RequiredInput(args, 0);
  if (!x.ok()) return x.status();
  absl::StatusOr<const Tensor*> shape_input = RequiredInput(args, 1);
  if (!shape_input.ok()) return shape_input.status();
  absl::StatusOr<std::vector<int64_t>> target = ToInt64s(**shape_input, "shape input");
  if (!target.ok()) return target.status();
  absl::StatusOr<std::vector<int64_t>> out_shape = BroadcastShapes({(*x)->shape(), *target});
  if (!out_shape.ok()) return out_shape.status();
  absl::StatusOr<Tensor> out = NewOutput((*x)->dtype(), *out_shape);
  if (!out.ok()) return out.status();
  return std::vector<Tensor>{
      GatherBytes(**x, *std::move(out), IndexWalker::Broadcast(*out_shape, {(*x)->shape()}))};
}

KernelResult Tile(const KernelArgs& args) {
  absl::StatusOr<const Tensor*> x = RequiredInput(args, 0);
  if (!x.ok()) return x.status();
  absl::StatusOr<const Tensor*> repeats_input = RequiredInput(args, 1);
  if (!repeats_input.ok()) return repeats_input.status();
  absl::StatusOr<std::vector<int64_t>> repeats = ToInt64s(**repeats_input, "repeats input");
  if (!repeats.ok()) return repeats.status();
  const std::vector<int64_t>& in_shape = (*x)->shape();
  if (repeats->size() != in_shape.size()) {
    return Invalid("repeats ", ShapeToString(*repeats), " does not match rank ", in_shape.size());
  }
  std::vector<int64_t> out_shape;
  for (size_t d = 0; d < in_shape.size(); ++d) {
    if ((*repeats)[d] < 0 ||
        (in_shape[d] > 0 && (*repeats)[d] > Tensor::kMaxElements / in_shape[d])) {
      return Invalid("repeats ", ShapeToString(*repeats), " are negative or too large for ",
                     ShapeToString(in_shape));
    }
    out_shape.push_back(in_shape[d] * (*repeats)[d]);
  }
  absl::StatusOr<Tensor> out = NewOutput((*x)->dtype(), out_shape);
  if (!out.ok()) return out.status();
  const std::vector<int64_t> in_strides = RowMajorStrides(in_shape);
  CopyElementsFrom(**x, *out, [&](const std::vector<int64_t>& o) {
    int64_t offset = 0;
    for (size_t d = 0; d < in_shape.size(); ++d) offset += (o[d] % in_shape[d]) * in_strides[d];
    return offset;
  });
  return std::vector<Tensor>{*std::move(out)};
}

KernelResult Shape(const KernelArgs& args) {
  absl::StatusOr<const Tensor*> x = RequiredInput(args, 0);
  if (!x.ok()) return x.status();
  const int64_t rank = (*x)->rank();
  absl::StatusOr<int64_t> start = args.attrs->GetInt("start", 0);
  absl::StatusOr<int64_t> end = args.attrs->GetInt("end", rank);
  if (!start.ok()) return start.status();
  if (!end.ok()) return end.status();
  auto clamp = [rank](int64_t v) { return std::clamp(v < 0 ? v + rank : v, int64_t{0}, rank); };
  const int64_t lo = clamp(*start);
  const int64_t hi = std::max(lo, clamp(*end));
  std::vector<int64_t> dims((*x)->shape().begin() + lo, (*x)->shape().begin() + hi);
  return std::vector<Tensor>{
      Tensor::FromVector<int64_t>(DType::kI64, {static_cast<int64_t>(dims.size())}, dims)};
}

KernelResult Size(const KernelArgs& args) {
  absl::StatusOr<const Tensor*> x = RequiredInput(args, 0);
  if (!x.ok()) return x.status();
  return std::vector<Tensor>{Tensor::ScalarI64((*x)->num_elements())};
}

KernelResult Identity(const KernelArgs& args) {
  absl::StatusOr<const Tensor*> x = RequiredInput(args, 0);
  if (!x.ok()) return x.status();
  return std::vector<Tensor>{**x};
}

// Dropout at inference is the identity with an all-true mask. Training mode
// with a non-zero ratio draws random numbers; a reference oracle cannot
// reproduce another framework's generator, so that case is rejected.
KernelResult Dropout(const KernelArgs& args) {
  absl::StatusOr<const Tensor*> x = RequiredInput(args, 0);
  if (!x.ok()) return x.status();
  double ratio = 0.5;
  if (const Tensor* r = OptionalInput(args, 1)) {
    if (r->num_elements() != 1 || !IsFloat(r->dtype())) {
      return Invalid("ratio must be a one-element float tensor, got ", r->DebugString());
    }
    ratio = r->GetAsDouble(0);
  } else {
    absl::StatusOr<float> attr = args.attrs->GetFloat("ratio", 0.5f);
    if (!attr.ok()) return attr.status();
    ratio = *attr;
  }
  bool training = false;
  if (const Tensor* t = OptionalInput(args, 2)) {
    if (t->num_elements() != 1 || t->dtype() != DType::kBool) {
      return Invalid("training_mode must be a one-element bool tensor, got ", t->DebugString());
    }
    training = t->GetAsInt64(0) != 0;
  }
  if (training && ratio != 0.0) {
    return Unsupported("Dropout in training mode with a non-zero ratio (random masks)");
  }
  absl::StatusOr<Tensor> mask = NewOutput(DType::kBool, (*x)->shape());
  if (!mask.ok()) return mask.status();
  std::fill_n(mask->mutable_data<uint8_t>(), mask->num_elements(), uint8_t{1});
  return std::vector<Tensor>{**x, *std::move(mask)};
}

}  // namespace

// RelativePositionExpand(X, S, T) {axis} (graph/ops/rules.h): out[p, i, j, q]
// = X[p, j - i + S - 1, q], X's `axis` of length S + T - 1.
KernelResult RelativePositionExpand(const KernelArgs& args) {
  absl::StatusOr<const Tensor*> x = RequiredInput(args, 0);
  if (!x.ok()) return x.status();
  int64_t lengths[2];
  for (int i : {1, 2}) {
    absl::StatusOr<const Tensor*> t = RequiredInput(args, i);
    if (!t.ok()) return t.status();
    absl::StatusOr<int64_t> v = ToScalarInt64(**t, i == 1 ? "rows input" : "columns input");
    if (!v.ok()) return v.status();
    if (*v < 0) return Invalid("length ", *v, " is negative");
    lengths[i - 1] = *v;
  }
  const std::vector<int64_t>& in_shape = (*x)->shape();
  absl::StatusOr<int64_t> axis = NormalizeAxis(args.attrs->GetInt("axis", 0).value_or(0),
                                               static_cast<int64_t>(in_shape.size()));
  if (!axis.ok()) return axis.status();
  const int64_t rows = lengths[0], cols = lengths[1];
  if (in_shape[*axis] != rows + cols - 1 && rows * cols != 0) {
    return Invalid("axis ", *axis, " of ", ShapeToString(in_shape), " must have rows + columns - 1 = ",
                   rows + cols - 1, " entries");
  }
  std::vector<int64_t> out_shape(in_shape.begin(), in_shape.begin() + *axis);
  out_shape.push_back(rows);
  out_shape.push_back(cols);
  out_shape.insert(out_shape.end(), in_shape.begin() + *axis + 1, in_shape.end());
  absl::StatusOr<Tensor> out = NewOutput((*x)->dtype(), out_shape);
  if (!out.ok()) return out.status();
  const std::vector<int64_t> in_strides = RowMajorStrides(in_shape);
  CopyElementsFrom(**x, *out, [&](const std::vector<int64_t>& o) {
    int64_t offset = 0;
    for (int64_t d = 0; d < *axis; ++d) offset += o[d] * in_strides[d];
    offset += (o[*axis + 1] - o[*axis] + rows - 1) * in_strides[*axis];
    for (size_t d = *axis + 1; d < in_shape.size(); ++d) offset += o[d + 1] * in_strides[d];
    return offset;
  });
  return std::vector<Tensor>{*std::move(out)};
}

void RegisterShapeKernels(KernelRegistry& registry) {
  registry.Add("Reshape", Reshape);
  registry.Add("Flatten", Flatten);
  registry.Add("Squeeze", Squeeze);
  registry.Add("Unsqueeze", Unsqueeze);
  registry.Add("Transpose", Transpose);
  registry.Add("Expand", Expand);
  registry.Add("Tile", Tile);
  registry.Add("RelativePositionExpand", RelativePositionExpand);
  registry.Add("Shape", Shape);
  registry.Add("Size", Size);
  registry.Add("Identity", Identity);
  registry.Add("Dropout", Dropout);
}

}  // namespace shapeshift::reference
