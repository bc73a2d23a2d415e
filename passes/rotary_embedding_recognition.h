// Rotary position embedding (RoPE) recognition: rewrites what exporters emit
// for the two rotations into one shapeshift node each.
//
// rotate_half (Llama, Qwen2, Mistral):
//
//   x1 = Slice(x, 0:h, last axis)      x2 = Slice(x, h:d, last axis)
//   r  = Concat(Neg(x2), x1, last axis)             (rotate_half(x), d = 2h)
//   y  = Mul(x, a) + Mul(r, b)                      (a = cos, b = sin)
//
// (both exporters; dynamo's Split is already Slices, split_to_slices.h; each
// Mul and the Add in either operand order) into
//
//   y = RotateHalfMulAdd(x, a, b)
//
// rotate_every_two (GPT-J, interleaved pairs; both exporters write the same):
//
//   x1 = Slice(x, 0::2, last axis)     x2 = Slice(x, 1::2, last axis)
//   s  = Concat(Unsqueeze(Neg(x2), -1), Unsqueeze(x1, -1), -1)   [..., d/2, 2]
//   r  = Reshape(s, x's shape)            (stack((-x2, x1), -1).flatten(-2))
//   y  = Mul(x, a) + Mul(r, b)
//
// into y = RotateEveryTwoMulAdd(x, a, b) {rotary_dim = d}; and for either
// rotation, when x is itself the head Slice(X, 0:r) of a wider X whose tail
// Slice(X, r:D) is concatenated after y (partial rotary: GPT-J rotates 64 of
// a 256-wide head, every two; GPT-NeoX/Pythia a quarter and Phi half of it,
// rotate_half), the Concat too:
//
//   Concat(y, Slice(X, r:D), last axis) = Op(X, a, b) {rotary_dim = r}
//
// Shapeshift ops, not ONNX's: ONNX's opset-23 RotaryEmbedding takes
// half-width caches and applies cache[j mod h] (or cache[j / 2] interleaved)
// to both members of a pair, which equals the graph only when a's and b's
// members are equal — HF builds them so (cat(freqs, freqs), repeat_interleave),
// but nothing in the graph says so. These ops take the full-width a and b the
// graph multiplies by, broadcast against x, and compute each product and the
// sum rounded once, as the decomposed graph does, so the rewrite changes no
// bit (graph/reference/rotary.cc).
//
// Why: as seven nodes rotate_half is five kernels per q and k after fusion
// (two slice copies, the Neg, the concat copy, the mul-add), with three
// intermediates stored and x read three times; GPT-J's partial every-two
// form is nine (the head and tail slices, the two step-2 slices, the Neg, the
// stack, the mul-add and the two copies of the final Concat). As one node it
// is one row kernel (codegen/lower/rotary_kernel.cc).
//
// Only exact matches are rewritten: x's last dim d is a constant even number
// (a head dim), the slices are exactly [0, h) and [h, d) (rotate_half) or
// [0, d) and [1, d) with step 2 (every-two; the steps of the others are 1)
// of that axis, the concats and unsqueezes are over the last axis, every
// intermediate is read only inside the pattern and is no graph output (x, a
// and b may have other readers; the partial form's x' only inside it, and
// it is neither a nor b), x, a and b are f32, the Reshape gives x's shape,
// and the result has x's shape for every input (a and b broadcast to x).
// The shape facts are env questions with provenance
// "rotary-embedding-recognition".
#ifndef SHAPESHIFT_PASSES_ROTARY_EMBEDDING_RECOGNITION_H_
#define SHAPESHIFT_PASSES_ROTARY_EMBEDDING_RECOGNITION_H_

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "shapes/shape_env.h"

namespace shapeshift::passes {

// True when some rotary embedding was rewritten.
absl::StatusOr<bool> RecognizeRotaryEmbedding(Graph& graph, ShapeEnv& env);

}  // namespace shapeshift::passes

#endif  // SHAPESHIFT_PASSES_ROTARY_EMBEDDING_RECOGNITION_H_
