// NVRTC: CUDA C source (cuda_emitter.h) to PTX, in process.
//
// PTX is the portable artifact: the driver JITs it for the GPU at load time,
// so compiling needs no GPU (tests run on machines without one). Built only
// when CMake found the CUDA toolkit (SHAPESHIFT_HAVE_CUDA is then defined
// for users of shapeshift_codegen).
#ifndef SHAPESHIFT_CODEGEN_CUDA_NVRTC_COMPILER_H_
#define SHAPESHIFT_CODEGEN_CUDA_NVRTC_COMPILER_H_

#include <string>

#include "absl/status/statusor.h"

namespace shapeshift::codegen::cuda {

struct NvrtcOptions {
  std::string architecture = "compute_90";  // virtual architecture of the PTX
};

// Compiles `source` (named `name` in messages) to PTX; a compile error
// returns InvalidArgument with NVRTC's log.
absl::StatusOr<std::string> CompileToPtx(const std::string& source, const std::string& name,
                                         const NvrtcOptions& options = {});

}  // namespace shapeshift::codegen::cuda

#endif  // SHAPESHIFT_CODEGEN_CUDA_NVRTC_COMPILER_H_
