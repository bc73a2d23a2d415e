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

// Calls fn(begin, end, buffers, dims) over a static partition of [0, total).
void RunParallel(KernelFn fn, int64_t total, void* const* buffers, const int64_t* dims);

// The same over the kernel's whole parallel loop (its extent for `dims`).
void RunParallel(const CompiledKernel& kernel, void* const* buffers, const int64_t* dims);

}  // namespace shapeshift::codegen::cpu

#endif  // SHAPESHIFT_CODEGEN_CPU_PARALLEL_RUN_H_
