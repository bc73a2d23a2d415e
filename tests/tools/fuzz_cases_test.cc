// tools/fuzz_cases.h's draws: in-domain values are log-uniform over the
// declared range (every octave about equally likely), always inside it, and
// a default 1..65536 dim gives mostly small shapes with the far end still
// reached; generation is a pure function of the seed.
#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "tools/fuzz_cases.h"

namespace shapeshift::tools {
namespace {

int OctaveOf(int64_t v) { return v == 0 ? 0 : 64 - __builtin_clzll(static_cast<uint64_t>(v)); }

TEST(FuzzCasesTest, DrawsStayInTheRangeAndSpreadOverItsOctaves) {
  std::mt19937_64 rng(7);
  constexpr int kDraws = 17000;
  std::map<int, int> per_octave;  // 1..65536: octaves 1..17
  int at_most_256 = 0;
  for (int i = 0; i < kDraws; ++i) {
    const int64_t v = DrawInRange(1, 65536, rng);
    ASSERT_GE(v, 1);
    ASSERT_LE(v, 65536);
    ++per_octave[OctaveOf(v)];
    at_most_256 += v <= 256;
  }
  ASSERT_EQ(per_octave.size(), 17u);
  // 1000 expected per octave; the last holds only 65536 itself.
  for (const auto& [octave, n] : per_octave) {
    EXPECT_GT(n, 800) << "octave " << octave;
    EXPECT_LT(n, 1200) << "octave " << octave;
  }
  EXPECT_GT(at_most_256, kDraws * 2 / 5);  // a uniform draw: 0.4%
}

TEST(FuzzCasesTest, RangesWithZeroNarrowOrAtTheTopOfInt64AreDrawnInside) {
  std::mt19937_64 rng(11);
  for (const auto& [lo, hi] : std::vector<std::pair<int64_t, int64_t>>{
           {0, 0}, {0, 1}, {0, 100}, {5, 5}, {6, 7}, {100, 130}, {1000, 1 << 20}, {1, INT64_MAX}, {INT64_MAX - 3, INT64_MAX}}) {
    bool saw_lo = false, saw_hi = false;
    for (int i = 0; i < 4000; ++i) {
      const int64_t v = DrawInRange(lo, hi, rng);
      ASSERT_GE(v, lo) << lo << ".." << hi;
      ASSERT_LE(v, hi) << lo << ".." << hi;
      saw_lo |= v == lo, saw_hi |= v == hi;
    }
    // Narrow ranges are covered end to end.
    if (hi - lo < 40) {
      EXPECT_TRUE(saw_lo && saw_hi) << lo << ".." << hi;
    }
  }
  // 0 is an octave of its own: about 1 in 8 draws of 0..100.
  int zeros = 0;
  for (int i = 0; i < 8000; ++i) zeros += DrawInRange(0, 100, rng) == 0;
  EXPECT_GT(zeros, 700);
  EXPECT_LT(zeros, 1300);
}

TEST(FuzzCasesTest, TheSameSeedGivesTheSameCasesAndInDomainCasesAreInTheDomain) {
  FuzzDomain domain;
  domain.slots = {"batch", "sequence"};
  domain.min = {1, 1};
  domain.max = {65536, 65536};
  const std::vector<FuzzCase> a = GenerateCases(domain, 400, 5), b = GenerateCases(domain, 400, 5);
  ASSERT_EQ(a.size(), 400u);
  int in_domain = 0, small = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].values, b[i].values) << i;
    EXPECT_EQ(a[i].kind, b[i].kind) << i;
    if (a[i].kind != CaseKind::kInDomain) continue;
    ++in_domain;
    EXPECT_TRUE(domain.Contains(a[i].values)) << i;
    small += a[i].values[0] * a[i].values[1] <= 65536;
  }
  EXPECT_GT(in_domain, 200);
  // Uniform draws made batch x sequence <= 65536 about 1 case in 5000.
  EXPECT_GT(small, in_domain / 3);
}

}  // namespace
}  // namespace shapeshift::tools
