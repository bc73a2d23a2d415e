// KernelCache: compiles each structurally distinct kernel once.
//
// A 12-layer encoder lowers to 12 copies of the same fused layer norm,
// softmax and GELU (differing only in names); compiling each once turns a
// dozen-second compile into one second. Keys are kernel IR compared with
// StructurallyEqual, so names never cause a recompile and a hash collision
// never returns the wrong kernel.
//
// Across processes the backend's ObjectStore plays the same role one level
// down: a kernel this cache has not seen may still be linked from the store
// instead of compiled; loaded_from_store() counts those.
#ifndef SHAPESHIFT_CODEGEN_CPU_KERNEL_CACHE_H_
#define SHAPESHIFT_CODEGEN_CPU_KERNEL_CACHE_H_

#include <cstdint>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "codegen/cpu/cpu_backend.h"
#include "codegen/kernel_ir.h"

namespace shapeshift::codegen::cpu {

class KernelCache {
 public:
  explicit KernelCache(CpuBackend* backend) : backend_(backend) {}

  // The compiled code for `kernel`, compiling it on first sight. Thread-safe.
  absl::StatusOr<std::shared_ptr<const CompiledKernel>> GetOrCompile(const Kernel& kernel);

  // Distinct kernels obtained from the backend (compiled or linked from its store).
  int64_t compiles() const;
  // Of compiles(), those the backend linked from its object store.
  int64_t loaded_from_store() const;
  int64_t hits() const;

 private:
  CpuBackend* backend_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<Kernel, std::shared_ptr<const CompiledKernel>, KernelStructuralHash, KernelStructuralEq>
      compiled_ ABSL_GUARDED_BY(mu_);
  int64_t compiles_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t loaded_from_store_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t hits_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace shapeshift::codegen::cpu

#endif  // SHAPESHIFT_CODEGEN_CPU_KERNEL_CACHE_H_
