#include "codegen/cpu/packed_weights.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace shapeshift::codegen::cpu {

absl::StatusOr<PackedWeights> PackedWeights::Allocate(int64_t bytes, const std::string& what) {
  if (bytes <= 0) return absl::InvalidArgumentError(absl::StrCat(what, ": a packed copy of ", bytes, " bytes"));
  PackedWeights packed;
  packed.bytes_ = bytes;
  const size_t length = (static_cast<size_t>(bytes) + 63) / 64 * 64;
  auto from_heap = [&]() -> absl::StatusOr<PackedWeights> {
    packed.data_ = std::shared_ptr<float>(static_cast<float*>(std::aligned_alloc(64, length)), std::free);
    if (!packed.data_) return absl::ResourceExhaustedError(absl::StrCat(what, ": out of memory for ", bytes, " bytes"));
    return packed;
  };
  if (bytes < kHugePageBytes) return from_heap();
  // Map one huge page more than needed, then unmap the slack before the
  // first 2 MiB boundary and after the copy's last page. A process
  // out of mappings (vm.max_map_count) takes the heap instead.
  const size_t huge = static_cast<size_t>(kHugePageBytes);
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t mapped = (length + page - 1) / page * page;
  void* raw = mmap(nullptr, mapped + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return from_heap();
  const uintptr_t begin = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (begin + huge - 1) / huge * huge;
  if (aligned > begin) munmap(raw, aligned - begin);
  munmap(reinterpret_cast<void*>(aligned + mapped), begin + huge - aligned);  // never empty: aligned < begin + huge
  void* copy = reinterpret_cast<void*>(aligned);
  // Advice only: a kernel built without transparent huge pages refuses it,
  // and the copy works the same on 4 KiB pages.
  packed.huge_page_advised_ = madvise(copy, mapped, MADV_HUGEPAGE) == 0;
  packed.data_ = std::shared_ptr<float>(static_cast<float*>(copy), [mapped](float* p) { munmap(p, mapped); });
  return packed;
}

}  // namespace shapeshift::codegen::cpu
