// Policy and tier names: parse(name(x)) == x, and unknown text is an error
// listing the accepted values (what `--policy` users see).
#include "runtime/specialization/policy.h"

#include "gtest/gtest.h"

namespace shapeshift::runtime {
namespace {

TEST(PolicyTest, NamesRoundTrip) {
  for (SpecializationPolicy p : {SpecializationPolicy::kPolymorphic, SpecializationPolicy::kBucketed,
                                 SpecializationPolicy::kStatic, SpecializationPolicy::kAuto}) {
    absl::StatusOr<SpecializationPolicy> back = ParseSpecializationPolicy(SpecializationPolicyName(p));
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, p);
  }
  for (Tier t : {Tier::kPolymorphic, Tier::kBucketed, Tier::kStatic}) {
    absl::StatusOr<Tier> back = ParseTier(TierName(t));
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, t);
  }
}

TEST(PolicyTest, UnknownPolicyNamesTheAcceptedValues) {
  absl::StatusOr<SpecializationPolicy> p = ParseSpecializationPolicy("eager");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("'eager'"), std::string::npos) << p.status();
  EXPECT_NE(p.status().message().find("polymorphic, bucketed, static or auto"), std::string::npos) << p.status();
  EXPECT_FALSE(ParseTier("auto").ok());  // auto is a policy, not a tier
}

TEST(PolicyTest, EachTierSpecializesItsSymbolsAccordingly) {
  EXPECT_EQ(SymbolPolicyFor(Tier::kPolymorphic), SymbolPolicy::kPolymorphic);
  EXPECT_EQ(SymbolPolicyFor(Tier::kBucketed), SymbolPolicy::kBucketed);
  EXPECT_EQ(SymbolPolicyFor(Tier::kStatic), SymbolPolicy::kStatic);
}

}  // namespace
}  // namespace shapeshift::runtime
