// PackedWeights: a GEMM's constant B in the layout its kernel reads, made
// once by OnednnMatmul::PackB() or SkinnyMatmul::PackB() (each reads only its
// own) and shared by every layer and session that packs the same weights
// (runtime/packed_weight_cache.h).
//
// Memory: a copy of 2 MiB or more is its own anonymous mapping, starting on a
// 2 MiB boundary and advised MADV_HUGEPAGE, so that where the kernel's
// transparent huge pages are enabled (`always` or `madvise`) the weights
// stream through 2 MiB pages: a decode step reads every packed weight once,
// and with 4 KiB pages that is a TLB miss every 4 KiB (GPT-2 with past, one
// decode step: 5% faster, bench/RESULTS.md). Only whole 2 MiB pages inside
// the copy can become huge pages, so the advice adds no resident bytes; a
// kernel without THP ignores it. Smaller copies come from the heap, as do
// large ones in a process that has run out of mappings.
#ifndef SHAPESHIFT_CODEGEN_CPU_PACKED_WEIGHTS_H_
#define SHAPESHIFT_CODEGEN_CPU_PACKED_WEIGHTS_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace shapeshift::codegen::cpu {

class PackedWeights {
 public:
  // Copies of at least this many bytes get their own huge-page-advised mapping.
  static constexpr int64_t kHugePageBytes = int64_t{2} << 20;

  const float* data() const { return data_.get(); }
  int64_t bytes() const { return bytes_; }
  // Whether the copy is a mapping advised MADV_HUGEPAGE (see above).
  bool huge_page_advised() const { return huge_page_advised_; }

 private:
  friend class OnednnMatmul;
  friend class SkinnyMatmul;
  // `bytes` of uninitialized memory, 64-byte aligned (2 MiB from
  // kHugePageBytes up); `what` names the GEMM in the out-of-memory error.
  static absl::StatusOr<PackedWeights> Allocate(int64_t bytes, const std::string& what);
  float* writable() const { return data_.get(); }

  std::shared_ptr<float> data_;
  int64_t bytes_ = 0;
  bool huge_page_advised_ = false;
};

}  // namespace shapeshift::codegen::cpu

#endif  // SHAPESHIFT_CODEGEN_CPU_PACKED_WEIGHTS_H_
