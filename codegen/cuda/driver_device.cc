// DeviceApi on a real GPU through the CUDA driver API (see driver_device.h).
// Nothing here has run on a GPU yet in this repository's history: the
// machines that built it had the toolkit but no driver (codegen/cuda/README.md).
#include "codegen/cuda/driver_device.h"

#include <algorithm>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "codegen/cuda/nvrtc_compiler.h"

namespace shapeshift::codegen::cuda {
namespace internal {
namespace {

class DriverModule : public DeviceModule {
 public:
  DriverModule(const DriverFunctions& driver, CUcontext context, CUmodule module, std::string arch,
               std::vector<PtxasReport> reports)
      : driver_(driver), context_(context), module_(module), arch_(std::move(arch)), reports_(std::move(reports)) {}
  ~DriverModule() override {
    driver_.cuCtxSetCurrent(context_);
    driver_.cuModuleUnload(module_);
  }

  absl::StatusOr<const void*> Function(const std::string& entry) const override {
    absl::MutexLock lock(&mu_);
    if (auto it = functions_.find(entry); it != functions_.end()) return it->second;
    CUfunction fn = nullptr;
    CUresult r = driver_.cuModuleGetFunction(&fn, module_, entry.c_str());
    if (r == CUDA_ERROR_NOT_FOUND) return absl::NotFoundError(absl::StrCat("the module has no kernel '", entry, "'"));
    if (absl::Status s = CuStatus(driver_, r, absl::StrCat("cuModuleGetFunction(", entry, ")")); !s.ok()) return s;
    functions_[entry] = fn;
    return static_cast<const void*>(fn);
  }
  const std::vector<PtxasReport>& reports() const override { return reports_; }
  const std::string& arch() const override { return arch_; }

 private:
  const DriverFunctions& driver_;
  CUcontext context_;
  CUmodule module_;
  std::string arch_;
  std::vector<PtxasReport> reports_;
  mutable absl::Mutex mu_;
  mutable absl::flat_hash_map<std::string, const void*> functions_ ABSL_GUARDED_BY(mu_);
};

class DriverGraph : public DeviceGraph {
 public:
  DriverGraph(const DriverFunctions& driver, CUcontext context, CUgraph graph, CUgraphExec exec, int64_t nodes)
      : driver_(driver), context_(context), graph_(graph), exec_(exec), nodes_(nodes) {}
  ~DriverGraph() override {
    driver_.cuCtxSetCurrent(context_);
    driver_.cuGraphExecDestroy(exec_);
    driver_.cuGraphDestroy(graph_);
  }
  int64_t nodes() const override { return nodes_; }
  CUgraphExec exec() const { return exec_; }

 private:
  const DriverFunctions& driver_;
  CUcontext context_;
  CUgraph graph_;
  CUgraphExec exec_;
  int64_t nodes_;
};

class DriverDevice : public DeviceApi {
 public:
  DriverDevice(const DriverFunctions& driver, CUdevice device, CUcontext context, DeviceInfo info)
      : driver_(driver), device_(device), context_(context), info_(std::move(info)) {}
  ~DriverDevice() override { driver_.cuDevicePrimaryCtxRelease(device_); }

  const DeviceInfo& info() const override { return info_; }

  absl::StatusOr<DevicePtr> Allocate(size_t bytes) override {
    if (absl::Status s = Bind(); !s.ok()) return s;
    CUdeviceptr p = 0;
    if (absl::Status s = Check(driver_.cuMemAlloc(&p, std::max<size_t>(bytes, 1)),
                               absl::StrCat("cuMemAlloc(", bytes, " bytes)"));
        !s.ok()) {
      return s;
    }
    return static_cast<DevicePtr>(p);
  }
  void Free(DevicePtr address) override {
    if (address == 0 || !Bind().ok()) return;
    driver_.cuMemFree(static_cast<CUdeviceptr>(address));
  }
  absl::StatusOr<StreamHandle> CreateStream() override {
    if (absl::Status s = Bind(); !s.ok()) return s;
    CUstream stream = nullptr;
    if (absl::Status s = Check(driver_.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate"); !s.ok()) {
      return s;
    }
    return static_cast<StreamHandle>(stream);
  }
  void DestroyStream(StreamHandle stream) override {
    if (stream != nullptr && Bind().ok()) driver_.cuStreamDestroy(static_cast<CUstream>(stream));
  }
  absl::Status CopyToDevice(DevicePtr dst, const void* src, size_t bytes, StreamHandle stream) override {
    if (bytes == 0) return absl::OkStatus();
    if (absl::Status s = Bind(); !s.ok()) return s;
    return Check(driver_.cuMemcpyHtoDAsync(dst, src, bytes, static_cast<CUstream>(stream)), "cuMemcpyHtoDAsync");
  }
  absl::Status CopyToHost(void* dst, DevicePtr src, size_t bytes, StreamHandle stream) override {
    if (bytes == 0) return absl::OkStatus();
    if (absl::Status s = Bind(); !s.ok()) return s;
    return Check(driver_.cuMemcpyDtoHAsync(dst, src, bytes, static_cast<CUstream>(stream)), "cuMemcpyDtoHAsync");
  }
  absl::Status CopyOnDevice(DevicePtr dst, DevicePtr src, size_t bytes, StreamHandle stream) override {
    if (bytes == 0) return absl::OkStatus();
    if (absl::Status s = Bind(); !s.ok()) return s;
    return Check(driver_.cuMemcpyDtoDAsync(dst, src, bytes, static_cast<CUstream>(stream)), "cuMemcpyDtoDAsync");
  }
  absl::Status Synchronize(StreamHandle stream) override {
    if (absl::Status s = Bind(); !s.ok()) return s;
    return Check(driver_.cuStreamSynchronize(static_cast<CUstream>(stream)), "cuStreamSynchronize");
  }

  absl::StatusOr<std::unique_ptr<DeviceModule>> LoadModule(const std::string& source,
                                                            const std::string& name) override {
    if (absl::Status s = Bind(); !s.ok()) return s;
    std::string image, arch;
    std::vector<PtxasReport> reports;
    std::string cubin_arch = CubinArchitectureFor(info_.compute_capability);
    if (!cubin_arch.empty()) {
      absl::StatusOr<Cubin> cubin = CompileToCubin(source, name, cubin_arch);
      if (!cubin.ok()) return cubin.status();
      image = std::move(cubin->image);
      arch = cubin->arch;
      reports = std::move(cubin->reports);
    } else {
      // A GPU newer than this NVRTC: PTX, JIT-compiled by the driver.
      NvrtcOptions options;
      options.architecture = absl::StrCat("compute_", info_.compute_capability);
      absl::StatusOr<std::string> ptx = CompileToPtx(source, name, options);
      if (!ptx.ok()) return ptx.status();
      image = std::move(*ptx);
      arch = options.architecture + " (PTX)";
    }
    CUmodule module = nullptr;
    if (absl::Status s = Check(driver_.cuModuleLoadData(&module, image.data()), absl::StrCat("loading module ", name));
        !s.ok()) {
      return s;
    }
    return std::make_unique<DriverModule>(driver_, context_, module, std::move(arch), std::move(reports));
  }

  absl::Status Launch(const DeviceModule& module, const void* function, LaunchShape shape, StreamHandle stream,
                      DevicePtr buffers, DevicePtr dims) override {
    if (absl::Status s = Bind(); !s.ok()) return s;
    CUdeviceptr args[2] = {buffers, dims};
    void* params[2] = {&args[0], &args[1]};
    return Check(driver_.cuLaunchKernel(static_cast<CUfunction>(const_cast<void*>(function)), shape.grid, 1, 1,
                                        shape.block, 1, 1, 0, static_cast<CUstream>(stream), params, nullptr),
                 "cuLaunchKernel");
  }

  absl::StatusOr<std::unique_ptr<DeviceGemm>> CreateGemm(const GemmOp& op) override {
    if (absl::Status s = Bind(); !s.ok()) return s;
    return CreateCublasLtGemm(driver_, context_, op);
  }
  // cuBLASLt's recommendation for Hopper is 32 MiB; smaller GPUs take less.
  size_t gemm_workspace_bytes() const override { return size_t{32} << 20; }

  absl::Status BeginCapture(StreamHandle stream) override {
    if (absl::Status s = Bind(); !s.ok()) return s;
    return Check(driver_.cuStreamBeginCapture(static_cast<CUstream>(stream), CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
                 "cuStreamBeginCapture");
  }
  absl::StatusOr<std::unique_ptr<DeviceGraph>> EndCapture(StreamHandle stream) override {
    if (absl::Status s = Bind(); !s.ok()) return s;
    CUgraph graph = nullptr;
    if (absl::Status s = Check(driver_.cuStreamEndCapture(static_cast<CUstream>(stream), &graph), "cuStreamEndCapture");
        !s.ok()) {
      return s;
    }
    size_t nodes = 0;
    driver_.cuGraphGetNodes(graph, nullptr, &nodes);
    CUgraphExec exec = nullptr;
    if (absl::Status s = Check(driver_.cuGraphInstantiate(&exec, graph, 0), "cuGraphInstantiate"); !s.ok()) {
      driver_.cuGraphDestroy(graph);
      return s;
    }
    return std::make_unique<DriverGraph>(driver_, context_, graph, exec, static_cast<int64_t>(nodes));
  }
  absl::Status LaunchGraph(const DeviceGraph& graph, StreamHandle stream) override {
    if (absl::Status s = Bind(); !s.ok()) return s;
    return Check(driver_.cuGraphLaunch(static_cast<const DriverGraph&>(graph).exec(), static_cast<CUstream>(stream)),
                 "cuGraphLaunch");
  }

 private:
  // The context is current per thread; requests may come from any thread.
  absl::Status Bind() { return Check(driver_.cuCtxSetCurrent(context_), "cuCtxSetCurrent"); }
  absl::Status Check(CUresult r, const std::string& what) { return CuStatus(driver_, r, what); }

  const DriverFunctions& driver_;
  CUdevice device_;
  CUcontext context_;
  DeviceInfo info_;
};

}  // namespace

std::string CubinArchitectureFor(int cc) {
  std::string best;
  int best_cc = 0;
  for (const std::string& arch : NvrtcRealArchitectures()) {
    int a = 0;
    if (!absl::SimpleAtoi(absl::string_view(arch).substr(3), &a)) continue;
    // A cubin runs on its major version's later minors, never across majors.
    if (a <= cc && a / 10 == cc / 10 && a > best_cc) {
      best = arch;
      best_cc = a;
    }
  }
  return best;
}

}  // namespace internal

absl::StatusOr<std::shared_ptr<DeviceApi>> OpenCudaDevice(int ordinal) {
  using internal::CuStatus;
  absl::StatusOr<const internal::DriverFunctions*> loaded = internal::Driver();
  if (!loaded.ok()) return loaded.status();
  const internal::DriverFunctions& driver = **loaded;
  if (absl::Status s = CuStatus(driver, driver.cuInit(0), "cuInit"); !s.ok()) {
    return absl::UnavailableError(absl::StrCat(s.message(), ": no usable NVIDIA GPU for --device cuda"));
  }
  int count = 0;
  if (absl::Status s = CuStatus(driver, driver.cuDeviceGetCount(&count), "cuDeviceGetCount"); !s.ok()) return s;
  if (ordinal < 0 || ordinal >= count) {
    return absl::UnavailableError(absl::StrCat("CUDA device ", ordinal, " does not exist (", count, " found)"));
  }
  CUdevice device = 0;
  if (absl::Status s = CuStatus(driver, driver.cuDeviceGet(&device, ordinal), "cuDeviceGet"); !s.ok()) return s;
  DeviceInfo info;
  char name[256] = {};
  driver.cuDeviceGetName(name, sizeof name, device);
  info.name = name;
  int major = 0, minor = 0, sms = 0;
  driver.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
  driver.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
  driver.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device);
  info.compute_capability = major * 10 + minor;
  info.multiprocessors = sms;
  size_t memory = 0;
  driver.cuDeviceTotalMem(&memory, device);
  info.memory_bytes = static_cast<int64_t>(memory);
  CUcontext context = nullptr;
  if (absl::Status s = CuStatus(driver, driver.cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CuStatus(driver, driver.cuCtxSetCurrent(context), "cuCtxSetCurrent"); !s.ok()) {
    driver.cuDevicePrimaryCtxRelease(device);
    return s;
  }
  return std::shared_ptr<DeviceApi>(std::make_shared<internal::DriverDevice>(driver, device, context, std::move(info)));
}

}  // namespace shapeshift::codegen::cuda
