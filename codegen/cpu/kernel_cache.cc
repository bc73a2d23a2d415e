#include "codegen/cpu/kernel_cache.h"

namespace shapeshift::codegen::cpu {

absl::StatusOr<std::shared_ptr<const CompiledKernel>> KernelCache::GetOrCompile(const Kernel& kernel) {
  absl::MutexLock lock(&mu_);
  if (auto it = compiled_.find(kernel); it != compiled_.end()) {
    ++hits_;
    return it->second;
  }
  auto compiled = backend_->Compile(kernel);
  if (!compiled.ok()) return compiled.status();
  ++compiles_;
  if ((*compiled)->loaded_from_store) ++loaded_from_store_;
  compiled_.emplace(kernel, *compiled);
  return *compiled;
}

int64_t KernelCache::compiles() const {
  absl::MutexLock lock(&mu_);
  return compiles_;
}

int64_t KernelCache::loaded_from_store() const {
  absl::MutexLock lock(&mu_);
  return loaded_from_store_;
}

int64_t KernelCache::hits() const {
  absl::MutexLock lock(&mu_);
  return hits_;
}

}  // namespace shapeshift::codegen::cpu
