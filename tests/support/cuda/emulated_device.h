// EmulatedDevice: codegen::cuda::DeviceApi over host memory, for testing
// device programs (runtime/device/) on machines without a GPU.
//
// Device addresses are host addresses; kernels are the generated CUDA C
// compiled by HostModule (the same text NVRTC compiles); GEMMs compute
// GemmOp's definition directly; a stream runs each operation when it is
// enqueued, except while capturing, when it records it — a graph is the
// recorded list, replayed in order, reading the parameter memory as it is
// at replay time, as a CUDA graph does. Counters let tests check where the
// host<->device copies happen.
#ifndef SHAPESHIFT_TESTS_SUPPORT_CUDA_EMULATED_DEVICE_H_
#define SHAPESHIFT_TESTS_SUPPORT_CUDA_EMULATED_DEVICE_H_

#include <atomic>
#include <cstdint>
#include <memory>

#include "codegen/cuda/device_api.h"

namespace shapeshift::codegen::cuda::testing {

struct EmulatedDeviceOptions {
  bool reverse_threads = false;  // run blocks and threads in decreasing order
  int compute_capability = 90;
};

struct EmulatedDeviceCounters {
  std::atomic<int64_t> host_to_device{0}, device_to_host{0}, device_to_device{0};
  std::atomic<int64_t> launches{0}, gemms{0}, graph_launches{0}, captures{0};
  std::atomic<int64_t> live_allocations{0}, modules{0};
};

// GemmOp's definition on host operands (device addresses are host addresses).
void RunGemmOpOnHost(const GemmOp& op, const GemmShape& shape, const GemmOperands& operands);

class EmulatedDevice : public DeviceApi {
 public:
  explicit EmulatedDevice(EmulatedDeviceOptions options = {});
  ~EmulatedDevice() override;

  const EmulatedDeviceCounters& counters() const { return counters_; }

  const DeviceInfo& info() const override { return info_; }
  absl::StatusOr<DevicePtr> Allocate(size_t bytes) override;
  void Free(DevicePtr address) override;
  absl::StatusOr<StreamHandle> CreateStream() override;
  void DestroyStream(StreamHandle stream) override;
  absl::Status CopyToDevice(DevicePtr dst, const void* src, size_t bytes, StreamHandle stream) override;
  absl::Status CopyToHost(void* dst, DevicePtr src, size_t bytes, StreamHandle stream) override;
  absl::Status CopyOnDevice(DevicePtr dst, DevicePtr src, size_t bytes, StreamHandle stream) override;
  absl::Status Synchronize(StreamHandle stream) override;
  absl::StatusOr<std::unique_ptr<DeviceModule>> LoadModule(const std::string& source,
                                                            const std::string& name) override;
  absl::Status Launch(const DeviceModule& module, const void* function, LaunchShape shape, StreamHandle stream,
                      DevicePtr buffers, DevicePtr dims) override;
  absl::StatusOr<std::unique_ptr<DeviceGemm>> CreateGemm(const GemmOp& op) override;
  size_t gemm_workspace_bytes() const override { return 256; }
  absl::Status BeginCapture(StreamHandle stream) override;
  absl::StatusOr<std::unique_ptr<DeviceGraph>> EndCapture(StreamHandle stream) override;
  absl::Status LaunchGraph(const DeviceGraph& graph, StreamHandle stream) override;

 private:
  EmulatedDeviceOptions options_;
  DeviceInfo info_;
  EmulatedDeviceCounters counters_;
};

}  // namespace shapeshift::codegen::cuda::testing

#endif  // SHAPESHIFT_TESTS_SUPPORT_CUDA_EMULATED_DEVICE_H_
