// Internal to codegen/cuda (toolkit builds only): DeviceApi on a real GPU —
// the CUDA driver API (primary context of one device), NVRTC cubins for the
// device's compute capability, cuBLASLt GEMMs (driver_gemm.cc).
// OpenCudaDevice (device_api.h) is the public way in.
#ifndef SHAPESHIFT_CODEGEN_CUDA_DRIVER_DEVICE_H_
#define SHAPESHIFT_CODEGEN_CUDA_DRIVER_DEVICE_H_

#include <memory>

#include "absl/status/statusor.h"
#include "codegen/cuda/device_api.h"
#include "codegen/cuda/driver_library.h"

namespace shapeshift::codegen::cuda::internal {

// GemmOp on cuBLASLt; `context` must be current on the calling thread.
absl::StatusOr<std::unique_ptr<DeviceGemm>> CreateCublasLtGemm(const DriverFunctions& driver, CUcontext context,
                                                               const GemmOp& op);

// The cubin architecture NVRTC should target for compute capability `cc`
// (e.g. 90 -> "sm_90"): the newest real architecture NVRTC supports that
// is <= cc, or "" when there is none (then PTX for compute_<cc> is loaded).
std::string CubinArchitectureFor(int cc);

}  // namespace shapeshift::codegen::cuda::internal

#endif  // SHAPESHIFT_CODEGEN_CUDA_DRIVER_DEVICE_H_
