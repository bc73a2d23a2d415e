// Internal to codegen/cuda (toolkit builds only): the CUDA driver API and
// cuBLASLt, resolved from libcuda.so.1 and libcublasLt.so.N with dlopen.
//
// Why dlopen instead of linking: a binary linked against libcuda needs the
// NVIDIA driver just to start, and the CPU path must run on machines without
// one (CI, most machines here). The function types come from the toolkit's
// headers (decltype of the declared function), and the symbol names from
// the same macros the headers use (cuMemAlloc -> cuMemAlloc_v2), so a
// mismatch is a compile error, not a crash.
#ifndef SHAPESHIFT_CODEGEN_CUDA_DRIVER_LIBRARY_H_
#define SHAPESHIFT_CODEGEN_CUDA_DRIVER_LIBRARY_H_

#include <cublasLt.h>
#include <cuda.h>

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace shapeshift::codegen::cuda::internal {

#define SS_CUDA_DRIVER_FUNCTIONS(X)                                                                   \
  X(cuInit) X(cuGetErrorName) X(cuGetErrorString) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName) \
  X(cuDeviceGetAttribute) X(cuDeviceTotalMem) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease)  \
  X(cuCtxSetCurrent) X(cuMemAlloc) X(cuMemFree) X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync)               \
  X(cuMemcpyDtoDAsync) X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize) X(cuModuleLoadData)  \
  X(cuModuleUnload) X(cuModuleGetFunction) X(cuLaunchKernel) X(cuStreamBeginCapture)                    \
  X(cuStreamEndCapture) X(cuGraphInstantiate) X(cuGraphLaunch) X(cuGraphExecDestroy) X(cuGraphDestroy)  \
  X(cuGraphGetNodes)

#define SS_CUBLASLT_FUNCTIONS(X)                                                                        \
  X(cublasLtCreate) X(cublasLtDestroy) X(cublasLtGetStatusString) X(cublasLtMatmulDescCreate)             \
  X(cublasLtMatmulDescDestroy) X(cublasLtMatmulDescSetAttribute) X(cublasLtMatrixLayoutCreate)            \
  X(cublasLtMatrixLayoutDestroy) X(cublasLtMatrixLayoutSetAttribute) X(cublasLtMatmulPreferenceCreate)    \
  X(cublasLtMatmulPreferenceDestroy) X(cublasLtMatmulPreferenceSetAttribute)                              \
  X(cublasLtMatmulAlgoGetHeuristic) X(cublasLtMatmul)

#define SS_DECLARE_FUNCTION(name) decltype(&::name) name = nullptr;

struct DriverFunctions {
  SS_CUDA_DRIVER_FUNCTIONS(SS_DECLARE_FUNCTION)
};
struct CublasLtFunctions {
  SS_CUBLASLT_FUNCTIONS(SS_DECLARE_FUNCTION)
};

#undef SS_DECLARE_FUNCTION

// Loaded once per process; the error says which library or symbol is
// missing and what that means for the user.
absl::StatusOr<const DriverFunctions*> Driver();
absl::StatusOr<const CublasLtFunctions*> CublasLt();

// "cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory)"; OK for CUDA_SUCCESS.
absl::Status CuStatus(const DriverFunctions& driver, CUresult result, const std::string& what);
absl::Status CublasStatus(const CublasLtFunctions& lt, cublasStatus_t result, const std::string& what);

}  // namespace shapeshift::codegen::cuda::internal

#endif  // SHAPESHIFT_CODEGEN_CUDA_DRIVER_LIBRARY_H_
