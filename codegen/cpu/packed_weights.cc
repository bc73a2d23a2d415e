#include "codegen/cpu/packed_weights.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <thread>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"

namespace shapeshift::codegen::cpu {
namespace {

constexpr size_t kHuge = static_cast<size_t>(PackedWeights::kHugePageBytes);
// Faulted in per madvise call: small enough that a release stops it soon.
constexpr size_t kFaultChunk = size_t{16} << 20;

// One process-wide reservation (ReservePackedPages): [base, base + size),
// copies taking [base, base + claimed) in 2 MiB-aligned runs, each run given
// back by its copy (munmap of its own range), the rest by the release.
struct Reservation {
  char* base = nullptr;
  size_t size = 0;
  std::atomic<size_t> claimed{0};
  std::atomic<bool> stop{false};
  bool advised = false;        // MADV_HUGEPAGE accepted
  absl::Notification faulted;  // FaultIn has returned
  std::thread faulting;        // joined by the release
};

// Never destroyed: a reservation still held at exit (its thread still
// faulting pages in) is left to the process's end, not to a static
// destructor that would destroy a joinable std::thread.
absl::Mutex g_mu(absl::kConstInit);
std::shared_ptr<Reservation>& g_reservation = *new std::shared_ptr<Reservation>();

// Faults in the pages past what copies have taken (those the packer faults
// itself): MADV_POPULATE_WRITE maps each page writable without writing it,
// so a copy being packed in the same pages is never disturbed. A kernel
// without it (before Linux 5.14) refuses at once and nothing is ahead.
void FaultIn(Reservation* r) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  for (size_t off = 0; off < r->size && !r->stop.load(std::memory_order_relaxed); off += kFaultChunk) {
    const size_t from = std::max(off, r->claimed.load(std::memory_order_acquire)) / page * page;
    const size_t to = std::min(off + kFaultChunk, r->size);
    if (from >= to) continue;
    if (madvise(r->base + from, to - from, MADV_POPULATE_WRITE) != 0 && errno == EINVAL) break;
  }
  r->faulted.Notify();
}

// A page-aligned run of `length` bytes (a multiple of the page size) from
// the reservation, or null. Runs lie end to end: a copy's first and last
// huge pages may be its neighbours' too (a copy given back splits them).
float* TakeReserved(size_t length, bool* advised) {
  absl::MutexLock lock(&g_mu);
  Reservation* r = g_reservation.get();
  if (r == nullptr) return nullptr;
  const size_t claimed = r->claimed.load(std::memory_order_relaxed);
  if (r->size - claimed < length) return nullptr;
  r->claimed.store(claimed + length, std::memory_order_release);
  *advised = r->advised;
  return reinterpret_cast<float*>(r->base + claimed);
}

}  // namespace

void ReservePackedPages(int64_t bytes, int64_t copies) {
  if (bytes < PackedWeights::kHugePageBytes || copies < 1) return;
  absl::MutexLock lock(&g_mu);
  if (g_reservation != nullptr) return;
  // A page per copy for its rounding, and 1% for the panels' padding (a
  // packed copy is a little larger than its weights).
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t wanted = static_cast<size_t>(bytes) + static_cast<size_t>(bytes) / 100 + static_cast<size_t>(copies) * page;
  const size_t size = (wanted + kHuge - 1) / kHuge * kHuge;
  void* raw = mmap(nullptr, size + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return;
  const uintptr_t begin = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (begin + kHuge - 1) / kHuge * kHuge;
  if (aligned > begin) munmap(raw, aligned - begin);
  munmap(reinterpret_cast<void*>(aligned + size), begin + kHuge - aligned);  // never empty
  auto r = std::make_shared<Reservation>();
  r->base = reinterpret_cast<char*>(aligned);
  r->size = size;
  r->advised = madvise(r->base, size, MADV_HUGEPAGE) == 0;  // advice, as for a copy of its own
  r->faulting = std::thread(FaultIn, r.get());
  g_reservation = std::move(r);
}

void WaitForPackedPages() {
  std::shared_ptr<Reservation> r;
  {
    absl::MutexLock lock(&g_mu);
    r = g_reservation;
  }
  if (r != nullptr) r->faulted.WaitForNotification();
}

void ReleaseUnclaimedPackedPages() {
  std::shared_ptr<Reservation> r;
  {
    absl::MutexLock lock(&g_mu);
    r = std::move(g_reservation);
  }
  if (r == nullptr) return;
  r->stop.store(true, std::memory_order_relaxed);
  r->faulting.join();
  const size_t claimed = r->claimed.load(std::memory_order_acquire);
  if (claimed < r->size) munmap(r->base + claimed, r->size - claimed);
}

std::pair<int64_t, int64_t> PackedPagesClaimed() {
  absl::MutexLock lock(&g_mu);
  if (g_reservation == nullptr) return {0, 0};
  return {static_cast<int64_t>(g_reservation->claimed.load()), static_cast<int64_t>(g_reservation->size)};
}

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
  // From the reservation (its pages advised as a copy's own would be),
  // given back as the copy's own pages.
  if (float* reserved = TakeReserved(mapped, &packed.huge_page_advised_); reserved != nullptr) {
    packed.data_ = std::shared_ptr<float>(reserved, [mapped](float* p) { munmap(p, mapped); });
    return packed;
  }
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
