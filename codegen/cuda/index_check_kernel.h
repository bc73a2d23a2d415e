// The per-request index check (lower::IndexCheckCall) as CUDA C.
//
// On the CPU the check is a host loop before the kernel that reads through
// the indices (runtime/program_run.cc); on a device the indices are in
// device memory (an input, or a value computed by an earlier step), so the
// check is a kernel in the gather kernel's dialect (gather_kernel.h):
// grid-stride, dims read from device memory (a captured CUDA graph stays
// valid when the count changes), the first bad position atomically lowered
// into a status word that the device program reads back with the outputs.
// The kernels that follow clamp their indices, so nothing reads outside a
// buffer before the request fails naming the node, the index and its axis.
//
//   buffers: indices (i64 or i32), status (one long long)
//   dims:    count (indices), indices_are_i32, axes (n), then n axis sizes
// Element i addresses the axis of size dims[3 + i % n], as in
// IndexCheckCall. *status must start at kIndexCheckPassed (the gather
// kernel's kGatherNoBadIndex: they share the status words).
#ifndef SHAPESHIFT_CODEGEN_CUDA_INDEX_CHECK_KERNEL_H_
#define SHAPESHIFT_CODEGEN_CUDA_INDEX_CHECK_KERNEL_H_

#include <cstdint>

#include "codegen/cuda/cuda_emitter.h"
#include "codegen/cuda/gather_kernel.h"

namespace shapeshift::codegen::cuda {

inline constexpr char kIndexCheckEntry[] = "ss_check_indices";
inline constexpr int64_t kIndexCheckPassed = kGatherNoBadIndex;
// Fixed dims before the axis sizes.
inline constexpr int kIndexCheckFixedDims = 3;

// The __global__ function (CudaPrelude() must precede it). Mapping kFlat;
// work = count (the launcher evaluates it natively).
CudaKernelSource IndexCheckKernel();

}  // namespace shapeshift::codegen::cuda

#endif  // SHAPESHIFT_CODEGEN_CUDA_INDEX_CHECK_KERNEL_H_
