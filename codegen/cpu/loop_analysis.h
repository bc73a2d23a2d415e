// What the LLVM lowering must know about a kernel's loops before it emits
// them: which innermost loops it can vectorize, how an index moves with a
// loop variable, and which stores may be non-temporal ("streaming").
//
// Why streaming stores: a store to an output row that nothing reads back
// makes the cache fetch each line before overwriting it (read-for-ownership),
// a third memory stream for a kernel that reads one row and writes one.
// vmovntps writes whole lines straight to memory instead, but the next kernel
// then finds the output out of the cache, so the lowering streams only when
// a call's output is large (LoweringOptions::streaming_store_min_bytes).
//
// A store is streamable when it is f32 and contiguous, sits in a vectorizable
// innermost loop at the top of the kernel body whose bounds depend on dims
// only (so the bytes written are known at kernel entry), no earlier statement
// of the iteration stored its buffer (the row would be in the cache by then),
// and no later statement touches the buffer.
//
// Row staging covers the exception: an output row that one iteration writes,
// reads back and rewrites (softmax stores exp(x - max), then rescales it).
// In the streaming version its earlier stores and its loads go to a row on
// the stack, so only the final store reaches memory, and streams. Every
// access must be contiguous from the same row start, in top-level vector
// loops with the same dims-only bounds.
#ifndef SHAPESHIFT_CODEGEN_CPU_LOOP_ANALYSIS_H_
#define SHAPESHIFT_CODEGEN_CPU_LOOP_ANALYSIS_H_

#include <cstdint>
#include <string>

#include "absl/container/btree_map.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "codegen/kernel_ir.h"

namespace shapeshift::codegen::cpu {

// How an index varies with a loop variable.
enum class Access { kUniform, kContiguous, kGather };

Access ClassifyIndex(SymExpr index, const std::string& loop_var);

// An innermost loop is vectorized when its body has no nested loops or
// accumulator declarations and never reads an accumulator it updates;
// `reduced` receives the accumulators it updates and how. Ordered maps here
// and in StreamingPlan: the lowering walks them to emit code, and a hash
// map's order changes with abseil's per-process seed, which made the same
// kernel's object code differ between processes (bundles and the object
// store must be reproducible).
bool CanVectorize(const Stmt& loop, absl::btree_map<std::string, ReduceOp>* reduced);

// Staged rows longer than this (16 KiB: L1-resident) make the call take the
// cached version.
inline constexpr int64_t kStagedRowFloats = 4096;

// A streamed row shorter than this (1 KiB) makes the call take the cached
// version: measured on the 2-core Zen 3 machine, the 0213 transpose of
// [32, 512, 12, 64] (rows of 64 floats) reached 0.40-0.43 of stream-triad
// bandwidth with non-temporal stores and 0.56-0.59 without; rows of 512 floats
// and longer (softmax, GELU, layer norm) gain from streaming.
inline constexpr int64_t kMinStreamedRowFloats = 256;

struct StagedRow {
  SymExpr begin, end;                 // the bounds of every loop touching the row
  const Stmt* final_store = nullptr;  // the one access that goes to the buffer
};

// Statements by address: valid while the analyzed kernel lives unchanged.
struct StreamingPlan {
  absl::flat_hash_set<const Stmt*> streamable;  // each a direct child of a top-level loop
  absl::btree_map<int, StagedRow> staged;      // by buffer index
};

// `kernel` must have passed Verify().
StreamingPlan PlanStreamingStores(const Kernel& kernel);

}  // namespace shapeshift::codegen::cpu

#endif  // SHAPESHIFT_CODEGEN_CPU_LOOP_ANALYSIS_H_
