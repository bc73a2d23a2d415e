// SkinnyMatmul: shapeshift's own few-rows GEMM must compute the OnednnMatmul
// contract (tests/codegen/matmul_reference.h) at every row count, with every
// epilogue, on every instruction-set core this CPU can run, and must be
// refused where it does not apply.
#include "codegen/cpu/skinny_matmul.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/codegen/matmul_reference.h"
#include "tests/codegen/test_util.h"

namespace shapeshift::codegen::cpu {
namespace {

using ::shapeshift::codegen::testing::Close;
using ::shapeshift::codegen::testing::MatmulReference;
using ::shapeshift::codegen::testing::RandomFloats;
using ::testing::HasSubstr;
using Isa = SkinnyMatmul::Isa;

MatmulConfig WeightGemm(int64_t k, int64_t n) {
  MatmulConfig cfg;
  cfg.k = k;
  cfg.n = n;
  return cfg;
}

// `cfg` with a bias, `act`, and a residual where no activation comes first
// (the epilogues the models use).
MatmulConfig WithEpilogue(MatmulConfig cfg, MatmulActivation act) {
  cfg.bias = true;
  cfg.residual = act == MatmulActivation::kNone;
  cfg.activation = act;
  return cfg;
}

// The cores this CPU runs; the test machine (x86-64 with AVX2 at least) has
// one or both, and a test over none would assert nothing.
std::vector<Isa> Cores() {
  std::vector<Isa> cores;
  for (Isa isa : {Isa::kAvx512, Isa::kAvx2}) {
    if (SkinnyMatmul::Supported(isa)) cores.push_back(isa);
  }
  return cores;
}

std::unique_ptr<SkinnyMatmul> MakeOrDie(const MatmulConfig& cfg, Isa isa, SkinnyOptions options = {}) {
  absl::StatusOr<std::unique_ptr<SkinnyMatmul>> made = SkinnyMatmul::Create(cfg, isa, options);
  EXPECT_TRUE(made.ok()) << made.status();
  return made.ok() ? *std::move(made) : nullptr;
}

// Runs m rows of `skinny` on random data (the residual in place when asked)
// and compares with the reference in double.
void CheckRows(const SkinnyMatmul& skinny, int64_t m, uint32_t seed, bool residual_in_place = false) {
  const MatmulConfig& cfg = skinny.config();
  MatmulShape s{1, m, cfg.k, cfg.n};
  SCOPED_TRACE(DescribeConfig(cfg) + " m=" + std::to_string(m) + " " + std::string(IsaName(skinny.isa())));
  std::vector<float> a = RandomFloats(m * s.k, seed), b = RandomFloats(s.k * s.n, seed + 1);
  std::vector<float> bias = RandomFloats(s.n, seed + 2), residual = RandomFloats(m * s.n, seed + 3);
  std::vector<double> want = MatmulReference(cfg, s, a, b, bias, residual);
  absl::StatusOr<PackedWeights> packed = skinny.PackB(b.data());
  ASSERT_TRUE(packed.ok()) << packed.status();
  std::vector<float> c = residual_in_place ? residual : std::vector<float>(m * s.n, NAN);
  MatmulOperands ops{a.data(), packed->data(), cfg.bias ? bias.data() : nullptr,
                     cfg.residual ? (residual_in_place ? c.data() : residual.data()) : nullptr, c.data()};
  absl::Status run = skinny.Execute(s, ops);
  ASSERT_TRUE(run.ok()) << run;
  for (size_t i = 0; i < c.size(); ++i) {
    ASSERT_TRUE(Close(c[i], want[i], 1e-5, 1e-5 * std::sqrt(double(s.k)))) << "at " << i << ": " << c[i] << " vs "
                                                                            << want[i];
  }
}

TEST(SkinnyMatmulTest, EveryRowCountMatchesTheReferenceOnEveryCore) {
  // n = 80: two and a half AVX-512 panels, five AVX2 ones; rows 1..33 cover
  // every row-block size and a tail block after full ones.
  MatmulConfig cfg = WeightGemm(96, 80);
  ASSERT_FALSE(Cores().empty());
  for (Isa isa : Cores()) {
    std::unique_ptr<SkinnyMatmul> skinny = MakeOrDie(cfg, isa);
    ASSERT_NE(skinny, nullptr);
    for (int64_t m = 1; m <= 33; ++m) CheckRows(*skinny, m, static_cast<uint32_t>(100 + m));
  }
}

TEST(SkinnyMatmulTest, EveryEpilogueWithPlainAndTransposedWeights) {
  ASSERT_FALSE(Cores().empty());
  for (MatmulActivation act : {MatmulActivation::kNone, MatmulActivation::kGeluErf, MatmulActivation::kGeluTanh}) {
    for (bool transpose : {false, true}) {
      MatmulConfig cfg = WeightGemm(64, 50);
      cfg.bias = true;
      cfg.scale = 0.5f;
      cfg.activation = act;
      cfg.residual = true;
      cfg.transpose_b = transpose;
      for (Isa isa : Cores()) {
        std::unique_ptr<SkinnyMatmul> skinny = MakeOrDie(cfg, isa);
        ASSERT_NE(skinny, nullptr);
        for (int64_t m : {1, 7, 17}) {
          CheckRows(*skinny, m, 7);
          CheckRows(*skinny, m, 9, /*residual_in_place=*/true);
        }
      }
    }
  }
}

// Depths past a row block and widths past a panel: the packed panels' padding
// (rows past k, columns past n) is zero in both weight layouts, packed by the
// whole team.
TEST(SkinnyMatmulTest, OddDepthsAndWidthsInBothLayouts) {
  ASSERT_FALSE(Cores().empty());
  for (int64_t k : {1, 37, 100}) {
    for (int64_t n : {1, 17, 50, 129}) {
      for (bool transpose : {false, true}) {
        MatmulConfig cfg = WeightGemm(k, n);
        cfg.transpose_b = transpose;
        for (Isa isa : Cores()) {
          SCOPED_TRACE(absl::StrCat("k ", k, " n ", n, transpose ? " transposed" : "", " ", IsaName(isa)));
          std::unique_ptr<SkinnyMatmul> skinny = MakeOrDie(cfg, isa);
          ASSERT_NE(skinny, nullptr);
          for (int64_t m : {1, 5}) CheckRows(*skinny, m, static_cast<uint32_t>(k * 1000 + n + m));
        }
      }
    }
  }
}

// PackB's `consumed` reports every element of B exactly once (from the
// team's threads), each range after the packing read it: a caller that gives
// those pages back loses nothing the result needs.
TEST(SkinnyMatmulTest, PackingReportsEachPartOfBOnceAsItIsRead) {
  ASSERT_FALSE(Cores().empty());
  for (bool transpose : {false, true}) {
    MatmulConfig cfg = WeightGemm(200, 90);  // 4 row blocks of 64 (the last partial), several panels
    cfg.transpose_b = transpose;
    for (Isa isa : Cores()) {
      SCOPED_TRACE(absl::StrCat(transpose ? "transposed " : "", IsaName(isa)));
      std::unique_ptr<SkinnyMatmul> skinny = MakeOrDie(cfg, isa, SkinnyOptions{.threads = 2});
      ASSERT_NE(skinny, nullptr);
      std::vector<float> b = RandomFloats(cfg.k * cfg.n, 3);
      std::vector<int> seen(b.size(), 0);
      std::mutex mu;
      absl::StatusOr<PackedWeights> packed = skinny->PackB(b.data(), [&](const float* begin, size_t bytes) {
        std::lock_guard<std::mutex> lock(mu);
        EXPECT_EQ(bytes % sizeof(float), 0u);
        for (size_t i = 0; i < bytes / sizeof(float); ++i) ++seen[(begin - b.data()) + i];
      });
      ASSERT_TRUE(packed.ok()) << packed.status();
      EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), static_cast<std::ptrdiff_t>(b.size()));
      // And the packed copy is the one the callback-free packing makes.
      absl::StatusOr<PackedWeights> plain = skinny->PackB(b.data());
      ASSERT_TRUE(plain.ok());
      ASSERT_EQ(plain->bytes(), packed->bytes());
      EXPECT_EQ(std::memcmp(plain->data(), packed->data(), plain->bytes()), 0);
    }
  }
}

TEST(SkinnyMatmulTest, SplitOverThreadsAndWideLikeAnLmHead) {
  // 64 x 50257 (GPT-2's vocabulary): a ragged last panel, 1571 panels over
  // two threads, and enough work (m * k * n >= 2^17) that the team runs; with
// prefetch distances none, short and longer than a panel.
  MatmulConfig cfg = WeightGemm(64, 50257);
  cfg.transpose_b = true;  // tied embeddings: the LM head reads wte as [n, k]
  for (Isa isa : Cores()) {
    for (int64_t prefetch : {0, 16, 100}) {
      std::unique_ptr<SkinnyMatmul> skinny = MakeOrDie(cfg, isa, {.threads = 2, .prefetch_rows = prefetch});
      ASSERT_NE(skinny, nullptr);
      EXPECT_EQ(skinny->options().threads, 2);
      for (int64_t m : {1, 3}) CheckRows(*skinny, m, 11);
    }
  }
}

// Long requests run in chunks of rows (SkinnyMatmul::RowChunk). Chunks of
// one and of two row blocks, with a tail chunk and a tail block, every
// epilogue, two threads: the same results as one pass.
TEST(SkinnyMatmulTest, RowsInChunksMatchTheReference) {
  ASSERT_FALSE(Cores().empty());
  for (MatmulActivation act : {MatmulActivation::kNone, MatmulActivation::kGeluErf}) {
    const MatmulConfig cfg = WithEpilogue(WeightGemm(40, 70), act);
    for (Isa isa : Cores()) {
      const int64_t block_rows = isa == Isa::kAvx512 ? 8 : 6;
      for (int64_t blocks : {1, 2}) {
        SCOPED_TRACE(absl::StrCat(blocks, " block(s) a chunk"));
        const int64_t chunk_bytes = blocks * block_rows * cfg.k * static_cast<int64_t>(sizeof(float));
        ASSERT_EQ(SkinnyMatmul::RowChunk(100, cfg.k, block_rows, 16, 0, chunk_bytes, CacheSizes()),
                  blocks * block_rows);
        std::unique_ptr<SkinnyMatmul> skinny = MakeOrDie(cfg, isa, {.threads = 2, .row_chunk_bytes = chunk_bytes});
        ASSERT_NE(skinny, nullptr);
        for (int64_t m : {1, 5, 6, 7, 8, 9, 13, 16, 17, 25, 31, 50}) CheckRows(*skinny, m, static_cast<uint32_t>(m));
      }
    }
  }
}

// C for m rows of `skinny` on the random data of `seed`, the residual (when
// the configuration has one) added in place.
std::vector<float> RunRows(const SkinnyMatmul& skinny, int64_t m, uint32_t seed) {
  const MatmulConfig& cfg = skinny.config();
  std::vector<float> a = RandomFloats(m * cfg.k, seed), b = RandomFloats(cfg.k * cfg.n, seed + 1);
  std::vector<float> bias = RandomFloats(cfg.n, seed + 2), c = RandomFloats(m * cfg.n, seed + 3);
  absl::StatusOr<PackedWeights> packed = skinny.PackB(b.data());
  EXPECT_TRUE(packed.ok()) << packed.status();
  if (!packed.ok()) return {};
  MatmulOperands ops{a.data(), packed->data(), cfg.bias ? bias.data() : nullptr, cfg.residual ? c.data() : nullptr,
                     c.data()};
  absl::Status run = skinny.Execute({1, m, cfg.k, cfg.n}, ops);
  EXPECT_TRUE(run.ok()) << run;
  return c;
}

// Slicing k changes where a block's sums wait between slices, not the order
// they are added in, and prefetching the next panel changes nothing it
// computes: every slicing, with or without the next panel's prefetch,
// chunked or not, gives the plain kernel's bits — slices of one panel row,
// slices that leave a short last one, the default rule's, more row blocks
// than one group of kMaxSlicedBlocks, tail blocks, every epilogue, the
// residual in place, two threads, every core — and matches the reference.
TEST(SkinnyMatmulTest, SlicesOfKAndTheNextPanelsPrefetchGiveThePlainBits) {
  ASSERT_FALSE(Cores().empty());
  for (MatmulActivation act : {MatmulActivation::kNone, MatmulActivation::kGeluTanh}) {
    const MatmulConfig cfg = WithEpilogue(WeightGemm(150, 40), act);
    for (Isa isa : Cores()) {
      std::unique_ptr<SkinnyMatmul> plain =
          MakeOrDie(cfg, isa, {.threads = 2, .slice_bytes = -1, .prefetch_next_panel = false});
      ASSERT_NE(plain, nullptr);
      const int64_t row_bytes = plain->panel_width() * static_cast<int64_t>(sizeof(float));
      const int64_t two_blocks = 2 * (isa == Isa::kAvx512 ? 8 : 6) * cfg.k * static_cast<int64_t>(sizeof(float));
      const std::vector<SkinnyOptions> variants = {
          {.threads = 2},
          {.threads = 2, .row_chunk_bytes = two_blocks, .slice_bytes = -1},
          {.threads = 2, .slice_bytes = row_bytes},
          {.threads = 2, .slice_bytes = 23 * row_bytes, .prefetch_next_panel = false},
          {.threads = 2, .row_chunk_bytes = two_blocks, .slice_bytes = 149 * row_bytes},
      };
      for (const SkinnyOptions& options : variants) {
        std::unique_ptr<SkinnyMatmul> sliced = MakeOrDie(cfg, isa, options);
        ASSERT_NE(sliced, nullptr);
        for (int64_t m : {1, 2, 7, 13, 36, 53, 70}) {
          SCOPED_TRACE(absl::StrCat(IsaName(isa), " slices of ", options.slice_bytes, " bytes, chunks of ",
                                    options.row_chunk_bytes, " bytes, next panel ", options.prefetch_next_panel,
                                    ", m=", m));
          const uint32_t seed = static_cast<uint32_t>(m * 10 + options.slice_bytes % 7);
          const std::vector<float> want = RunRows(*plain, m, seed), got = RunRows(*sliced, m, seed);
          ASSERT_EQ(got.size(), want.size());
          ASSERT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0);
          CheckRows(*sliced, m, seed, /*residual_in_place=*/true);
        }
      }
    }
  }
}

// KSlice's rule: a page of the panel a slice, for chunks of 2..3 row blocks
// on the AVX2 core, none on the AVX-512 core (measured slower there).
TEST(SkinnyMatmulTest, KSlicesOnlyChunksOfTwoOrThreeBlocksOnAvx2) {
  constexpr auto kAvx2 = SkinnyMatmul::Isa::kAvx2, kAvx512 = SkinnyMatmul::Isa::kAvx512;
  // AVX2: 6-row blocks, 16-column panels (64 bytes a row): 64 rows a slice.
  EXPECT_EQ(SkinnyMatmul::KSlice(kAvx2, 6, 768, 0), 0);  // one block: decode
  EXPECT_EQ(SkinnyMatmul::KSlice(kAvx2, 7, 768, 0), 64);
  EXPECT_EQ(SkinnyMatmul::KSlice(kAvx2, 18, 768, 0), 64);
  EXPECT_EQ(SkinnyMatmul::KSlice(kAvx2, 19, 768, 0), 0);
  // AVX-512: never by the rule; a set size slices 32-column panels (128
  // bytes a row).
  for (int64_t rows : {8, 9, 16, 24, 25, 512}) EXPECT_EQ(SkinnyMatmul::KSlice(kAvx512, rows, 768, 0), 0) << rows;
  EXPECT_EQ(SkinnyMatmul::KSlice(kAvx512, 16, 768, 4096), 32);
  // No slice as deep as k; set sizes take at least one row; < 0 never slices.
  EXPECT_EQ(SkinnyMatmul::KSlice(kAvx2, 12, 64, 0), 0);
  EXPECT_EQ(SkinnyMatmul::KSlice(kAvx2, 12, 65, 0), 64);
  EXPECT_EQ(SkinnyMatmul::KSlice(kAvx2, 100, 768, 1000), 15);
  EXPECT_EQ(SkinnyMatmul::KSlice(kAvx2, 100, 768, 1), 1);
  EXPECT_EQ(SkinnyMatmul::KSlice(kAvx2, 12, 768, -1), 0);
}

// RowChunk's rule on a machine with a 512 KiB L2 and a 32 MiB L3 (the
// defaults), AVX2's 6-row blocks and 16-column panels.
TEST(SkinnyMatmulTest, RowChunksKeepAInL2OrOutOfMemory) {
  const CacheSizes caches;
  ASSERT_EQ(caches.l2_bytes, 512 << 10);
  ASSERT_EQ(caches.l3_bytes, 32 << 20);
  const int64_t small_panels = 1 << 20, large_panels = 100 << 20;
  // k = 768: half of L2 holds 85 rows, 84 in whole blocks (>= 4 panels' width).
  EXPECT_EQ(SkinnyMatmul::RowChunk(512, 768, 6, 16, small_panels, 0, caches), 84);
  EXPECT_EQ(SkinnyMatmul::RowChunk(4096, 768, 6, 16, small_panels, 0, caches), 84);
  // k = 3072: half of L2 holds 21 rows, too few: one chunk until A passes
  // 8 MiB (683 rows), then 4 MiB of A (341 rows, 336 in blocks) a chunk.
  EXPECT_EQ(SkinnyMatmul::RowChunk(512, 3072, 6, 16, small_panels, 0, caches), 0);
  EXPECT_EQ(SkinnyMatmul::RowChunk(682, 3072, 6, 16, small_panels, 0, caches), 0);
  EXPECT_EQ(SkinnyMatmul::RowChunk(683, 3072, 6, 16, small_panels, 0, caches), 336);
  // Panels past a quarter of L3 come from memory on every pass: k = 768 then
  // takes the second rule too.
  EXPECT_EQ(SkinnyMatmul::RowChunk(512, 768, 6, 16, large_panels, 0, caches), 0);
  EXPECT_EQ(SkinnyMatmul::RowChunk(4096, 768, 6, 16, large_panels, 0, caches), 1362);
  // Rows wider than the chunk still make one block a chunk.
  EXPECT_EQ(SkinnyMatmul::RowChunk(10, 1 << 20, 6, 16, small_panels, 1024, caches), 6);
}

TEST(SkinnyMatmulTest, HostCacheSizesArePositiveAndOrdered) {
  const CacheSizes host = HostCacheSizes();
  EXPECT_GT(host.l2_bytes, 0);
  EXPECT_GE(host.l3_bytes, host.l2_bytes);
}

// GELU in double, in forms without cancellation where 1 + erf or 1 + tanh
// would lose every digit (x << 0): 0.5 x erfc(-x / sqrt 2), x / (1 + exp(-2u)).
double GeluExact(double x, MatmulActivation act) {
  if (act == MatmulActivation::kGeluErf) return 0.5 * x * std::erfc(-x / std::sqrt(2.0));
  double u = std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x);
  return x / (1 + std::exp(-2 * u));
}

// The GELU epilogue over its whole range: relative error 1e-5 (rounding the
// exp argument, up to 87 in size, to float alone costs 87 * 6e-8 = 5e-6),
// or the erf form's Abramowitz & Stegun bound (1.5e-7 on erfc, times 0.5 |x|)
// where that is larger; results below float's normal range may flush to -0;
// the tails reach -0 and x, never NaN, and NaN stays NaN.
// Each value twice: in a whole panel and in the last, partial one (finished
// through zero-padded stack rows), on every core.
TEST(SkinnyMatmulTest, GeluEpiloguesAgreeWithTheDefinitionOverTheirRange) {
  const std::vector<float> values = {
      0.0f,  -0.0f, 1e-30f, -1e-30f, 1e-4f,  -1e-4f, 0.3f,  -0.3f, 0.5f,  -0.5f, 1.0f,  -1.0f, 2.5f, -2.5f,
      5.0f,  -5.0f, 9.0f,   -9.0f,   13.0f,  -13.0f, 40.0f, -40.0f, 1e20f, -1e20f, 3e38f, -3e38f,
      std::numeric_limits<float>::quiet_NaN()};
  // Whole panels of 16 (AVX2) and 32 (AVX-512) columns, then the values
  // again in a partial one.
  std::vector<float> xs = values;
  while (xs.size() % 32 != 0) xs.push_back(0.75f);
  const size_t whole = xs.size();
  xs.insert(xs.end(), values.begin(), values.end());
  ASSERT_NE(xs.size() % 16, 0u);
  ASSERT_GE(whole, values.size());
  const int64_t n = static_cast<int64_t>(xs.size());
  for (MatmulActivation act : {MatmulActivation::kGeluErf, MatmulActivation::kGeluTanh}) {
    MatmulConfig cfg = WeightGemm(1, n);
    cfg.activation = act;
    std::vector<float> a = {1.0f};  // C[0, j] = gelu(B[0, j])
    for (Isa isa : Cores()) {
      std::unique_ptr<SkinnyMatmul> skinny = MakeOrDie(cfg, isa);
      ASSERT_NE(skinny, nullptr);
      absl::StatusOr<PackedWeights> packed = skinny->PackB(xs.data());
      ASSERT_TRUE(packed.ok());
      std::vector<float> c(n);
      ASSERT_TRUE(skinny->Execute({1, 1, 1, n}, {a.data(), packed->data(), nullptr, nullptr, c.data()}).ok());
      for (int64_t j = 0; j < n; ++j) {
        double x = xs[j];
        double want = std::abs(x) > 1e10 ? (x > 0 ? x : 0.0) : GeluExact(x, act);
        double atol = act == MatmulActivation::kGeluErf && x < 0 ? 1.5e-7 * std::abs(x) : 0.0;
        if (std::abs(x) > 1e10) atol = 0.0;
        atol = std::max(atol, 1.2e-38);
        EXPECT_TRUE(Close(c[j], want, 1e-5, atol)) << IsaName(isa) << " gelu(" << x << ") = " << c[j] << ", want "
                                                   << want;
      }
      // Both panels' lanes go through the same operations.
      for (size_t j = 0; j < values.size(); ++j) {
        const bool same = std::memcmp(&c[j], &c[whole + j], sizeof(float)) == 0;
        EXPECT_TRUE(same || (std::isnan(c[j]) && std::isnan(c[whole + j])))
            << IsaName(isa) << " gelu(" << values[j] << "): " << c[j] << " in a whole panel, " << c[whole + j]
            << " in the last";
      }
    }
  }
}

TEST(SkinnyMatmulTest, NonFiniteInputsReachOnlyTheirOwnRow) {
  MatmulConfig cfg = WeightGemm(40, 40);
  for (Isa isa : Cores()) {
    std::unique_ptr<SkinnyMatmul> skinny = MakeOrDie(cfg, isa);
    ASSERT_NE(skinny, nullptr);
    std::vector<float> a = RandomFloats(3 * 40, 5), b = RandomFloats(40 * 40, 6);
    a[1 * 40 + 7] = std::numeric_limits<float>::quiet_NaN();
    a[2 * 40 + 3] = std::numeric_limits<float>::infinity();
    absl::StatusOr<PackedWeights> packed = skinny->PackB(b.data());
    ASSERT_TRUE(packed.ok());
    std::vector<float> c(3 * 40);
    ASSERT_TRUE(skinny->Execute({1, 3, 40, 40}, {a.data(), packed->data(), nullptr, nullptr, c.data()}).ok());
    for (int64_t j = 0; j < 40; ++j) {
      EXPECT_TRUE(std::isfinite(c[j])) << j;
      EXPECT_TRUE(std::isnan(c[40 + j])) << j;
      EXPECT_TRUE(std::isinf(c[80 + j])) << j;  // inf * b[3, j], every b nonzero
    }
  }
}

TEST(SkinnyMatmulTest, AppliesOnlyToTwoDimensionalRuntimeRowGemmsAndChecksItsCalls) {
  EXPECT_TRUE(SkinnyMatmul::Applies(WeightGemm(768, 768)));
  MatmulConfig static_m = WeightGemm(768, 768);
  static_m.m = 16;
  EXPECT_FALSE(SkinnyMatmul::Applies(static_m));
  MatmulConfig runtime_k = WeightGemm(kRuntimeDim, 768);
  EXPECT_FALSE(SkinnyMatmul::Applies(runtime_k));
  MatmulConfig batched = WeightGemm(64, 64);
  batched.batch = kRuntimeDim;
  EXPECT_FALSE(SkinnyMatmul::Applies(batched));
  ASSERT_FALSE(Cores().empty());
  absl::StatusOr<std::unique_ptr<SkinnyMatmul>> refused = SkinnyMatmul::Create(runtime_k, Cores().front());
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("static k and n"));

  std::unique_ptr<SkinnyMatmul> skinny = MakeOrDie(WeightGemm(8, 8), Cores().front());
  ASSERT_NE(skinny, nullptr);
  std::vector<float> a(8), b(64), c(8);
  absl::StatusOr<PackedWeights> packed = skinny->PackB(b.data());
  ASSERT_TRUE(packed.ok());
  absl::Status wrong_k = skinny->Execute({1, 1, 9, 8}, {a.data(), packed->data(), nullptr, nullptr, c.data()});
  EXPECT_THAT(std::string(wrong_k.message()), HasSubstr("cannot run m=1 k=9 n=8"));
  absl::Status stray_bias = skinny->Execute({1, 1, 8, 8}, {a.data(), packed->data(), b.data(), nullptr, c.data()});
  EXPECT_THAT(std::string(stray_bias.message()), HasSubstr("operands do not match"));
  EXPECT_FALSE(skinny->PackB(nullptr).ok());
  absl::StatusOr<std::unique_ptr<SkinnyMatmul>> negative =
      SkinnyMatmul::Create(WeightGemm(8, 8), Cores().front(), {.prefetch_rows = -1});
  ASSERT_FALSE(negative.ok());
  EXPECT_THAT(std::string(negative.status().message()), HasSubstr("prefetch distance -1 is negative"));
}

}  // namespace
}  // namespace shapeshift::codegen::cpu
