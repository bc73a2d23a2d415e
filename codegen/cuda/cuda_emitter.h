// CUDA C emission of kernel IR, for NVRTC (nvrtc_compiler.h).
//
// The same verified kernel IR that cpu/ JITs is printed as one CUDA C
// `extern "C" __global__` function, so a GPU backend needs no second
// description of the fused patterns. Emission is plain text generation and
// is built everywhere; only compiling it needs the CUDA toolkit.
//
// Generated signature and launch contract:
//   extern "C" __global__ void <entry>(void* const* buffers, const long long* dims)
// `buffers` and `dims` are device pointers with the same meaning as the CPU
// calling convention (cpu/cpu_backend.h). Each GPU thread runs whole
// iterations of the kernel's parallel loop, grid-stride, so any grid and
// block size cover [0, parallel_extent); inner loops run sequentially in the
// thread. This mapping is correct for every kernel the IR can express; a
// block-per-row mapping with cooperative reductions is the step that makes
// row kernels (softmax, layer norm) fast on a GPU.
//
// Semantics match the CPU backend: floor division/modulo of indices
// (shapes/sym_expr.h), f32 max/min ignore NaN (fmaxf), float→int casts
// truncate, bool is one byte in memory.
#ifndef SHAPESHIFT_CODEGEN_CUDA_CUDA_EMITTER_H_
#define SHAPESHIFT_CODEGEN_CUDA_CUDA_EMITTER_H_

#include <string>

#include "absl/status/statusor.h"
#include "codegen/kernel_ir.h"

namespace shapeshift::codegen::cuda {

// CUDA C source for `kernel` (which must pass Verify()), entry `entry_name`.
absl::StatusOr<std::string> EmitCudaSource(const Kernel& kernel, const std::string& entry_name);

}  // namespace shapeshift::codegen::cuda

#endif  // SHAPESHIFT_CODEGEN_CUDA_CUDA_EMITTER_H_
