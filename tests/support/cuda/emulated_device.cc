#include "tests/support/cuda/emulated_device.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/support/cuda/host_module.h"

namespace shapeshift::codegen::cuda::testing {
namespace {

using Op = std::function<absl::Status()>;

struct Stream {
  bool capturing = false;
  std::vector<Op> recorded;
};

// Runs `op` now, or records it while the stream is capturing.
absl::Status Enqueue(StreamHandle handle, Op op) {
  auto* stream = static_cast<Stream*>(handle);
  if (stream == nullptr) return absl::InvalidArgumentError("null stream");
  if (stream->capturing) {
    stream->recorded.push_back(std::move(op));
    return absl::OkStatus();
  }
  return op();
}

class EmulatedModule : public DeviceModule {
 public:
  explicit EmulatedModule(std::shared_ptr<const HostModule> module) : module_(std::move(module)) {}
  absl::StatusOr<const void*> Function(const std::string& entry) const override {
    absl::StatusOr<void*> fn = module_->Entry(entry);
    if (!fn.ok()) return fn.status();
    return static_cast<const void*>(*fn);
  }
  const std::vector<PtxasReport>& reports() const override { return reports_; }
  const std::string& arch() const override { return arch_; }
  const HostModule& host() const { return *module_; }

 private:
  std::shared_ptr<const HostModule> module_;
  std::vector<PtxasReport> reports_;
  std::string arch_ = "host emulation";
};

class EmulatedGraph : public DeviceGraph {
 public:
  explicit EmulatedGraph(std::vector<Op> ops) : ops_(std::move(ops)) {}
  int64_t nodes() const override { return static_cast<int64_t>(ops_.size()); }
  const std::vector<Op>& ops() const { return ops_; }

 private:
  std::vector<Op> ops_;
};

float GeluTanh(float v) {
  // The kernel IR's formula (codegen/kernel_library.cc), as cuBLASLt's epilogue.
  const float inner = static_cast<float>(std::sqrt(2.0 / M_PI)) * (v + 0.044715f * v * v * v);
  return 0.5f * v * (1.0f + std::tanh(inner));
}

}  // namespace

void RunGemmOpOnHost(const GemmOp& op, const GemmShape& shape, const GemmOperands& ops) {
  const int64_t batch = op.batched ? shape.batch : 1, m = shape.m, k = shape.k, n = shape.n;
  const auto* a = reinterpret_cast<const float*>(ops.a);
  const auto* b = reinterpret_cast<const float*>(ops.b);
  const auto* r = reinterpret_cast<const float*>(ops.residual);
  const auto* bias = reinterpret_cast<const float*>(ops.bias);
  auto* d = reinterpret_cast<float*>(ops.d);
  for (int64_t q = 0; q < batch; ++q) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t l = 0; l < k; ++l) {
          double bv = op.transpose_b ? b[(q * n + j) * k + l] : b[(q * k + l) * n + j];
          acc += static_cast<double>(a[(q * m + i) * k + l]) * bv;
        }
        float v = op.alpha * static_cast<float>(acc);
        if (op.residual_as_c) v += r[(q * m + i) * n + j];
        if (op.bias_epilogue) v += bias[j];
        if (op.gelu_tanh_epilogue) v = GeluTanh(v);
        d[(q * m + i) * n + j] = v;
      }
    }
  }
}

namespace {

class EmulatedGemm : public DeviceGemm {
 public:
  EmulatedGemm(const GemmOp& op, EmulatedDeviceCounters* counters) : op_(op), counters_(counters) {}
  absl::Status Run(const GemmShape& shape, const GemmOperands& ops, StreamHandle stream, DevicePtr workspace,
                   size_t workspace_bytes) override {
    GemmOp op = op_;
    EmulatedDeviceCounters* counters = counters_;
    return Enqueue(stream, [op, shape, ops, counters]() {
      ++counters->gemms;
      RunGemmOpOnHost(op, shape, ops);
      return absl::OkStatus();
    });
  }

 private:
  GemmOp op_;
  EmulatedDeviceCounters* counters_;
};

}  // namespace

EmulatedDevice::EmulatedDevice(EmulatedDeviceOptions options) : options_(options) {
  info_.name = "emulated GPU";
  info_.compute_capability = options.compute_capability;
  info_.memory_bytes = int64_t{1} << 32;
  info_.multiprocessors = 1;
  info_.emulated = true;
}

EmulatedDevice::~EmulatedDevice() = default;

absl::StatusOr<DevicePtr> EmulatedDevice::Allocate(size_t bytes) {
  size_t rounded = (std::max<size_t>(bytes, 1) + 255) / 256 * 256;
  void* p = std::aligned_alloc(256, rounded);
  if (p == nullptr) return absl::ResourceExhaustedError(absl::StrCat("emulated allocation of ", bytes, " bytes"));
  ++counters_.live_allocations;
  return reinterpret_cast<DevicePtr>(p);
}

void EmulatedDevice::Free(DevicePtr address) {
  if (address == 0) return;
  --counters_.live_allocations;
  std::free(reinterpret_cast<void*>(address));
}

absl::StatusOr<StreamHandle> EmulatedDevice::CreateStream() { return static_cast<StreamHandle>(new Stream()); }
void EmulatedDevice::DestroyStream(StreamHandle stream) { delete static_cast<Stream*>(stream); }

absl::Status EmulatedDevice::CopyToDevice(DevicePtr dst, const void* src, size_t bytes, StreamHandle stream) {
  ++counters_.host_to_device;
  // Like a pageable cuMemcpyHtoDAsync: the source is read when enqueued.
  std::vector<char> staged(static_cast<const char*>(src), static_cast<const char*>(src) + bytes);
  return Enqueue(stream, [dst, staged = std::move(staged)]() {
    if (!staged.empty()) std::memcpy(reinterpret_cast<void*>(dst), staged.data(), staged.size());
    return absl::OkStatus();
  });
}

absl::Status EmulatedDevice::CopyToHost(void* dst, DevicePtr src, size_t bytes, StreamHandle stream) {
  ++counters_.device_to_host;
  return Enqueue(stream, [dst, src, bytes]() {
    if (bytes > 0) std::memcpy(dst, reinterpret_cast<const void*>(src), bytes);
    return absl::OkStatus();
  });
}

absl::Status EmulatedDevice::CopyOnDevice(DevicePtr dst, DevicePtr src, size_t bytes, StreamHandle stream) {
  ++counters_.device_to_device;
  return Enqueue(stream, [dst, src, bytes]() {
    if (bytes > 0) std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), bytes);
    return absl::OkStatus();
  });
}

absl::Status EmulatedDevice::Synchronize(StreamHandle stream) {
  if (static_cast<Stream*>(stream)->capturing) return absl::FailedPreconditionError("synchronize while capturing");
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<DeviceModule>> EmulatedDevice::LoadModule(const std::string& source,
                                                                           const std::string& name) {
  absl::StatusOr<std::shared_ptr<const HostModule>> module = HostModule::Compile(source);
  if (!module.ok()) return absl::Status(module.status().code(), absl::StrCat(name, ": ", module.status().message()));
  ++counters_.modules;
  return std::make_unique<EmulatedModule>(*std::move(module));
}

absl::Status EmulatedDevice::Launch(const DeviceModule& module, const void* function, LaunchShape shape,
                                    StreamHandle stream, DevicePtr buffers, DevicePtr dims) {
  const HostModule* host = &static_cast<const EmulatedModule&>(module).host();
  bool reverse = options_.reverse_threads;
  EmulatedDeviceCounters* counters = &counters_;
  return Enqueue(stream, [=]() {
    ++counters->launches;
    return host->Launch(const_cast<void*>(function), shape, reverse, reinterpret_cast<void* const*>(buffers),
                        reinterpret_cast<const long long*>(dims));
  });
}

absl::StatusOr<std::unique_ptr<DeviceGemm>> EmulatedDevice::CreateGemm(const GemmOp& op) {
  return std::make_unique<EmulatedGemm>(op, &counters_);
}

absl::Status EmulatedDevice::BeginCapture(StreamHandle stream) {
  auto* s = static_cast<Stream*>(stream);
  if (s->capturing) return absl::FailedPreconditionError("the stream is already capturing");
  s->capturing = true;
  s->recorded.clear();
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<DeviceGraph>> EmulatedDevice::EndCapture(StreamHandle stream) {
  auto* s = static_cast<Stream*>(stream);
  if (!s->capturing) return absl::FailedPreconditionError("the stream is not capturing");
  s->capturing = false;
  ++counters_.captures;
  return std::make_unique<EmulatedGraph>(std::move(s->recorded));
}

absl::Status EmulatedDevice::LaunchGraph(const DeviceGraph& graph, StreamHandle stream) {
  ++counters_.graph_launches;
  const auto& ops = static_cast<const EmulatedGraph&>(graph).ops();
  return Enqueue(stream, [&ops]() {
    for (const Op& op : ops) {
      if (absl::Status s = op(); !s.ok()) return s;
    }
    return absl::OkStatus();
  });
}

}  // namespace shapeshift::codegen::cuda::testing
