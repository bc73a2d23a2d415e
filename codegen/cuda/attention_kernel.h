// Fused attention (lower::AttentionCall) as CUDA C: softmax(scale·Q·Kᵀ +
// mask)·V per query tile with an online softmax, no [S, T] scores in
// memory — the device counterpart of codegen/cpu/fused_attention.h, with the
// same semantics (codegen/attention_args.h states them; in short: an additive mask
// broadcast through strides, or a causal band with a fill and an optional
// window; NaN rows, or 0 with nan_to_zero, for a row that saw a NaN or +inf
// score or only -inf; grouped-query heads: query head h reads key/value
// head h / (heads / kv_heads)).
//
// Written in the gather kernel's dialect (gather_kernel.h): dims read from
// device memory, the work items visited grid-stride, so a launch (or a CUDA
// graph captured at a bucket's upper bound) stays correct when the sizes
// change, and the host emulation (cuda_emulation.h) runs the same text.
//
// One block per work item (mapping kBlockPerRow; any power-of-two block of
// 32..256 threads): item (b * heads + h) * tiles + t covers query rows
// [t * R, min(t * R + R, S)) of (b, h), R = min(kAttentionTileRows, S).
// Per item, in shared memory: Q's R rows (read once), the output
// accumulators o[R][dv], and per key chunk of kAttentionKeyChunk keys the
// scores. Per chunk, four phases between barriers: the scores y (one
// thread per (row, key): a dot product over d, K read in place); each row's
// running maximum, rescale factor alpha and bad flag (one thread per row);
// p = exp(y - max) (one thread per (row, key)); o = o·alpha + P·V and
// l = l·alpha + Σp (one thread per (row, output column), V read in place,
// coalesced over the columns). Every value is computed by one thread in a
// fixed order, so the result does not depend on the block size's thread
// order (the emulation checks it by running the threads in reverse).
// Every key is visited, causal or not (no block skipping as the CPU core
// does): each output element's arithmetic is the graph's softmax and matmul,
// summed in chunk order.
//
//   buffers: q, k, v, mask (null: none), out (AttentionBuffers)
//   dims:    AttentionDimWords' order
#ifndef SHAPESHIFT_CODEGEN_CUDA_ATTENTION_KERNEL_H_
#define SHAPESHIFT_CODEGEN_CUDA_ATTENTION_KERNEL_H_

#include <array>
#include <cstdint>

#include "absl/status/status.h"
#include "codegen/attention_args.h"
#include "codegen/cuda/cuda_emitter.h"

namespace shapeshift::codegen::cuda {

inline constexpr char kAttentionEntry[] = "ss_fused_attention";
// The largest head dims (Q·K's d and V's dv) the kernel's shared memory
// holds; fusion plans no attention group with larger ones for a CUDA
// program (it stays two GEMMs and a softmax there).
inline constexpr int64_t kAttentionMaxHeadDim = 256;
inline constexpr int64_t kAttentionTileRows = 16;
inline constexpr int64_t kAttentionKeyChunk = 32;
// Threads per block the launcher asks for (ChooseLaunch's row length).
inline constexpr int64_t kAttentionThreads = 128;

// The dims words, in the order the kernel reads them: sizes, the five
// operands' {batch, head, row} strides, the mask's column stride, whether
// there is a mask, causal, window, fill and scale (as their bits),
// nan_to_zero. The data pointers (device addresses) are the buffers.
inline constexpr int kAttentionDimWords = 29;
std::array<long long, kAttentionDimWords> AttentionDimWords(const AttentionArgs& args);
// q, k, v, mask (null: none), out.
std::array<float*, 5> AttentionBuffers(const AttentionArgs& args);

// Work items (blocks' worth of work): batch * heads * query tiles.
int64_t AttentionItems(const AttentionArgs& args);

// CheckAttentionArgs (the CPU core's check, codegen/attention_args.h) and
// head dims at most kAttentionMaxHeadDim; INVALID_ARGUMENT naming the field.
absl::Status CheckCudaAttention(const AttentionArgs& args);

// The __global__ function (CudaPrelude() must precede it). Mapping
// kBlockPerRow, work = items, row_length = kAttentionThreads (the launcher
// evaluates both natively: AttentionItems).
CudaKernelSource AttentionKernel();

}  // namespace shapeshift::codegen::cuda

#endif  // SHAPESHIFT_CODEGEN_CUDA_ATTENTION_KERNEL_H_
