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

// Runs the whole attention on the calling thread's OpenMP team (parallel over
// batch × heads × query tiles; TeamFor in parallel_run.h). INVALID_ARGUMENT
// names the first bad size or stride (negative sizes, non-positive heads or
// head dims, heads not a multiple of kv_heads, a null operand that is read).
absl::Status RunFusedAttention(const AttentionArgs& args);

// The same on a given core (tests compare the cores; the bench times them).
absl::Status RunFusedAttentionOn(AttentionIsa isa, const AttentionArgs& args);

}  // namespace shapeshift::codegen::cpu

#endif  // SHAPESHIFT_CODEGEN_CPU_FUSED_ATTENTION_H_
