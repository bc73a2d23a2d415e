// RotateHalfMulAdd(X, A, B) = X * A + rotate_half(X) * B, where
// rotate_half(X) = Concat(-X[..., h:], X[..., :h]) over X's last axis (d = 2h)
// and A, B broadcast with X (numpy rules). Not an ONNX op: the fused form of
// the rotary position embedding Llama/Qwen/Mistral exports spell as two
// Slices, Neg, Concat, two Muls and an Add (passes/rotary_embedding_recognition.h).
//
// Computed in the element type, each product and the sum rounded once, in
// that order: exactly what the decomposed Mul, Mul, Add compute (a product or
// sum of two f32 values rounded from double is the same f32 value), so the
// rewrite never changes a bit. Not registered kViaF32: the decomposed graph on
// f16 inputs would round after every node, which one widened evaluation would
// not; 16-bit inputs are unsupported.
#include "graph/reference/kernel_util.h"

namespace shapeshift::reference {
namespace {

KernelResult RotateHalfMulAdd(const KernelArgs& args) {
  std::vector<const Tensor*> in;
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<const Tensor*> t = RequiredInput(args, i);
    if (!t.ok()) return t.status();
    in.push_back(*t);
  }
  if (absl::Status same = RequireSameDType(args, in); !same.ok()) return same;
  const std::vector<int64_t>& x_shape = in[0]->shape();
  if (x_shape.empty() || x_shape.back() < 2 || x_shape.back() % 2 != 0) {
    return Invalid("the last dim of X must be even, got ", ShapeToString(x_shape));
  }
  absl::StatusOr<std::vector<int64_t>> shape = BroadcastShapes({x_shape, in[1]->shape(), in[2]->shape()});
  if (!shape.ok()) return shape.status();
  absl::StatusOr<Tensor> out = NewOutput(in[0]->dtype(), *shape);
  if (!out.ok()) return out.status();
  const int64_t d = x_shape.back();
  const int64_t h = d / 2;
  absl::Status st = VisitFloat(args, in[0]->dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = in[0]->data<T>();
    const T* a = in[1]->data<T>();
    const T* b = in[2]->data<T>();
    T* o = out->mutable_data<T>();
    // X's last dim is the output's (a dim of 2 or more never broadcasts), so
    // the partner of X's element at offset k is k + h or k - h.
    IndexWalker walk = IndexWalker::Broadcast(*shape, {x_shape, in[1]->shape(), in[2]->shape()});
    for (int64_t i = 0; i < out->num_elements(); ++i, walk.Next()) {
      const int64_t j = walk.index().back();
      const T rotated = j < h ? static_cast<T>(-x[walk.offset(0) + h]) : x[walk.offset(0) - h];
      const T first = static_cast<T>(x[walk.offset(0)] * a[walk.offset(1)]);
      const T second = static_cast<T>(rotated * b[walk.offset(2)]);
      o[i] = static_cast<T>(first + second);
    }
    return absl::OkStatus();
  });
  if (!st.ok()) return st;
  return std::vector<Tensor>{*std::move(out)};
}

}  // namespace

void RegisterRotaryKernels(KernelRegistry& registry) { registry.Add("RotateHalfMulAdd", RotateHalfMulAdd); }

}  // namespace shapeshift::reference
