// Grouped-query matmuls: attention over key/value heads that `repeat_kv`
// expands, computed from the unexpanded heads.
//
// Grouped-query attention (Llama, Qwen2, Mistral, Gemma) keeps G key/value
// heads for H = G * R query heads; transformers' `repeat_kv` copies each
// key/value head R times before the two attention matmuls:
//
//   E = Expand(Unsqueeze(X[b, G, n, d], 2), [b, G, R, n, d])
//   B = Reshape(E, [b, H, n, d])                       (values; and keys, then)
//   B = Transpose(B, [0, 1, 3, 2])                     (keys, TorchScript)  or
//   B = Reshape(Transpose(Reshape(E, [b*H, n, d]), [0, 2, 1]), [b, H, d, n])  (keys, dynamo)
//   C = MatMul(A[b, H, m, k], B)
//
// Query head h = g * R + r reads key/value head g, and A's heads of one
// group are adjacent in memory, so the same C is
//
//   C = Reshape(MatMul(Reshape(A, [b, G, R*m, k]), X or Transpose(X, [0, 1, 3, 2])), [b, H, m, n])
//
// — a batched matmul over b*G with R*m rows, reading X in place. Multi-query
// attention (Falcon, StarCoder) needs no repeat_kv: C = MatMul(A[b, H, m, k],
// B[b, 1, k, n]) broadcasts its one key/value head, and is rewritten the same
// way with G = 1, R = H (B itself as X). The Expand
// (a copy of the whole key/value cache, R times, per layer and per request)
// and, for the keys, the transpose copy disappear: the Reshapes are views
// and matmul-layout turns the key transpose into the matmul's transpose_b.
// Exact (each product sums the same terms in the same order). Only these
// forms are rewritten; every shape is checked with the env, and G and R must
// be static.
#ifndef SHAPESHIFT_PASSES_GROUPED_QUERY_MATMUL_H_
#define SHAPESHIFT_PASSES_GROUPED_QUERY_MATMUL_H_

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "shapes/shape_env.h"

namespace shapeshift::passes {

// True when some matmul now reads unexpanded key/value heads.
absl::StatusOr<bool> GroupQueryMatmuls(Graph& graph, ShapeEnv& env);

}  // namespace shapeshift::passes

#endif  // SHAPESHIFT_PASSES_GROUPED_QUERY_MATMUL_H_
