// FusedAttention: softmax(scale · Q·Kᵀ + mask) · V in one pass per query
// tile, without the [S, T] scores in memory (flash attention on the CPU).
//
// Why: unfused, an attention is two batched GEMMs, a softmax row kernel and
// (torch's SDPA export) a NaN-to-zero Where, each reading and writing the
// [batch, heads, S, T] scores, plus a transpose copy of Q, K, V and the
// output. Here each query tile keeps its scores in registers and L1, K and
// V are read once per tile, and Q, K, V and the output are read and written
// through strides, so the head transposes around it disappear too.
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
#ifndef SHAPESHIFT_CODEGEN_CPU_FUSED_ATTENTION_H_
#define SHAPESHIFT_CODEGEN_CPU_FUSED_ATTENTION_H_

#include <cstdint>

#include "absl/status/status.h"

namespace shapeshift::codegen::cpu {

// A 4-D [batch, heads, rows, columns] f32 operand read (or written) through
// strides in elements; the last dim is contiguous. A broadcast dim has stride 0.
struct AttentionOperand {
  float* data = nullptr;  // const for Q, K, V and the mask
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

// Which core runs: the widest the CPU has and the process's ISA limit
// (isa_limit.h) allows.
enum class AttentionIsa { kAvx512, kAvx2, kPortable };
AttentionIsa SelectedAttentionIsa();
const char* AttentionIsaName(AttentionIsa isa);

// Runs the whole attention on the calling thread's OpenMP team (parallel over
// batch × heads × query tiles; TeamFor in parallel_run.h). INVALID_ARGUMENT
// names the first bad size or stride (negative sizes, non-positive heads or
// head dims, heads not a multiple of kv_heads, a null operand that is read).
absl::Status RunFusedAttention(const AttentionArgs& args);

// The same on a given core (tests compare the cores; the bench times them).
absl::Status RunFusedAttentionOn(AttentionIsa isa, const AttentionArgs& args);

}  // namespace shapeshift::codegen::cpu

#endif  // SHAPESHIFT_CODEGEN_CPU_FUSED_ATTENTION_H_
