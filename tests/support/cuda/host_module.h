// Host emulation of generated CUDA C, for tests on machines without a GPU.
//
// HostModule compiles a module's CUDA C (what NVRTC would compile) with the
// host C++ compiler, through codegen/cuda/cuda_emulation.h, into a shared
// object and loads it; Launch runs one kernel's grid on the calling thread
// (blocks in sequence, the threads of each phase as a loop; see the header).
// Modules are cached by source text for the life of the process, so the
// same kernel emitted by several tests is compiled once.
#ifndef SHAPESHIFT_TESTS_SUPPORT_CUDA_HOST_MODULE_H_
#define SHAPESHIFT_TESTS_SUPPORT_CUDA_HOST_MODULE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "codegen/cuda/cuda_emitter.h"

namespace shapeshift::codegen::cuda::testing {

class HostModule {
 public:
  ~HostModule();
  HostModule(const HostModule&) = delete;
  HostModule& operator=(const HostModule&) = delete;

  // `source` is a whole module (CudaPrelude() and the functions); a compile
  // error returns InvalidArgument with the compiler's output.
  static absl::StatusOr<std::shared_ptr<const HostModule>> Compile(const std::string& source);

  absl::StatusOr<void*> Entry(const std::string& name) const;
  // Runs `entry` over shape.grid blocks of shape.block threads; `reverse`
  // runs blocks and the threads of every phase in decreasing order.
  absl::Status Launch(void* entry, LaunchShape shape, bool reverse, void* const* buffers,
                      const long long* dims) const;

 private:
  explicit HostModule(void* handle) : handle_(handle) {}
  void* handle_;
  using LaunchFn = int (*)(void (*)(void* const*, const long long*), unsigned, unsigned, int, void* const*,
                           const long long*);
  LaunchFn launch_ = nullptr;
};

}  // namespace shapeshift::codegen::cuda::testing

#endif  // SHAPESHIFT_TESTS_SUPPORT_CUDA_HOST_MODULE_H_
