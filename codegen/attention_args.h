// AttentionArgs: one fused attention's sizes, strides, operands and options —
// what the CPU core (cpu/fused_attention.h) and the CUDA kernel
// (cuda/attention_kernel.h) compute, and the one check both make of them.
//
// Semantics, per batch b, head h, query row i (0 <= i < S), key j (0 <= j < T):
//   x[i, j] = scale * Σ_d Q[b, h, i, d] · K[b, h, j, d]
//   y[i, j] = causal: allowed(i, j) ? x[i, j] + M[b, h, i, j] : x[i, j] + fill
//             else:   x[i, j] + M[b, h, i, j]            (M = 0 without a mask)
//     allowed(i, j) = j <= i + (T - S) [and j > i + (T - S) - window, window > 0]
//   p[i, :] = softmax(y[i, :]);   with nan_to_zero: p = isnan(p) ? 0 : p
//   O[b, h, i, e] = Σ_j p[i, j] · V[b, h, j, e]
// — exactly the graph's MatMul → (CausalSoftmax | Add → Softmax) [→ Where(IsNaN)]
// → MatMul, up to float rounding (the sums run in another order).
// A row whose softmax is NaN in the graph (a NaN score, a +inf score, or every
// score -inf) is NaN in O too, or 0 with nan_to_zero — never a finite guess.
// Empty sizes are the graph's too: no batch or no query rows, nothing is
// read or written; no keys (T = 0), O is 0 (a matmul over an empty axis).
//
// The heads of K and V may be fewer than Q's (grouped-query attention): query
// head h reads key/value head h / (heads / kv_heads).
#ifndef SHAPESHIFT_CODEGEN_ATTENTION_ARGS_H_
#define SHAPESHIFT_CODEGEN_ATTENTION_ARGS_H_

#include <cstdint>

#include "absl/status/status.h"

namespace shapeshift::codegen {

// A 4-D [batch, heads, rows, columns] f32 operand read (or written) through
// strides in elements; the last dim is contiguous. A broadcast dim has stride 0.
struct AttentionOperand {
  float* data = nullptr;  // const for Q, K, V and the mask; a device address for the CUDA kernel
  int64_t batch_stride = 0;
  int64_t head_stride = 0;
  int64_t row_stride = 0;
};

struct AttentionArgs {
  int64_t batch = 0;
  int64_t heads = 0;     // Q's and O's heads
  int64_t kv_heads = 0;  // K's and V's heads; divides heads
  int64_t q_len = 0;     // S
  int64_t kv_len = 0;    // T
  int64_t head_dim = 0;  // Q's and K's last dim
  int64_t v_head_dim = 0;  // V's and O's last dim
  AttentionOperand q, k, v, out;
  // Additive mask, broadcast to [batch, heads, S, T]: element (b, h, i, j) at
  // data[b * batch_stride + h * head_stride + i * row_stride + j * mask_col_stride].
  // data == nullptr: no mask.
  AttentionOperand mask;
  int64_t mask_col_stride = 1;  // 0 or 1
  float scale = 1.0f;
  bool causal = false;
  int64_t window = 0;  // causal only; 0: no window
  float fill = 0.0f;   // causal only: added instead of the mask where not allowed
  bool nan_to_zero = false;
};

// INVALID_ARGUMENT naming the first bad field (its message starts with the
// field: callers prefix their own name): negative sizes, non-positive heads
// or head dims, heads not a multiple of kv_heads, a null operand that is
// read or written, a negative stride, a broadcast (stride 0) output dim of
// extent > 1, a mask column stride other than 0 or 1, a negative window or
// one without causal. No batch or no query rows: nothing else is checked
// (nothing is read or written); no keys: K, V and the mask are not checked
// (not read).
absl::Status CheckAttentionArgs(const AttentionArgs& args);

}  // namespace shapeshift::codegen

#endif  // SHAPESHIFT_CODEGEN_ATTENTION_ARGS_H_
