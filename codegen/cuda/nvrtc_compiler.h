// NVRTC: CUDA C source (cuda_emitter.h) to PTX or to a cubin, in process.
//
// A cubin is what a device program loads (no JIT at load time, and ptxas's
// register/spill report comes with it); PTX is the portable fallback for a
// GPU newer than this NVRTC knows. Neither needs a GPU, so tests compile
// every kernel kind for sm_80 and sm_90 on machines without one. Built only
// when CMake found the CUDA toolkit (SHAPESHIFT_HAVE_CUDA is then defined
// for users of shapeshift_codegen).
#ifndef SHAPESHIFT_CODEGEN_CUDA_NVRTC_COMPILER_H_
#define SHAPESHIFT_CODEGEN_CUDA_NVRTC_COMPILER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "codegen/cuda/ptxas_report.h"

namespace shapeshift::codegen::cuda {

struct NvrtcOptions {
  std::string architecture = "compute_90";  // virtual architecture of the PTX
};

// Compiles `source` (named `name` in messages) to PTX; a compile error
// returns InvalidArgument with NVRTC's log.
absl::StatusOr<std::string> CompileToPtx(const std::string& source, const std::string& name,
                                         const NvrtcOptions& options = {});

struct Cubin {
  std::string image;                 // the ELF the driver loads (cuModuleLoadData)
  std::string arch;                  // "sm_90"
  std::vector<PtxasReport> reports;  // one per entry, from `-Xptxas -v`
  std::string log;                   // NVRTC's full log
};

// Compiles `source` to a cubin for the real architecture `arch` ("sm_80",
// "sm_90"); errors as CompileToPtx.
absl::StatusOr<Cubin> CompileToCubin(const std::string& source, const std::string& name, const std::string& arch);

// The real architectures this NVRTC can emit cubins for ("sm_75", ...).
std::vector<std::string> NvrtcRealArchitectures();
std::string NvrtcVersion();  // "13.0"

}  // namespace shapeshift::codegen::cuda

#endif  // SHAPESHIFT_CODEGEN_CUDA_NVRTC_COMPILER_H_
