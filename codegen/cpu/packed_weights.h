// PackedWeights: a GEMM's constant B in the layout its kernel reads, made
// once by OnednnMatmul::PackB() or SkinnyMatmul::PackB() (each reads only its
// own) and shared by every layer and session that packs the same weights
// (runtime/packed_weight_cache.h).
//
// Memory: a copy of 2 MiB or more is its own anonymous mapping (or a
// page-aligned run of a reservation's, below), starting on a
// 2 MiB boundary and advised MADV_HUGEPAGE, so that where the kernel's
// transparent huge pages are enabled (`always` or `madvise`) the weights
// stream through 2 MiB pages: a decode step reads every packed weight once,
// and with 4 KiB pages that is a TLB miss every 4 KiB (GPT-2 with past, one
// decode step: 5% faster, bench/RESULTS.md). Only whole 2 MiB pages inside
// the copy can become huge pages, so the advice adds no resident bytes; a
// kernel without THP ignores it. Smaller copies come from the heap, as do
// large ones in a process that has run out of mappings.
//
// Pages ahead (ReservePackedPages): the kernel zeroing fresh pages is most of
// a large model's packing — GPT-2's 494 MB took ~0.5–0.8 s of one core in
// every session's creation, the compile waiting for it. A caller that is
// about to import a model and compile it reserves about its weights' bytes
// first: one 2 MiB-aligned mapping, advised MADV_HUGEPAGE, whose pages a
// thread of its own faults in (MADV_POPULATE_WRITE, which writes no byte)
// while the caller imports; the packed copies then take their pages from it
// in order, end to end (page-aligned runs), and the first compile's end
// gives back what none took.
#ifndef SHAPESHIFT_CODEGEN_CPU_PACKED_WEIGHTS_H_
#define SHAPESHIFT_CODEGEN_CPU_PACKED_WEIGHTS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"

namespace shapeshift::codegen::cpu {

// Reserves pages for about `copies` packed copies of `bytes` in all to come
// (above; with a page per copy and 1% for the panels' padding), unless a
// reservation is held already or `bytes` is under kHugePageBytes;
// where the kernel cannot fault pages in ahead (before Linux 5.14), the
// copies still take them, faulting them in as they pack.
void ReservePackedPages(int64_t bytes, int64_t copies);
// Waits until the reservation's pages are faulted in (a measurement wants
// the cores to itself); returns at once without one.
void WaitForPackedPages();
// Stops the faulting and gives back the reserved pages no copy took: the
// first compile's end, or an import that failed.
void ReleaseUnclaimedPackedPages();
// The reservation's bytes taken by copies so far, and reserved in all (0, 0
// without one): for tests.
std::pair<int64_t, int64_t> PackedPagesClaimed();

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
