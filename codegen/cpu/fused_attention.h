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
// The semantics (masks, the causal band, NaN rows, grouped-query heads,
// empty sizes) are AttentionArgs' (codegen/attention_args.h).
#ifndef SHAPESHIFT_CODEGEN_CPU_FUSED_ATTENTION_H_
#define SHAPESHIFT_CODEGEN_CPU_FUSED_ATTENTION_H_

#include <cstdint>

#include "absl/status/status.h"
#include "codegen/attention_args.h"

namespace shapeshift::codegen::cpu {

using codegen::AttentionArgs;
using codegen::AttentionOperand;

// Which core runs: the widest the CPU has and the process's ISA limit
// (isa_limit.h) allows.
enum class AttentionIsa { kAvx512, kAvx2, kPortable };
AttentionIsa SelectedAttentionIsa();
const char* AttentionIsaName(AttentionIsa isa);

// A KV concat's copy of the past, done by the attention that reads the
// concat's result (runtime: a decoder's present under plain ONNX semantics,
// whose Concat(past, new) would otherwise copy the past and the attention
// then read it again). Before the attention reads K, K's rows j < rows of
// every (batch, KV head) are set to `k`'s rows j (an operand laid out like
// K: [batch, kv_heads, rows, head_dim] through strides), and V's likewise
// from `v`; an operand with null data is not copied. The attention's result
// is the same as with the copy made beforehand (the same values in K and V,
// read in the same order). The decode path copies each (batch, KV head)'s
// rows block by block while it reads them from the source, writing K and V
// with streaming stores, so the past crosses memory once each way; the
// other paths copy first.
struct PastCopy {
  AttentionOperand k, v;
  int64_t rows = 0;
};

// Runs the whole attention on the calling thread's OpenMP team (parallel over
// batch × heads × query tiles; TeamFor in parallel_run.h). INVALID_ARGUMENT
// names the first bad size or stride (negative sizes, non-positive heads or
// head dims, heads not a multiple of kv_heads, a null operand that is read;
// with `past`: rows outside [0, kv_len], a null or negatively strided source
// of rows to copy).
absl::Status RunFusedAttention(const AttentionArgs& args, const PastCopy* past = nullptr);

// The same on a given core (tests compare the cores; the bench times them).
absl::Status RunFusedAttentionOn(AttentionIsa isa, const AttentionArgs& args, const PastCopy* past = nullptr);

}  // namespace shapeshift::codegen::cpu

#endif  // SHAPESHIFT_CODEGEN_CPU_FUSED_ATTENTION_H_
