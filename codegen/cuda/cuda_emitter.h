// CUDA C emission of kernel IR, for NVRTC (nvrtc_compiler.h) and for the
// host emulation (cuda_emulation.h).
//
// The same verified kernel IR that cpu/ JITs is printed as one CUDA C
// `extern "C" __global__` function, so a GPU backend needs no second
// description of the fused patterns. Emission is plain text generation and
// is built everywhere; only compiling it for a GPU needs the CUDA toolkit.
//
// Generated signature:
//   extern "C" __global__ void <entry>(void* const* buffers, const long long* dims)
// `buffers` and `dims` are device pointers with the same meaning as the CPU
// calling convention (cpu/cpu_backend.h). Dims are read from device memory,
// so a launch (or a captured CUDA graph) stays valid when only the values
// in `dims` change; every mapping is grid-stride, so any grid size >= 1
// covers the work, and a grid sized for a larger shape is still correct.
//
// Thread mappings (chosen per kernel from its structure):
//  - kFlat: the body is one loop over [begin, end) with bounds in dims only
//    (elementwise, transposes, copies, concat/slice slabs): one thread per
//    (parallel iteration, inner iteration) pair.
//  - kBlockPerRow: the body reduces top-level accumulators in top-level
//    loops (softmax, layer norm, reductions): one block per parallel
//    iteration ("row"); the threads split every top-level loop (stride
//    blockDim.x) and combine their partial accumulators through a
//    shared-memory tree (blockDim.x must be a power of two <= kMaxBlockThreads).
//  - kThreadPerIteration: anything else (always correct): one thread runs
//    whole parallel iterations. Among them: a loop around data-indexed
//    stores (StoreAt) nested in an inner loop is never spread over threads,
//    since kernel_ir.h keeps such writes disjoint only across parallel
//    iterations and within one innermost loop — ScatterND's loop over its
//    index tuples (parallel extent 1) runs on one thread, in order, so a
//    repeated tuple's last write wins as on the CPU.
//
// Values are DAGs (kernel_ir.h): a node read more than once in a
// statement's value is a local (`const float t7 = ...;`) written once before
// the statement, operands first, so the text is linear in the DAG and each
// node is one evaluation, as in the CPU backend.
// Code that runs between barriers is wrapped in `SS_THREADS { ... } SS_SYNC`
// and values that live across a barrier are `SS_PRIVATE`/`SS_P`: under NVRTC
// these are plain blocks, `__syncthreads()` and registers; the host
// emulation turns each SS_THREADS block into a loop over the block's threads
// and each private value into an array indexed by thread — the meaning of
// the kernel when no two threads of one phase race, which the emulation also
// checks by running the threads in reverse order.
//
// Semantics match the CPU backend: floor division/modulo of indices
// (shapes/sym_expr.h), f32 max/min (and max reductions) propagate NaN
// (ss_fmax/ss_fmin in the prelude, the kernel IR's rule), float->int casts
// truncate, bool is one byte in memory.
#ifndef SHAPESHIFT_CODEGEN_CUDA_CUDA_EMITTER_H_
#define SHAPESHIFT_CODEGEN_CUDA_CUDA_EMITTER_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "codegen/kernel_ir.h"

namespace shapeshift::codegen::cuda {

enum class ThreadMapping : uint8_t { kFlat, kBlockPerRow, kThreadPerIteration };
const char* ThreadMappingName(ThreadMapping mapping);  // "flat" | "block-per-row" | "thread-per-iteration"

// Threads per block of every launch; SS_MAX_BLOCK in the prelude (the size
// of shared and emulated per-thread arrays) and __launch_bounds__.
inline constexpr int kMaxBlockThreads = 256;

struct CudaKernelSource {
  std::string entry;
  std::string function;  // the __global__ function; CudaPrelude() must precede it once per module
  ThreadMapping mapping = ThreadMapping::kThreadPerIteration;
  // Over Kernel::dims: units of parallel work — elements (kFlat), rows
  // (kBlockPerRow), parallel iterations (kThreadPerIteration).
  SymExpr work = 0;
  // kBlockPerRow: the trip count of the first reducing loop (picks the block
  // size); 1 otherwise.
  SymExpr row_length = 1;
};

// The helpers and macros every module starts with (once).
const std::string& CudaPrelude();

// `kernel` must pass Verify().
absl::StatusOr<CudaKernelSource> EmitCudaKernel(const Kernel& kernel, const std::string& entry_name);

// A self-contained translation unit: CudaPrelude() + the function.
absl::StatusOr<std::string> EmitCudaSource(const Kernel& kernel, const std::string& entry_name);

struct LaunchShape {
  uint32_t grid = 1;
  uint32_t block = 1;
};
// Grid and block for `work` units with rows of `row_length` elements;
// the grid is at least 1 and at most kMaxGridBlocks (grid-stride covers the rest).
inline constexpr int64_t kMaxGridBlocks = int64_t{1} << 20;
LaunchShape ChooseLaunch(ThreadMapping mapping, int64_t work, int64_t row_length);

}  // namespace shapeshift::codegen::cuda

#endif  // SHAPESHIFT_CODEGEN_CUDA_CUDA_EMITTER_H_
