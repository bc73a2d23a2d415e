#include "runtime/packed_weight_cache.h"

#include <utility>

namespace shapeshift::runtime {

absl::StatusOr<codegen::cpu::PackedWeights> PackedWeightCache::GetOrPack(
    const Tensor& weights, const std::string& packing,
    absl::FunctionRef<absl::StatusOr<codegen::cpu::PackedWeights>()> pack, bool* shared) {
  absl::MutexLock lock(&mu_);
  Key key{weights.raw(), weights.byte_size(), packing};
  if (auto it = entries_.find(key); it != entries_.end()) {
    *shared = true;
    return it->second.packed;
  }
  *shared = false;
  absl::StatusOr<codegen::cpu::PackedWeights> packed = pack();
  if (!packed.ok()) return packed.status();
  bytes_ += packed->bytes();
  entries_.emplace(std::move(key), Entry{weights, *packed});
  return packed;
}

int64_t PackedWeightCache::copies() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(entries_.size());
}

int64_t PackedWeightCache::bytes() const {
  absl::MutexLock lock(&mu_);
  return bytes_;
}

}  // namespace shapeshift::runtime
