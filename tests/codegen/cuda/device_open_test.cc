// Opening the GPU: where there is none (no libcuda.so.1, or cuInit fails),
// the answer is a clear Unavailable error naming what is missing — the CPU
// path is never taken silently. On a machine with a GPU the device
// describes itself.
#include "codegen/cuda/device_api.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace shapeshift::codegen::cuda {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;

TEST(OpenCudaDeviceTest, IsTheGpuOrAClearError) {
  absl::StatusOr<std::shared_ptr<DeviceApi>> device = OpenCudaDevice();
  if (device.ok()) {
    const DeviceInfo& info = (*device)->info();
    EXPECT_FALSE(info.emulated);
    EXPECT_GE(info.compute_capability, 50);
    EXPECT_GT(info.memory_bytes, 0);
    EXPECT_THAT(info.Describe(), HasSubstr("sm_"));
    return;
  }
  EXPECT_EQ(device.status().code(), absl::StatusCode::kUnavailable) << device.status();
  EXPECT_THAT(std::string(device.status().message()),
              AnyOf(HasSubstr("libcuda.so.1"), HasSubstr("cuInit"), HasSubstr("no CUDA backend")));
  // Asking again gives the same answer (the driver is probed once).
  EXPECT_EQ(OpenCudaDevice().status(), device.status());
}

}  // namespace
}  // namespace shapeshift::codegen::cuda
