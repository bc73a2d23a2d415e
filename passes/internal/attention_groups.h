// Fusion's attention step: merges the groups of one attention — the head
// transposes of Q, K and V, the Q·Kᵀ matmul, its softmax, torch SDPA's
// Where(IsNaN(p), 0, p), the ·V matmul and the output's head transpose —
// into one kAttention group (fusion_plan.h, AttentionGroup), which the CPU
// lowering runs as one fused kernel with no [S, T] scores in memory
// (codegen/cpu/fused_attention.h). Internal to passes/fusion*.cc.
//
// What merges (anything else is left as it was):
//  - a softmax group over the last axis of rank-4 f32 scores whose nodes are
//    only the softmax (Softmax or CausalSoftmax with an f32 or no mask), an
//    additive mask's Add and a scale — no log, bool (select) mask, keep
//    stage, ALiBi bias or recomputed relative positions;
//  - its scores computed by a batched matmul group with transpose_b and at
//    most a scale (no bias, activation or residual), read by nothing else;
//  - the probabilities (or their NaN-to-zero Where, a two-node group) read
//    only by the A side of a batched matmul group with no epilogue;
//  - head dims d and dv constants, at most the caller's bound if it gives
//    one (a device kernel's shared memory; K and V may be a KV cache's present: the
//    runtime reads a bound one with its capacity's strides);
//  - a mask whose every dim is 1 or provably the scores' dim there.
// Grouped-query attention as passes/grouped_query_matmul.h leaves it — Q
// Reshaped to [b, G, R·m, d] for the Q·Kᵀ matmul over the G unexpanded
// key/value heads, the scores Reshaped back to [b, H, m, n] for the softmax,
// the probabilities to [b, G, R·m, n] for ·V, its result back to
// [b, H, m, dv] — merges with those four views (each read only by the next
// step, each shape checked as that regrouping): Q and the output keep their
// H heads, K and V their G, and the kernel's rule (head h reads key/value
// head h / R) is the one the views encode.
// A Transpose perm [0, 2, 1, 3] group feeding Q, K or V (read only by the
// matmul) or reading the output (its only reader) joins too: the kernel
// reads and writes those tensors through strides. Such a Q, K or V that is
// the Reshape [b, S, h, d] of a Slice of a wider tensor's last axis (GPT-2's
// fused QKV projection split three ways: [b, S, 3·h·d] → columns
// [c, c + h·d)), each read only by the next, brings the Reshape and the
// Slice along: the kernel reads the wide tensor in place
// (AttentionGroup::Source), and the slice is never copied.
#ifndef SHAPESHIFT_PASSES_INTERNAL_ATTENTION_GROUPS_H_
#define SHAPESHIFT_PASSES_INTERNAL_ATTENTION_GROUPS_H_

#include "passes/internal/grouping.h"

namespace shapeshift::passes::internal {

// Merges every attention found among the groups built so far whose head
// dims are at most `max_head_dim` (0: any); returns how many.
int MergeAttentionGroups(Grouping& grouping, int64_t max_head_dim = 0);

}  // namespace shapeshift::passes::internal

#endif  // SHAPESHIFT_PASSES_INTERNAL_ATTENTION_GROUPS_H_
