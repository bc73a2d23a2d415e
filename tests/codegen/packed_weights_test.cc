// PackedWeights: a packed copy of 2 MiB or more is its own mapping on a 2 MiB
// boundary, advised MADV_HUGEPAGE (read back from the kernel's own account,
// /proc/self/smaps), unmapped when the last holder lets go; smaller copies
// come from the heap; and either way the GEMM reading it computes the same.
#include "codegen/cpu/packed_weights.h"

#include <cmath>
#include <cstdint>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
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

}  // namespace
}  // namespace shapeshift::codegen::cpu
