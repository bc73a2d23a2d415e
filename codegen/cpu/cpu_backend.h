// CpuBackend: compiles kernel IR to native code for the host CPU through
// LLVM's ORC LLJIT, at O3, for the host's CPU and features (AVX-512 where
// present: the innermost loops are vectorized 16 f32 lanes wide).
//
// Calling convention of every compiled kernel:
//   void kernel(int64_t begin, int64_t end, void* const* buffers, const int64_t* dims)
// runs iterations [begin, end) of the kernel's parallel loop; `buffers[i]`
// points at Kernel::buffers[i]'s data and `dims[i]` holds the value of
// Kernel::dims[i]. The parallel loop's trip count for given dims comes from
// CompiledKernel::extent(dims). RunParallel (parallel_run.h) splits the range
// over the OpenMP threads, the same pool oneDNN uses.
//
// One LLJIT per backend. Compile() is thread-safe (compiles are serialized);
// compiled kernels are plain function pointers, valid while the backend lives.
#ifndef SHAPESHIFT_CODEGEN_CPU_CPU_BACKEND_H_
#define SHAPESHIFT_CODEGEN_CPU_CPU_BACKEND_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "codegen/kernel_ir.h"

namespace shapeshift::codegen::cpu {

using KernelFn = void (*)(int64_t begin, int64_t end, void* const* buffers, const int64_t* dims);
using ExtentFn = int64_t (*)(const int64_t* dims);

struct CompiledKernel {
  std::string name;
  KernelFn fn = nullptr;
  ExtentFn extent = nullptr;
  int vector_width = 1;
  double compile_seconds = 0;      // lowering + O3 + machine code, wall clock
  double compile_cpu_seconds = 0;  // the same, CPU time of the compiling thread
};

// How an innermost loop finishes the last n mod W iterations.
enum class RemainderKind {
  kBest,        // one masked vector iteration where masks are native (AVX-512), else scalar
  kScalarLoop,  // always a scalar loop
};

struct CpuBackendOptions {
  // f32 lanes of the explicit vector loops; 0 = the widest the host has
  // (16 with AVX-512, 8 with AVX, 4 otherwise); 1 = scalar code only.
  int vector_width = 0;
  RemainderKind remainder = RemainderKind::kBest;
};

class CpuBackend {
 public:
  static absl::StatusOr<std::unique_ptr<CpuBackend>> Create(const CpuBackendOptions& options = {});
  ~CpuBackend();
  CpuBackend(const CpuBackend&) = delete;
  CpuBackend& operator=(const CpuBackend&) = delete;

  // Verifies, lowers, optimizes and JIT-compiles `kernel`.
  absl::StatusOr<std::shared_ptr<const CompiledKernel>> Compile(const Kernel& kernel);

  // The optimized LLVM IR that Compile() would produce, for inspection.
  absl::StatusOr<std::string> OptimizedIr(const Kernel& kernel);

  int vector_width() const;
  const std::string& cpu_name() const;

 private:
  struct Impl;
  explicit CpuBackend(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace shapeshift::codegen::cpu

#endif  // SHAPESHIFT_CODEGEN_CPU_CPU_BACKEND_H_
