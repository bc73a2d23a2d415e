// The embedding lookup (lower::GatherRowsCall) as CUDA C.
//
// Kept native like on the CPU (runtime/program_run.cc): the kernel IR has no
// data-dependent addressing. It is written in the same dialect as the
// emitter's output (SS_THREADS, grid-stride, dims read from device memory),
// so the host emulation runs it and a CUDA graph that captured it stays
// valid when the index count changes.
//
//   buffers: table, indices (i64 or i32), output, status (one long long)
//   dims:    count (indices), row_bytes, table_rows, indices_are_i32
// Each thread copies one 4-byte word of one row (one byte when row_bytes is
// not a multiple of 4). An index outside [-rows, rows) is not copied and
// atomically lowers *status to its position, so after the launch *status
// is the first bad position (the caller initializes it to kGatherNoBadIndex).
#ifndef SHAPESHIFT_CODEGEN_CUDA_GATHER_KERNEL_H_
#define SHAPESHIFT_CODEGEN_CUDA_GATHER_KERNEL_H_

#include <cstdint>
#include <limits>
#include <string>

#include "codegen/cuda/cuda_emitter.h"

namespace shapeshift::codegen::cuda {

inline constexpr char kGatherRowsEntry[] = "ss_gather_rows";
inline constexpr int64_t kGatherNoBadIndex = std::numeric_limits<int64_t>::max();

// The __global__ function (CudaPrelude() must precede it). Mapping kFlat;
// work = count * GatherWordsPerRow(row_bytes).
CudaKernelSource GatherRowsKernel();
int64_t GatherWordsPerRow(int64_t row_bytes);

}  // namespace shapeshift::codegen::cuda

#endif  // SHAPESHIFT_CODEGEN_CUDA_GATHER_KERNEL_H_
