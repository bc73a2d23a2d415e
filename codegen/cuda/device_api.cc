#include "codegen/cuda/device_api.h"

#include "absl/strings/str_format.h"

namespace shapeshift::codegen::cuda {

std::string DeviceInfo::Describe() const {
  if (emulated) return absl::StrFormat("%s (host emulation of sm_%d)", name, compute_capability);
  return absl::StrFormat("%s (sm_%d, %d SMs, %.1f GiB)", name, compute_capability, multiprocessors,
                         static_cast<double>(memory_bytes) / (1 << 30));
}

#ifndef SHAPESHIFT_HAVE_CUDA
absl::StatusOr<std::shared_ptr<DeviceApi>> OpenCudaDevice(int ordinal) {
  return absl::UnavailableError(
      "this build of shapeshift has no CUDA backend: the CUDA toolkit was not found when it was built "
      "(install it, e.g. at /usr/local/cuda, and rebuild)");
}
#endif

}  // namespace shapeshift::codegen::cuda
