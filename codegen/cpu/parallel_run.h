// Running a compiled kernel's parallel loop on the OpenMP thread pool.
//
// The range [0, total) is split into one contiguous chunk per thread (static
// partition): kernels are memory-bound row loops of equal cost, so a static
// split has no scheduling overhead and keeps each thread on its own rows.
// libgomp is the runtime oneDNN uses too, so GEMMs and fused kernels share
// one pool of threads instead of oversubscribing the cores.
#ifndef SHAPESHIFT_CODEGEN_CPU_PARALLEL_RUN_H_
#define SHAPESHIFT_CODEGEN_CPU_PARALLEL_RUN_H_

#include <cstdint>

#include "codegen/cpu/cpu_backend.h"

namespace shapeshift::codegen::cpu {

// Below this many multiply-adds (batch*M*K*N) a GEMM runs on the calling
// thread: 2^17 MACs is ~3 us on one core at half its FMA peak, while an
// OpenMP fork/join costs ~1-3 us with spinning workers and far more when they
// sleep or the cores are shared, so two threads cannot win. This covers
// decode steps (M = batch) and the smallest attention products. Every GEMM
// engine (oneDNN's, the skinny one) reads it.
inline constexpr int64_t kSerialGemmMacs = int64_t{1} << 17;

// The team a parallel region over `items` independent pieces of work forks:
// 1 (run on the calling thread, no region) when there is at most one piece or
// the caller is already inside a region, else the whole team
// (omp_get_max_threads()), even when there are fewer pieces than threads.
// libgomp ends the pool's surplus threads when a region forks fewer threads
// than the previous one and creates them again for the next larger region, so
// regions of varying width (a 2-panel GEMM between 4-thread ones) would start
// and stop threads on every request; threads without a piece return at once.
int TeamFor(int64_t items);

// Calls fn(begin, end, buffers, dims) over a static partition of [0, total).
void RunParallel(KernelFn fn, int64_t total, void* const* buffers, const int64_t* dims);

// The same over the kernel's whole parallel loop (its extent for `dims`).
void RunParallel(const CompiledKernel& kernel, void* const* buffers, const int64_t* dims);

// Sets this thread's OpenMP team size (omp_set_num_threads) for its
// lifetime and restores the previous one; `threads` <= 0 changes nothing.
// oneDNN fixes a primitive's thread count when the primitive is created, so
// a compile that must honour a thread limit (Python's intra_op_num_threads)
// holds one of these while it creates and warms its primitives.
class ScopedOmpThreads {
 public:
  explicit ScopedOmpThreads(int threads);
  ~ScopedOmpThreads();
  ScopedOmpThreads(const ScopedOmpThreads&) = delete;
  ScopedOmpThreads& operator=(const ScopedOmpThreads&) = delete;

 private:
  int previous_ = 0;  // 0: nothing to restore
};

}  // namespace shapeshift::codegen::cpu

#endif  // SHAPESHIFT_CODEGEN_CPU_PARALLEL_RUN_H_
