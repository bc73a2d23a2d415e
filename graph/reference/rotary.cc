// The fused rotary position embeddings (passes/rotary_embedding_recognition.h;
// shapeshift ops, not ONNX's), over X's last axis (of size d):
//
//   Op(X, A, B) {rotary_dim = r, default d} =
//   Concat(X' * A + rotate(X') * B, X[..., r:]), where X' = X[..., :r], and
//
//   RotateHalfMulAdd: rotate_half(X') = Concat(-X'[..., h:], X'[..., :h])
//   (r = 2h): Llama, Qwen2, Mistral (r = d), GPT-NeoX, Phi (r < d), spelled
//   as two Slices, Neg, Concat, two Muls and an Add;
//
//   RotateEveryTwoMulAdd: rotate_every_two(X')[..., 2i] = -X'[..., 2i+1],
//   [..., 2i+1] = X'[..., 2i]: GPT-J, spelled as two step-2 Slices, Neg, two
//   Unsqueezes, Concat, Reshape, two Muls and an Add;
//
//   for r < d, also the Slice of X' and the Concat with the pass-through
//   channels.
//
// A and B broadcast with X' (with r < d the broadcast must keep X's leading
// dims, as the Concat requires). Computed in
// the element type, each product and the sum rounded once, in that order:
// exactly what the decomposed Mul, Mul, Add compute (a product or sum of two
// f32 values rounded from double is the same f32 value), so the rewrite never
// changes a bit. Not registered kViaF32: the decomposed graph on f16 inputs
// would round after every node, which one widened evaluation would not;
// 16-bit inputs are unsupported.
#include <algorithm>

#include "graph/reference/kernel_util.h"

namespace shapeshift::reference {
namespace {

enum class Rotation { kHalf, kEveryTwo };

// X's partner channel in the rotation: `partner(j)` is the offset from j of
// the channel element j of the rotated operand reads, `negated(j)` whether
// it is negated. r channels rotate.
struct Partner {
  Rotation rotation;
  int64_t r;
  int64_t Offset(int64_t j) const {
    if (rotation == Rotation::kHalf) return j < r / 2 ? r / 2 : -r / 2;
    return j % 2 == 0 ? 1 : -1;
  }
  bool Negated(int64_t j) const { return rotation == Rotation::kHalf ? j < r / 2 : j % 2 == 0; }
};

KernelResult RotaryMulAdd(const KernelArgs& args, Rotation rotation) {
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
  const int64_t d = x_shape.back();
  absl::StatusOr<int64_t> attr = args.attrs->GetInt("rotary_dim", d);
  if (!attr.ok()) return attr.status();
  const int64_t r = *attr;
  if (r < 2 || r > d || r % 2 != 0) {
    return Invalid("rotary_dim must be even and within [2, ", d, "], got ", r);
  }
  // The rotated part: X' = X[..., :r] broadcast with A and B.
  std::vector<int64_t> rotated_shape = x_shape;
  rotated_shape.back() = r;
  absl::StatusOr<std::vector<int64_t>> part = BroadcastShapes({rotated_shape, in[1]->shape(), in[2]->shape()});
  if (!part.ok()) return part.status();
  std::vector<int64_t> shape = *part;
  if (r < d) {
    if (shape.size() != x_shape.size() || !std::equal(x_shape.begin(), x_shape.end() - 1, shape.begin())) {
      return Invalid("with rotary_dim ", r, " < ", d, " the rotated part ", ShapeToString(shape),
                     " must keep X's leading dims ", ShapeToString(x_shape));
    }
    shape.back() = d;
  }
  absl::StatusOr<Tensor> out = NewOutput(in[0]->dtype(), shape);
  if (!out.ok()) return out.status();
  const Partner partner{rotation, r};
  absl::Status st = VisitFloat(args, in[0]->dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = in[0]->data<T>();
    const T* a = in[1]->data<T>();
    const T* b = in[2]->data<T>();
    T* o = out->mutable_data<T>();
    // The last dim of X' is r >= 2, never broadcast: the partner of X's
    // element at offset k is k + Offset(j), in the same row.
    IndexWalker walk = IndexWalker::Broadcast(*part, {rotated_shape, in[1]->shape(), in[2]->shape()});
    const int64_t n = Product(*part);
    for (int64_t i = 0; i < n; ++i, walk.Next()) {
      const int64_t j = walk.index().back();
      const int64_t xk = walk.offset(0) / r * d + j;  // X' offset -> X offset
      const T p = x[xk + partner.Offset(j)];
      const T rotated = partner.Negated(j) ? static_cast<T>(-p) : p;
      const T first = static_cast<T>(x[xk] * a[walk.offset(1)]);
      const T second = static_cast<T>(rotated * b[walk.offset(2)]);
      o[i / r * d + j] = static_cast<T>(first + second);
    }
    // The channels past r pass through (r < d only: the shape is X's).
    for (int64_t row = 0; r < d && row < n / r; ++row) {
      for (int64_t j = r; j < d; ++j) o[row * d + j] = x[row * d + j];
    }
    return absl::OkStatus();
  });
  if (!st.ok()) return st;
  return std::vector<Tensor>{*std::move(out)};
}

KernelResult RotateHalfMulAdd(const KernelArgs& args) { return RotaryMulAdd(args, Rotation::kHalf); }
KernelResult RotateEveryTwoMulAdd(const KernelArgs& args) { return RotaryMulAdd(args, Rotation::kEveryTwo); }

}  // namespace

void RegisterRotaryKernels(KernelRegistry& registry) {
  registry.Add("RotateHalfMulAdd", RotateHalfMulAdd);
  registry.Add("RotateEveryTwoMulAdd", RotateEveryTwoMulAdd);
}

}  // namespace shapeshift::reference
