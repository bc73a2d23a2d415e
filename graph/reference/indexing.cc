// Ops that select or join sub-tensors: Concat, Split, Slice, Gather,
// GatherElements, Trilu. Element bytes are moved as opaque units (any dtype).
//
// Opset differences: Slice's starts/ends/axes were attributes before opset
// 10 (then inputs, plus steps); Split's sizes became an input at 13 and
// num_outputs appeared at 18. Inputs win when present.
#include <algorithm>
#include <cstring>

#include "graph/reference/kernel_util.h"

namespace shapeshift::reference {
namespace {

const std::byte* Bytes(const Tensor& t) { return static_cast<const std::byte*>(t.raw()); }
std::byte* MutableBytes(Tensor& t) { return static_cast<std::byte*>(t.mutable_raw()); }

KernelResult Concat(const KernelArgs& args) {
  std::vector<const Tensor*> inputs;
  for (size_t i = 0; i < args.inputs.size(); ++i) {
    absl::StatusOr<const Tensor*> t = RequiredInput(args, static_cast<int>(i));
    if (!t.ok()) return t.status();
    inputs.push_back(*t);
  }
  if (inputs.empty()) return Invalid("Concat needs at least one input");
  absl::Status same = RequireSameDType(args, inputs);
  if (!same.ok()) return same;
  absl::StatusOr<int64_t> axis_attr = args.attrs->GetInt("axis");
  if (!axis_attr.ok()) return axis_attr.status();
  const int64_t rank = inputs[0]->rank();
  absl::StatusOr<int64_t> axis = NormalizeAxis(*axis_attr, rank);
  if (!axis.ok()) return axis.status();
  std::vector<int64_t> out_shape = inputs[0]->shape();
  out_shape[*axis] = 0;
  for (const Tensor* t : inputs) {
    for (int64_t d = 0; d < rank; ++d) {
      if (t->rank() != rank || (d != *axis && t->shape()[d] != out_shape[d])) {
        return Invalid("cannot concatenate ", ShapeToString(t->shape()), " with ",
                       ShapeToString(inputs[0]->shape()), " on axis ", *axis);
      }
    }
    out_shape[*axis] += t->shape()[*axis];
  }
  absl::StatusOr<Tensor> out = NewOutput(inputs[0]->dtype(), out_shape);
  if (!out.ok()) return out.status();
  const size_t size = DTypeSize(out->dtype());
  const int64_t outer = Product(out_shape, 0, *axis);
  const int64_t inner = Product(out_shape, *axis + 1);
  std::byte* dst = MutableBytes(*out);
  for (int64_t o = 0; o < outer; ++o) {
    for (const Tensor* t : inputs) {
      const int64_t chunk = t->shape()[*axis] * inner * size;
      if (chunk == 0) continue;
      std::memcpy(dst, Bytes(*t) + o * chunk, chunk);
      dst += chunk;
    }
  }
  return std::vector<Tensor>{*std::move(out)};
}

// Copies the sub-tensor [begin, begin + length) along `axis`.
absl::StatusOr<Tensor> SliceAxis(const Tensor& x, int64_t axis, int64_t begin, int64_t length) {
  std::vector<int64_t> shape = x.shape();
  const int64_t dim = shape[axis];
  shape[axis] = length;
  absl::StatusOr<Tensor> out = NewOutput(x.dtype(), shape);
  if (!out.ok()) return out.status();
  const size_t size = DTypeSize(x.dtype());
  const int64_t outer = Product(shape, 0, axis);
  const int64_t inner = Product(shape, axis + 1);
  for (int64_t o = 0; o < outer; ++o) {
    if (length * inner == 0) break;
    std::memcpy(MutableBytes(*out) + o * length * inner * size,
                Bytes(x) + (o * dim + begin) * inner * size, length * inner * size);
  }
  return out;
}

KernelResult Split(const KernelArgs& args) {
  absl::StatusOr<const Tensor*> x = RequiredInput(args, 0);
  if (!x.ok()) return x.status();
  absl::StatusOr<int64_t> axis_attr = args.attrs->GetInt("axis", 0);
  if (!axis_attr.ok()) return axis_attr.status();
  absl::StatusOr<int64_t> axis = NormalizeAxis(*axis_attr, (*x)->rank());
  if (!axis.ok()) return axis.status();
  const int64_t dim = (*x)->shape()[*axis];
  std::vector<int64_t> sizes;
  if (const Tensor* t = OptionalInput(args, 1)) {
    absl::StatusOr<std::vector<int64_t>> v = ToInt64s(*t, "split input");
    if (!v.ok()) return v.status();
    sizes = *v;
  } else if (args.attrs->Has("split")) {
    absl::StatusOr<std::vector<int64_t>> v = args.attrs->GetInts("split");
    if (!v.ok()) return v.status();
    sizes = *v;
  } else {
    // Equal parts; with opset 18's num_outputs the last part may be smaller.
    absl::StatusOr<int64_t> n = args.attrs->GetInt("num_outputs", args.num_outputs);
    if (!n.ok()) return n.status();
    if (*n <= 0) return Invalid("Split needs at least one output");
    const int64_t part = (dim + *n - 1) / *n;
    for (int64_t i = 0, left = dim; i < *n; ++i, left -= part) sizes.push_back(std::clamp(left, int64_t{0}, part));
  }
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) return Invalid("split sizes must be non-negative: ", ShapeToString(sizes));
    total += s;
  }
  if (total != dim) {
    return Invalid("split sizes ", ShapeToString(sizes), " do not add up to dim ", dim);
  }
  std::vector<Tensor> outs;
  int64_t begin = 0;
  for (int64_t s : sizes) {
    absl::StatusOr<Tensor> part = SliceAxis(**x, *axis, begin, s);
    if (!part.ok()) return part.status();
    outs.push_back(*std::move(part));
    begin += s;
  }
  return outs;
}

struct SliceSpec {
  std::vector<int64_t> starts, ends, axes, steps;
};

absl::StatusOr<SliceSpec> ReadSliceSpec(const KernelArgs& args, int64_t rank) {
  SliceSpec spec;
  if (args.opset < 10) {
    absl::StatusOr<std::vector<int64_t>> starts = args.attrs->GetInts("starts");
    absl::StatusOr<std::vector<int64_t>> ends = args.attrs->GetInts("ends");
    if (!starts.ok()) return starts.status();
    if (!ends.ok()) return ends.status();
    spec.starts = *starts;
    spec.ends = *ends;
    absl::StatusOr<std::vector<int64_t>> axes = args.attrs->GetInts("axes", {});
    if (!axes.ok()) return axes.status();
    spec.axes = *axes;
  } else {
    const char* names[] = {"starts", "ends", "axes", "steps"};
    std::vector<int64_t>* fields[] = {&spec.starts, &spec.ends, &spec.axes, &spec.steps};
    for (int i = 0; i < 4; ++i) {
      const Tensor* t = OptionalInput(args, i + 1);
      if (t == nullptr) {
        if (i < 2) return Invalid("Slice needs the ", names[i], " input");
        continue;
      }
      absl::StatusOr<std::vector<int64_t>> v = ToInt64s(*t, names[i]);
      if (!v.ok()) return v.status();
      *fields[i] = *v;
    }
  }
  const size_t n = spec.starts.size();
  if (spec.axes.empty()) {
    for (size_t i = 0; i < n; ++i) spec.axes.push_back(static_cast<int64_t>(i));
  }
  if (spec.steps.empty()) spec.steps.assign(n, 1);
  if (spec.ends.size() != n || spec.axes.size() != n || spec.steps.size() != n) {
    return Invalid("Slice starts/ends/axes/steps lengths differ: ", n, ", ", spec.ends.size(),
                   ", ", spec.axes.size(), ", ", spec.steps.size());
  }
  absl::StatusOr<std::vector<int64_t>> axes = NormalizeAxes(spec.axes, rank);
  if (!axes.ok()) return axes.status();
  spec.axes = *axes;
  return spec;
}

// Slice: per axis, negative starts/ends count from the end and are then
// clamped ([0, dim] for positive steps, [-1, dim-1] for negative ones).
KernelResult Slice(const KernelArgs& args) {
  absl::StatusOr<const Tensor*> x = RequiredInput(args, 0);
  if (!x.ok()) return x.status();
  absl::StatusOr<SliceSpec> spec = ReadSliceSpec(args, (*x)->rank());
  if (!spec.ok()) return spec.status();
  const std::vector<int64_t>& in_shape = (*x)->shape();
  const std::vector<int64_t> in_strides = RowMajorStrides(in_shape);
  std::vector<int64_t> out_shape = in_shape;
  std::vector<int64_t> strides = in_strides;
  int64_t base = 0;
  for (size_t i = 0; i < spec->axes.size(); ++i) {
    const int64_t axis = spec->axes[i];
    const int64_t dim = in_shape[axis];
    if (spec->steps[i] == 0) return Invalid("Slice step must not be 0");
    // A step longer than the axis selects at most one element; clamping it
    // keeps the arithmetic below free of overflow for extreme values.
    const int64_t max_step = std::max<int64_t>(dim, 1);
    const int64_t step = std::clamp(spec->steps[i], -max_step, max_step);
    int64_t start = spec->starts[i] < 0 ? spec->starts[i] + dim : spec->starts[i];
    int64_t end = spec->ends[i] < 0 ? spec->ends[i] + dim : spec->ends[i];
    int64_t count;
    if (step > 0) {
      start = std::clamp(start, int64_t{0}, dim);
      end = std::clamp(end, int64_t{0}, dim);
      count = end > start ? (end - start - 1) / step + 1 : 0;
    } else {
      start = std::clamp(start, int64_t{-1}, dim - 1);
      end = std::clamp(end, int64_t{-1}, dim - 1);
      count = start > end ? (start - end - 1) / -step + 1 : 0;
    }
    out_shape[axis] = count;
    strides[axis] = in_strides[axis] * step;
    if (count > 0) base += start * in_strides[axis];
  }
  absl::StatusOr<Tensor> out = NewOutput((*x)->dtype(), out_shape);
  if (!out.ok()) return out.status();
  const size_t size = DTypeSize((*x)->dtype());
  IndexWalker walk(out_shape, {strides}, {base});
  for (int64_t i = 0; i < out->num_elements(); ++i, walk.Next()) {
    std::memcpy(MutableBytes(*out) + i * size, Bytes(**x) + walk.offset(0) * size, size);
  }
  return std::vector<Tensor>{*std::move(out)};
}

// Reads indices (i64/i32), mapping negatives into [0, dim); error if outside.
absl::StatusOr<std::vector<int64_t>> ReadIndices(const Tensor& indices, int64_t dim) {
  absl::StatusOr<std::vector<int64_t>> v = ToInt64s(indices, "indices");
  if (!v.ok()) return v.status();
  for (int64_t& i : *v) {
    if (i < -dim || i >= dim) return Invalid("index ", i, " is out of range for dim ", dim);
    if (i < 0) i += dim;
  }
  return v;
}

KernelResult Gather(const KernelArgs& args) {
  absl::StatusOr<const Tensor*> data = RequiredInput(args, 0);
  if (!data.ok()) return data.status();
  absl::StatusOr<const Tensor*> indices = RequiredInput(args, 1);
  if (!indices.ok()) return indices.status();
  absl::StatusOr<int64_t> axis_attr = args.attrs->GetInt("axis", 0);
  if (!axis_attr.ok()) return axis_attr.status();
  absl::StatusOr<int64_t> axis = NormalizeAxis(*axis_attr, (*data)->rank());
  if (!axis.ok()) return axis.status();
  const std::vector<int64_t>& shape = (*data)->shape();
  absl::StatusOr<std::vector<int64_t>> idx = ReadIndices(**indices, shape[*axis]);
  if (!idx.ok()) return idx.status();
  std::vector<int64_t> out_shape(shape.begin(), shape.begin() + *axis);
  out_shape.insert(out_shape.end(), (*indices)->shape().begin(), (*indices)->shape().end());
  out_shape.insert(out_shape.end(), shape.begin() + *axis + 1, shape.end());
  absl::StatusOr<Tensor> out = NewOutput((*data)->dtype(), out_shape);
  if (!out.ok()) return out.status();
  const size_t size = DTypeSize((*data)->dtype());
  const int64_t outer = Product(shape, 0, *axis);
  const int64_t inner_bytes = Product(shape, *axis + 1) * size;
  std::byte* dst = MutableBytes(*out);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i : *idx) {
      if (inner_bytes == 0) continue;
      std::memcpy(dst, Bytes(**data) + (o * shape[*axis] + i) * inner_bytes, inner_bytes);
      dst += inner_bytes;
    }
  }
  return std::vector<Tensor>{*std::move(out)};
}

KernelResult GatherElements(const KernelArgs& args) {
  absl::StatusOr<const Tensor*> data = RequiredInput(args, 0);
  if (!data.ok()) return data.status();
  absl::StatusOr<const Tensor*> indices = RequiredInput(args, 1);
  if (!indices.ok()) return indices.status();
  absl::StatusOr<int64_t> axis_attr = args.attrs->GetInt("axis", 0);
  if (!axis_attr.ok()) return axis_attr.status();
  absl::StatusOr<int64_t> axis = NormalizeAxis(*axis_attr, (*data)->rank());
  if (!axis.ok()) return axis.status();
  if ((*indices)->rank() != (*data)->rank()) {
    return Invalid("indices ", ShapeToString((*indices)->shape()), " must have the rank of data ",
                   ShapeToString((*data)->shape()));
  }
  absl::StatusOr<std::vector<int64_t>> idx = ReadIndices(**indices, (*data)->shape()[*axis]);
  if (!idx.ok()) return idx.status();
  const std::vector<int64_t> data_strides = RowMajorStrides((*data)->shape());
  std::vector<int64_t> strides = data_strides;
  strides[*axis] = 0;  // the axis coordinate comes from the index instead
  for (int64_t d = 0; d < (*data)->rank(); ++d) {
    if (d != *axis && (*indices)->shape()[d] > (*data)->shape()[d]) {
      return Invalid("indices ", ShapeToString((*indices)->shape()), " exceed data ",
                     ShapeToString((*data)->shape()), " on axis ", d);
    }
  }
  absl::StatusOr<Tensor> out = NewOutput((*data)->dtype(), (*indices)->shape());
  if (!out.ok()) return out.status();
  const size_t size = DTypeSize((*data)->dtype());
  IndexWalker walk((*indices)->shape(), {strides});
  for (int64_t i = 0; i < out->num_elements(); ++i, walk.Next()) {
    const int64_t src = walk.offset(0) + (*idx)[i] * data_strides[*axis];
    std::memcpy(MutableBytes(*out) + i * size, Bytes(**data) + src * size, size);
  }
  return std::vector<Tensor>{*std::move(out)};
}


// Trilu: keeps the upper (j - i >= k) or lower (j - i <= k) triangle of the
// last two dims and zeroes the rest.
KernelResult Trilu(const KernelArgs& args) {
  absl::StatusOr<const Tensor*> x = RequiredInput(args, 0);
  if (!x.ok()) return x.status();
  if ((*x)->rank() < 2) return Invalid("Trilu needs rank >= 2, got ", ShapeToString((*x)->shape()));
  int64_t k = 0;
  if (const Tensor* t = OptionalInput(args, 1)) {
    absl::StatusOr<int64_t> v = ToScalarInt64(*t, "k input");
    if (!v.ok()) return v.status();
    k = *v;
  }
  absl::StatusOr<int64_t> upper = args.attrs->GetInt("upper", 1);
  if (!upper.ok()) return upper.status();
  Tensor out = (*x)->Clone();
  const int64_t rows = (*x)->shape()[(*x)->rank() - 2];
  const int64_t cols = (*x)->shape().back();
  const size_t size = DTypeSize(out.dtype());
  std::byte* p = MutableBytes(out);
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    const int64_t col = i % cols;
    const int64_t row = (i / cols) % rows;
    const bool keep = *upper ? col - row >= k : col - row <= k;
    if (!keep) std::memset(p + i * size, 0, size);
  }
  return std::vector<Tensor>{std::move(out)};
}

}  // namespace

void RegisterIndexingKernels(KernelRegistry& registry) {
  registry.Add("Concat", Concat);
  registry.Add("Split", Split);
  registry.Add("Slice", Slice);
  registry.Add("Gather", Gather);
  registry.Add("GatherElements", GatherElements);
  registry.Add("Trilu", Trilu);
}

}  // namespace shapeshift::reference
