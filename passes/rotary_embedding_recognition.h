// Rotary position embedding (RoPE) recognition: rewrites what exporters emit
// for Llama, Qwen2, Mistral and the other rotate_half models,
//
//   x1 = Slice(x, 0:h, last axis)      x2 = Slice(x, h:d, last axis)
//   r  = Concat(Neg(x2), x1, last axis)             (rotate_half(x), d = 2h)
//   y  = Mul(x, a) + Mul(r, b)                      (a = cos, b = sin)
//
// (both exporters; dynamo's Split is already Slices, split_to_slices.h; each
// Mul and the Add in either operand order) into one node
//
//   y = RotateHalfMulAdd(x, a, b)
//
// a shapeshift op, not ONNX's: ONNX's opset-23 RotaryEmbedding takes
// half-width caches and applies cache[j mod h] to both halves, which equals
// the graph only when a's and b's two halves are equal — HF builds them as
// cat(freqs, freqs), but nothing in the graph says so. RotateHalfMulAdd takes
// the full-width a and b the graph multiplies by, broadcast against x, and
// computes each product and the sum rounded once, as the decomposed graph does,
// so the rewrite changes no bit (graph/reference/rotary.cc).
//
// Why: as seven nodes it is five kernels per q and k after fusion (two slice
// copies, the Neg, the concat copy, the mul-add), with three intermediates
// stored and x read three times; as one node it is one row kernel
// (codegen/lower: out[j] = x[j]*a[j] - x[j+h]*b[j] for j < h, x[j]*a[j] +
// x[j-h]*b[j] after).
//
// Only exact matches are rewritten: x's last dim d is a constant even number
// (a head dim), the slices are exactly [0, h) and [h, d) of that axis with
// step 1, the concat is over the last axis, every intermediate is read only
// inside the pattern and is no graph output (x, a and b may have other
// readers), x, a and b are f32, and the result has x's shape for every input
// (a and b broadcast to x: an env question, provenance
// "rotary-embedding-recognition").
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
