// BucketScheme: power-of-two buckets clipped to the declared range, and
// learned buckets at the quantiles of the observed lengths.
#include "runtime/specialization/bucket.h"

#include "gtest/gtest.h"

namespace shapeshift::runtime {
namespace {

TEST(BucketTest, PowersOfTwoAreOneTwoThreeToFourFiveToEight) {
  EXPECT_EQ(PowerOfTwoBucket(1, 1, 512), (Bucket{1, 1}));
  EXPECT_EQ(PowerOfTwoBucket(2, 1, 512), (Bucket{2, 2}));
  EXPECT_EQ(PowerOfTwoBucket(3, 1, 512), (Bucket{3, 4}));
  EXPECT_EQ(PowerOfTwoBucket(4, 1, 512), (Bucket{3, 4}));
  EXPECT_EQ(PowerOfTwoBucket(5, 1, 512), (Bucket{5, 8}));
  EXPECT_EQ(PowerOfTwoBucket(100, 1, 512), (Bucket{65, 128}));
  EXPECT_EQ(PowerOfTwoBucket(512, 1, 512), (Bucket{257, 512}));
}

TEST(BucketTest, PowersOfTwoAreClippedToTheDeclaredRange) {
  EXPECT_EQ(PowerOfTwoBucket(100, 1, 100), (Bucket{65, 100}));
  EXPECT_EQ(PowerOfTwoBucket(70, 70, 500), (Bucket{70, 128}));
  EXPECT_EQ(PowerOfTwoBucket(0, 0, 8), (Bucket{0, 0}));  // an empty KV cache
  EXPECT_EQ(PowerOfTwoBucket(1, 0, 8), (Bucket{1, 1}));
  EXPECT_EQ(PowerOfTwoBucket(-3, -5, 8), (Bucket{-5, 0}));
}

TEST(BucketTest, DescribeNamesTheSchemeBoundsAndSymbol) {
  BucketScheme scheme({}, {{"batch", 1, 8}, {"seq", 1, 512}});
  const Bucket b = scheme.BucketOf(1, 100);
  EXPECT_EQ(b, (Bucket{65, 128}));
  EXPECT_EQ(scheme.Describe(1, b), "power-of-two bucket 65..128 of seq");
}

TEST(BucketTest, LearnedUsesPowersOfTwoUntilEnoughSamples) {
  BucketOptions options;
  options.kind = BucketKind::kLearned;
  options.learned_min_samples = 10;
  BucketScheme scheme(options, {{"seq", 1, 512}});
  for (int i = 0; i < 9; ++i) scheme.Observe(0, 100);
  EXPECT_EQ(scheme.BucketOf(0, 100), (Bucket{65, 128}));
  EXPECT_FALSE(scheme.BucketOf(0, 100).learned);
}

TEST(BucketTest, LearnedBoundariesAreQuantilesOfTheObservedLengths) {
  BucketOptions options;
  options.kind = BucketKind::kLearned;
  options.learned_buckets = 4;
  options.learned_min_samples = 8;
  BucketScheme scheme(options, {{"seq", 1, 512}});
  // A quarter of the traffic at each of 10, 20, 30 and 40.
  for (int64_t v : {10, 20, 30, 40}) {
    for (int i = 0; i < 25; ++i) scheme.Observe(0, v);
  }
  EXPECT_EQ(scheme.BucketOf(0, 5), (Bucket{1, 10}));
  EXPECT_EQ(scheme.BucketOf(0, 10), (Bucket{1, 10}));
  EXPECT_EQ(scheme.BucketOf(0, 15), (Bucket{11, 20}));
  EXPECT_EQ(scheme.BucketOf(0, 30), (Bucket{21, 30}));
  EXPECT_EQ(scheme.BucketOf(0, 35), (Bucket{31, 512}));
  EXPECT_EQ(scheme.BucketOf(0, 512), (Bucket{31, 512}));
  EXPECT_TRUE(scheme.BucketOf(0, 35).learned);
  EXPECT_EQ(scheme.Describe(0, scheme.BucketOf(0, 15)), "learned bucket 11..20 of seq");
}

TEST(BucketTest, BucketKindNamesRoundTrip) {
  for (BucketKind k : {BucketKind::kPowersOfTwo, BucketKind::kLearned}) {
    EXPECT_EQ(*ParseBucketKind(BucketKindName(k)), k);
  }
  absl::StatusOr<BucketKind> bad = ParseBucketKind("fibonacci");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("fibonacci"), std::string::npos);
}

}  // namespace
}  // namespace shapeshift::runtime
