// PackedWeights: a packed copy of 2 MiB or more is its own mapping on a 2 MiB
// boundary, advised MADV_HUGEPAGE (read back from the kernel's own account,
// /proc/self/smaps), unmapped when the last holder lets go; smaller copies
// come from the heap; and either way the GEMM reading it computes the same.
#include "codegen/cpu/packed_weights.h"

#include <cmath>
#include <cstdint>
#include <fstream>
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

bool HasFlag(const std::string& flags, const std::string& flag) {
  std::istringstream words(flags);
  std::string word;
  while (words >> word) {
    if (word == flag) return true;
  }
  return false;
}

TEST(PackedWeightsTest, ACopyOfTwoMibOrMoreIsAHugePageAdvisedMappingOnA2MibBoundary) {
  std::optional<SkinnyMatmul::Isa> isa = SkinnyMatmul::HostIsa();
  ASSERT_TRUE(isa.has_value()) << "the test machine has AVX2";
  // 768 x 1024 floats: 3 MiB, one whole huge page and a 4 KiB-paged tail.
  MatmulConfig cfg{.k = 768, .n = 1024, .bias = true};
  absl::StatusOr<std::unique_ptr<SkinnyMatmul>> skinny = SkinnyMatmul::Create(cfg, *isa);
  ASSERT_TRUE(skinny.ok()) << skinny.status();
  std::vector<float> b = RandomFloats(cfg.k * cfg.n, 7);
  absl::StatusOr<PackedWeights> packed = (*skinny)->PackB(b.data());
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
  std::vector<double> want = MatmulReference(cfg, shape, a, b, bias, {});
  absl::Status run = (*skinny)->Execute(shape, MatmulOperands{a.data(), packed->data(), bias.data(), nullptr, c.data()});
  ASSERT_TRUE(run.ok()) << run;
  for (size_t i = 0; i < c.size(); ++i) {
    ASSERT_TRUE(Close(c[i], want[i], 1e-5, 1e-5 * std::sqrt(double(cfg.k)))) << "at " << i;
  }
}

TEST(PackedWeightsTest, TheMappingIsGoneWhenTheLastHolderLetsGo) {
  std::optional<SkinnyMatmul::Isa> isa = SkinnyMatmul::HostIsa();
  ASSERT_TRUE(isa.has_value());
  MatmulConfig cfg{.k = 1024, .n = 1024};
  absl::StatusOr<std::unique_ptr<SkinnyMatmul>> skinny = SkinnyMatmul::Create(cfg, *isa);
  ASSERT_TRUE(skinny.ok()) << skinny.status();
  std::vector<float> b = RandomFloats(cfg.k * cfg.n, 3);
  const void* address = nullptr;
  {
    absl::StatusOr<PackedWeights> packed = (*skinny)->PackB(b.data());
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
  std::optional<SkinnyMatmul::Isa> isa = SkinnyMatmul::HostIsa();
  ASSERT_TRUE(isa.has_value());
  MatmulConfig cfg{.k = 64, .n = 96};
  absl::StatusOr<std::unique_ptr<SkinnyMatmul>> skinny = SkinnyMatmul::Create(cfg, *isa);
  ASSERT_TRUE(skinny.ok()) << skinny.status();
  std::vector<float> b = RandomFloats(cfg.k * cfg.n, 1);
  absl::StatusOr<PackedWeights> packed = (*skinny)->PackB(b.data());
  ASSERT_TRUE(packed.ok()) << packed.status();
  EXPECT_LT(packed->bytes(), PackedWeights::kHugePageBytes);
  EXPECT_FALSE(packed->huge_page_advised());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(packed->data()) % 64, 0u);
}

}  // namespace
}  // namespace shapeshift::codegen::cpu
