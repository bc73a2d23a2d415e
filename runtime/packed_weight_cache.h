// PackedWeightCache: one packed copy per (constant weight, packing) for every
// Program one Dispatcher compiles.
//
// Why: the polymorphic entry, each bucket and each static tier compile their
// own copy of the model, and each packed every constant GEMM weight again
// into its own short-request copy, though the weights and the packing are the
// same: BERT-base under the bucketed policy over a 60-request trace made 14
// entries and peaked at 5.4 GB of RSS for 0.44 GB of weights. Programs now
// take the copy the first one made.
//
// A copy is found by the weights' address and size and the packer's identity
// (which kernel, instruction set and GEMM class: `packing`), and the entry
// keeps the weights' Tensor alive, so the address cannot be reused by other
// bytes (a constant a tier's compile folded, say) while the entry can answer
// for it: a hit is always the same bytes packed the same way. Constants are
// never written in place.
#ifndef SHAPESHIFT_RUNTIME_PACKED_WEIGHT_CACHE_H_
#define SHAPESHIFT_RUNTIME_PACKED_WEIGHT_CACHE_H_

#include <cstdint>
#include <map>
#include <string>
#include <tuple>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "codegen/cpu/onednn_matmul.h"
#include "graph/tensor.h"

namespace shapeshift::runtime {

class PackedWeightCache {
 public:
  // The packed copy of `weights` under `packing`, made by `pack` the first
  // time (and not kept if it fails). Thread-safe: a tier-up compiles on its
  // own thread; `pack` runs under the lock, so two compiles wanting one copy
  // make it once. `*shared` says whether an earlier call had made it.
  absl::StatusOr<codegen::cpu::PackedWeights> GetOrPack(
      const Tensor& weights, const std::string& packing,
      absl::FunctionRef<absl::StatusOr<codegen::cpu::PackedWeights>()> pack, bool* shared);

  int64_t copies() const;  // distinct packed copies held
  int64_t bytes() const;   // their bytes

 private:
  struct Entry {
    Tensor weights;  // keeps the address for these bytes
    codegen::cpu::PackedWeights packed;
  };
  using Key = std::tuple<const void*, size_t, std::string>;
  mutable absl::Mutex mu_;
  std::map<Key, Entry> entries_ ABSL_GUARDED_BY(mu_);
  int64_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace shapeshift::runtime

#endif  // SHAPESHIFT_RUNTIME_PACKED_WEIGHT_CACHE_H_
