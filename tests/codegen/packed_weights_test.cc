// PackedWeights: a packed copy of 2 MiB or more is its own mapping on a 2 MiB
// boundary, advised MADV_HUGEPAGE (read back from the kernel's own account,
// /proc/self/smaps), unmapped when the last holder lets go; smaller copies
// come from the heap; and either way the GEMM reading it computes the same.
#include "codegen/cpu/packed_weights.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "codegen/cpu/onednn_matmul.h"
#include "codegen/cpu/skinny_matmul.h"
#include "gtest/gtest.h"
#include "tests/codegen/matmul_reference.h"
#include "tests/codegen/test_util.h"

namespace shapeshift::codegen::cpu {
namespace {

using ::shapeshift::codegen::testing::Close;
using ::shapeshift::codegen::testing::MatmulReference;
using ::shapeshift::codegen::testing::RandomFloats;

// The VmFlags of the mapping that holds `address`, or nullopt when no
// mapping of this process does.
std::optional<std::string> VmFlagsAt(const void* address) {
  const uintptr_t at = reinterpret_cast<uintptr_t>(address);
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t begin = 0, end = 0;
    char dash = 0;
    std::istringstream range(line);
    if (range >> std::hex >> begin >> dash >> end && dash == '-') {
      inside = begin <= at && at < end;
      continue;
    }
    if (inside && line.rfind("VmFlags:", 0) == 0) return line.substr(8);
  }
  return std::nullopt;
}

// Whether this kernel has transparent huge pages at all (then MADV_HUGEPAGE
// is accepted, whatever the system-wide mode).
bool KernelHasTransparentHugePages() { return std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled").good(); }

// B (random), the host core's skinny GEMM for `cfg` and its packed copy of B.
struct HostPacking {
  std::vector<float> b;
  std::unique_ptr<SkinnyMatmul> skinny;
  absl::StatusOr<PackedWeights> packed = absl::UnknownError("not packed");
};

HostPacking PackOnHostCore(const MatmulConfig& cfg, uint32_t seed) {
  HostPacking out;
  out.b = RandomFloats(cfg.k * cfg.n, seed);
  std::optional<SkinnyMatmul::Isa> isa = SkinnyMatmul::HostIsa();
  if (!isa.has_value()) {
    out.packed = absl::FailedPreconditionError("the test machine has no AVX2");
    return out;
  }
  absl::StatusOr<std::unique_ptr<SkinnyMatmul>> skinny = SkinnyMatmul::Create(cfg, *isa);
  if (!skinny.ok()) {
    out.packed = skinny.status();
    return out;
  }
  out.skinny = *std::move(skinny);
  out.packed = out.skinny->PackB(out.b.data());
  return out;
}

bool HasFlag(const std::string& flags, const std::string& flag) {
  std::istringstream words(flags);
  std::string word;
  while (words >> word) {
    if (word == flag) return true;
  }
  return false;
}

TEST(PackedWeightsTest, ACopyOfTwoMibOrMoreIsAHugePageAdvisedMappingOnA2MibBoundary) {
  // 768 x 1024 floats: 3 MiB, one whole huge page and a 4 KiB-paged tail.
  MatmulConfig cfg{.k = 768, .n = 1024, .bias = true};
  HostPacking host = PackOnHostCore(cfg, 7);
  const absl::StatusOr<PackedWeights>& packed = host.packed;
  ASSERT_TRUE(packed.ok()) << packed.status();
  ASSERT_GE(packed->bytes(), PackedWeights::kHugePageBytes);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(packed->data()) % PackedWeights::kHugePageBytes, 0u);
  std::optional<std::string> flags = VmFlagsAt(packed->data());
  ASSERT_TRUE(flags.has_value()) << "no mapping holds the packed copy";
  EXPECT_EQ(packed->huge_page_advised(), KernelHasTransparentHugePages());
  EXPECT_EQ(HasFlag(*flags, "hg"), packed->huge_page_advised()) << "VmFlags:" << *flags;
  // Its last byte is inside the same mapping (the tail was not unmapped).
  EXPECT_EQ(VmFlagsAt(reinterpret_cast<const char*>(packed->data()) + packed->bytes() - 1), flags);

  // And the GEMM reads it as it reads any packed copy.
  const int64_t m = 3;
  MatmulShape shape{1, m, cfg.k, cfg.n};
  std::vector<float> a = RandomFloats(m * cfg.k, 8), bias = RandomFloats(cfg.n, 9), c(m * cfg.n, NAN);
  std::vector<double> want = MatmulReference(cfg, shape, a, host.b, bias, {});
  MatmulOperands ops{a.data(), packed->data(), bias.data(), nullptr, c.data()};
  absl::Status run = host.skinny->Execute(shape, ops);
  ASSERT_TRUE(run.ok()) << run;
  for (size_t i = 0; i < c.size(); ++i) {
    ASSERT_TRUE(Close(c[i], want[i], 1e-5, 1e-5 * std::sqrt(double(cfg.k)))) << "at " << i;
  }
}

TEST(PackedWeightsTest, TheMappingIsGoneWhenTheLastHolderLetsGo) {
  const void* address = nullptr;
  {
    HostPacking host = PackOnHostCore(MatmulConfig{.k = 1024, .n = 1024}, 3);
    absl::StatusOr<PackedWeights>& packed = host.packed;
    ASSERT_TRUE(packed.ok()) << packed.status();
    PackedWeights shared = *packed;  // a second holder (the packed-weight cache's way)
    address = shared.data();
    packed = absl::InternalError("first holder gone");
    EXPECT_TRUE(VmFlagsAt(address).has_value());
  }
  EXPECT_FALSE(VmFlagsAt(address).has_value()) << "the packed copy's mapping outlived its last holder";
}

TEST(PackedWeightsTest, OnednnsPackedCopyIsAdvisedToo) {
  MatmulConfig cfg{.k = 768, .n = 768, .pack_b = true};
  absl::StatusOr<std::unique_ptr<OnednnMatmul>> mm = OnednnMatmul::Create(cfg);
  ASSERT_TRUE(mm.ok()) << mm.status();
  std::vector<float> b = RandomFloats(cfg.k * cfg.n, 5);
  absl::StatusOr<PackedWeights> packed = (*mm)->PackB(b.data());
  ASSERT_TRUE(packed.ok()) << packed.status();
  ASSERT_GE(packed->bytes(), PackedWeights::kHugePageBytes);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(packed->data()) % PackedWeights::kHugePageBytes, 0u);
  EXPECT_EQ(packed->huge_page_advised(), KernelHasTransparentHugePages());
}

TEST(PackedWeightsTest, ASmallerCopyComesFromTheHeapUnadvised) {
  HostPacking host = PackOnHostCore(MatmulConfig{.k = 64, .n = 96}, 1);
  const absl::StatusOr<PackedWeights>& packed = host.packed;
  ASSERT_TRUE(packed.ok()) << packed.status();
  EXPECT_LT(packed->bytes(), PackedWeights::kHugePageBytes);
  EXPECT_FALSE(packed->huge_page_advised());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(packed->data()) % 64, 0u);
}

// Resident bytes of the mapping that holds `address` (its smaps Rss), or -1.
int64_t ResidentBytesAt(const void* address) {
  const uintptr_t at = reinterpret_cast<uintptr_t>(address);
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t begin = 0, end = 0;
    char dash = 0;
    std::istringstream range(line);
    if (range >> std::hex >> begin >> dash >> end && dash == '-') {
      inside = begin <= at && at < end;
      continue;
    }
    if (inside && line.rfind("Rss:", 0) == 0) return std::stoll(line.substr(4)) * 1024;
  }
  return -1;
}

// Whether this kernel faults pages in ahead (MADV_POPULATE_WRITE, Linux 5.14).
bool KernelFaultsPagesInAhead() {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* p = mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  const bool ok = p != MAP_FAILED && madvise(p, page, MADV_POPULATE_WRITE) == 0;
  if (p != MAP_FAILED) munmap(p, page);
  return ok;
}

// ReservePackedPages: the pages are faulted in ahead; copies take them end
// to end, each given back on its own; the release gives back the rest, and
// copies after it map their own again.
TEST(PackedPagesTest, CopiesTakeTheReservedPagesInOrderAndTheReleaseGivesBackTheRest) {
  ReleaseUnclaimedPackedPages();  // whatever an earlier test left
  const int64_t page = sysconf(_SC_PAGESIZE);
  ReservePackedPages(int64_t{12} << 20, 2);
  auto [claimed, size] = PackedPagesClaimed();
  EXPECT_EQ(claimed, 0);
  ASSERT_GE(size, int64_t{12} << 20);
  EXPECT_EQ(size % PackedWeights::kHugePageBytes, 0);
  // A second reservation while one is held changes nothing.
  ReservePackedPages(int64_t{64} << 20, 1);
  EXPECT_EQ(PackedPagesClaimed().second, size);
  WaitForPackedPages();

  HostPacking first = PackOnHostCore(MatmulConfig{.k = 768, .n = 1024}, 11);  // 3 MiB
  ASSERT_TRUE(first.packed.ok()) << first.packed.status();
  const int64_t first_run = (first.packed->bytes() + page - 1) / page * page;
  EXPECT_EQ(PackedPagesClaimed().first, first_run);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(first.packed->data()) % PackedWeights::kHugePageBytes, 0u);
  EXPECT_EQ(first.packed->huge_page_advised(), KernelHasTransparentHugePages());
  if (KernelFaultsPagesInAhead()) {
    // Every reserved page was resident before any copy wrote to it.
    EXPECT_GE(ResidentBytesAt(first.packed->data()), size);
  }
  HostPacking second = PackOnHostCore(MatmulConfig{.k = 512, .n = 1024}, 12);  // 2 MiB
  ASSERT_TRUE(second.packed.ok()) << second.packed.status();
  const int64_t second_run = (second.packed->bytes() + page - 1) / page * page;
  EXPECT_EQ(reinterpret_cast<const char*>(second.packed->data()),
            reinterpret_cast<const char*>(first.packed->data()) + first_run);
  EXPECT_EQ(PackedPagesClaimed().first, first_run + second_run);
  // A copy larger than what is left maps its own.
  HostPacking large = PackOnHostCore(MatmulConfig{.k = 4096, .n = 1024}, 13);  // 16 MiB
  ASSERT_TRUE(large.packed.ok()) << large.packed.status();
  EXPECT_EQ(PackedPagesClaimed().first, first_run + second_run);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(large.packed->data()) % PackedWeights::kHugePageBytes, 0u);

  // Each copy computes as any packed copy does.
  for (HostPacking* host : {&first, &second, &large}) {
    const MatmulConfig& cfg = host->skinny->config();
    MatmulShape shape{1, 2, cfg.k, cfg.n};
    std::vector<float> a = RandomFloats(2 * cfg.k, 14), c(2 * cfg.n, NAN);
    std::vector<double> want = MatmulReference(cfg, shape, a, host->b, {}, {});
    ASSERT_TRUE(host->skinny->Execute(shape, MatmulOperands{a.data(), host->packed->data(), nullptr, nullptr, c.data()}).ok());
    for (size_t i = 0; i < c.size(); ++i) {
      ASSERT_TRUE(Close(c[i], want[i], 1e-5, 1e-5 * std::sqrt(double(cfg.k)))) << "at " << i;
    }
  }

  // The first copy goes back alone; the second is untouched.
  const void* first_address = first.packed->data();
  const char* unclaimed = reinterpret_cast<const char*>(second.packed->data()) + second_run;
  first.packed = absl::InternalError("gone");
  EXPECT_FALSE(VmFlagsAt(first_address).has_value());
  EXPECT_TRUE(VmFlagsAt(second.packed->data()).has_value());
  EXPECT_TRUE(VmFlagsAt(unclaimed).has_value());
  // The release gives back the pages no copy took, and ends the reservation.
  ReleaseUnclaimedPackedPages();
  EXPECT_EQ(PackedPagesClaimed(), std::make_pair(int64_t{0}, int64_t{0}));
  EXPECT_FALSE(VmFlagsAt(unclaimed).has_value());
  EXPECT_TRUE(VmFlagsAt(second.packed->data()).has_value());
  WaitForPackedPages();  // none held: returns at once
  HostPacking after = PackOnHostCore(MatmulConfig{.k = 768, .n = 1024}, 15);
  ASSERT_TRUE(after.packed.ok()) << after.packed.status();
  EXPECT_EQ(PackedPagesClaimed(), std::make_pair(int64_t{0}, int64_t{0}));
}

TEST(PackedPagesTest, LessThanAHugePageOrNoCopiesReservesNothing) {
  ReleaseUnclaimedPackedPages();
  ReservePackedPages(PackedWeights::kHugePageBytes - 1, 1);
  EXPECT_EQ(PackedPagesClaimed().second, 0);
  ReservePackedPages(int64_t{8} << 20, 0);
  EXPECT_EQ(PackedPagesClaimed().second, 0);
}

}  // namespace
}  // namespace shapeshift::codegen::cpu
