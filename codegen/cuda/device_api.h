// DeviceApi: the few GPU operations a device program needs — memory,
// streams, copies, modules of generated kernels, cuBLASLt GEMMs and CUDA
// graphs — behind one interface.
//
// Why an interface: the real implementation (driver_device.h: the CUDA
// driver API loaded with dlopen, NVRTC cubins, cuBLASLt) can only run on a
// machine with an NVIDIA GPU, while the runtime's device program (arena
// placement, parameter blocks, graph buckets and their padding) is logic
// that must be tested on every machine. The tests' host-emulated device
// (tests/support/cuda/) implements the same interface over host memory,
// running the same generated CUDA C through cuda_emulation.h.
//
// Addresses are device addresses (CUdeviceptr) in a uint64_t; streams are
// CUstream handles (also valid as cudaStream_t). Every call is stream
// ordered; Synchronize waits. Errors are values naming the call and the
// driver's message.
#ifndef SHAPESHIFT_CODEGEN_CUDA_DEVICE_API_H_
#define SHAPESHIFT_CODEGEN_CUDA_DEVICE_API_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "codegen/cuda/cuda_emitter.h"
#include "codegen/cuda/gemm_plan.h"
#include "codegen/cuda/ptxas_report.h"

namespace shapeshift::codegen::cuda {

using DevicePtr = uint64_t;
using StreamHandle = void*;

struct DeviceInfo {
  std::string name;            // "NVIDIA H200"
  int compute_capability = 0;  // major * 10 + minor: 90
  int64_t memory_bytes = 0;
  int multiprocessors = 0;
  bool emulated = false;       // the host emulation, not a GPU
  std::string Describe() const;  // "NVIDIA H200 (sm_90, 132 SMs, 139.8 GiB)"
};

// A loaded module of generated kernels.
class DeviceModule {
 public:
  virtual ~DeviceModule() = default;
  // Opaque handle of `entry` for Launch; NotFound when the module lacks it.
  virtual absl::StatusOr<const void*> Function(const std::string& entry) const = 0;
  // ptxas's report per entry (empty for the host emulation).
  virtual const std::vector<PtxasReport>& reports() const = 0;
  virtual const std::string& arch() const = 0;  // "sm_90", or "host emulation"
};

struct GemmShape {
  int64_t batch = 1;  // ignored unless GemmOp::batched
  int64_t m = 0, k = 0, n = 0;
};
// Row-major device operands of GemmOp: A [batch, m, k], B [batch, k, n]
// (or [batch, n, k] with transpose_b), R and D [batch, m, n], bias [n].
struct GemmOperands {
  DevicePtr a = 0, b = 0, residual = 0, bias = 0, d = 0;
};

class DeviceGemm {
 public:
  virtual ~DeviceGemm() = default;
  // Enqueues D = GemmOp(A, B, ...) for `shape`. An empty shape is a no-op.
  virtual absl::Status Run(const GemmShape& shape, const GemmOperands& operands, StreamHandle stream,
                           DevicePtr workspace, size_t workspace_bytes) = 0;
};

// An instantiated CUDA graph, replayed with DeviceApi::LaunchGraph.
class DeviceGraph {
 public:
  virtual ~DeviceGraph() = default;
  virtual int64_t nodes() const = 0;
};

class DeviceApi {
 public:
  virtual ~DeviceApi() = default;
  virtual const DeviceInfo& info() const = 0;

  virtual absl::StatusOr<DevicePtr> Allocate(size_t bytes) = 0;  // 256-byte aligned
  virtual void Free(DevicePtr address) = 0;
  virtual absl::StatusOr<StreamHandle> CreateStream() = 0;
  virtual void DestroyStream(StreamHandle stream) = 0;
  virtual absl::Status CopyToDevice(DevicePtr dst, const void* src, size_t bytes, StreamHandle stream) = 0;
  virtual absl::Status CopyToHost(void* dst, DevicePtr src, size_t bytes, StreamHandle stream) = 0;
  virtual absl::Status CopyOnDevice(DevicePtr dst, DevicePtr src, size_t bytes, StreamHandle stream) = 0;
  virtual absl::Status Synchronize(StreamHandle stream) = 0;

  // Compiles a whole module of CUDA C (CudaPrelude() included) for this
  // device and loads it; `name` appears in errors.
  virtual absl::StatusOr<std::unique_ptr<DeviceModule>> LoadModule(const std::string& source,
                                                                    const std::string& name) = 0;
  // Launches `function` (from `module`) with the emitter's signature:
  // `buffers` and `dims` are device addresses of the pointer and dims arrays.
  virtual absl::Status Launch(const DeviceModule& module, const void* function, LaunchShape shape,
                              StreamHandle stream, DevicePtr buffers, DevicePtr dims) = 0;

  virtual absl::StatusOr<std::unique_ptr<DeviceGemm>> CreateGemm(const GemmOp& op) = 0;
  virtual size_t gemm_workspace_bytes() const = 0;  // per stream

  // Stream capture: the work enqueued between Begin and End is recorded,
  // not run, and End returns it instantiated.
  virtual absl::Status BeginCapture(StreamHandle stream) = 0;
  virtual absl::StatusOr<std::unique_ptr<DeviceGraph>> EndCapture(StreamHandle stream) = 0;
  virtual absl::Status LaunchGraph(const DeviceGraph& graph, StreamHandle stream) = 0;
};

// The GPU `ordinal` through the CUDA driver: libcuda.so.1 and cuBLASLt are
// loaded at run time (dlopen), so binaries run on machines without a
// driver; there this fails with a message saying so. Unavailable in builds
// without the CUDA toolkit (SHAPESHIFT_HAVE_CUDA undefined).
absl::StatusOr<std::shared_ptr<DeviceApi>> OpenCudaDevice(int ordinal = 0);

}  // namespace shapeshift::codegen::cuda

#endif  // SHAPESHIFT_CODEGEN_CUDA_DEVICE_API_H_
