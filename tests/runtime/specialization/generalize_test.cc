// Guard generalization: implied atoms are dropped with their survivors'
// provenance intact; contradictions are errors.
#include "runtime/specialization/generalize.h"

#include "gtest/gtest.h"
#include "runtime/specialization/specialization_cache.h"

namespace shapeshift::runtime {
namespace {

GuardAtom Atom(const std::string& text, const std::string& pass) {
  return GuardAtom{ParsePredicate(text).value(), Provenance{pass, "", "test"}};
}

Predicate Domain() { return ParsePredicate("1 <= seq && seq <= 512").value(); }

TEST(GeneralizeTest, AtomImpliedByAPinIsDropped) {
  Z3Bridge z3;
  absl::StatusOr<std::vector<GuardAtom>> kept =
      DropImpliedAtoms(Domain(), {Atom("seq == 37", "dispatcher"), Atom("seq <= 64", "memory-plan")}, z3);
  ASSERT_TRUE(kept.ok()) << kept.status();
  ASSERT_EQ(kept->size(), 1u);
  EXPECT_EQ((*kept)[0].predicate.ToString(), "seq == 37");
  EXPECT_EQ((*kept)[0].provenance.pass, "dispatcher");
}

TEST(GeneralizeTest, AtomImpliedByTheDomainIsDropped) {
  Z3Bridge z3;
  absl::StatusOr<std::vector<GuardAtom>> kept =
      DropImpliedAtoms(Domain(), {Atom("seq <= 1000", "fusion"), Atom("seq % 16 == 0", "codegen")}, z3);
  ASSERT_TRUE(kept.ok()) << kept.status();
  ASSERT_EQ(kept->size(), 1u);
  EXPECT_EQ((*kept)[0].provenance.pass, "codegen");
}

TEST(GeneralizeTest, IndependentAtomsAreKept) {
  Z3Bridge z3;
  absl::StatusOr<std::vector<GuardAtom>> kept =
      DropImpliedAtoms(Domain(), {Atom("seq <= 64", "a"), Atom("seq % 16 == 0", "b")}, z3);
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_EQ(kept->size(), 2u);
}

TEST(GeneralizeTest, ContradictionIsAnError) {
  Z3Bridge z3;
  absl::StatusOr<std::vector<GuardAtom>> kept =
      DropImpliedAtoms(Domain(), {Atom("seq <= 16", "a"), Atom("seq > 32", "b")}, z3);
  ASSERT_FALSE(kept.ok());
  EXPECT_NE(kept.status().message().find("contradicts"), std::string::npos) << kept.status();
}

std::shared_ptr<const CacheEntry> Insert(SpecializationCache& cache, Tier tier, std::vector<GuardAtom> guards) {
  absl::StatusOr<std::shared_ptr<const CacheEntry>> e = cache.Insert(tier, std::move(guards), nullptr);
  EXPECT_TRUE(e.ok()) << e.status();
  return e.ok() ? *e : nullptr;
}

TEST(GeneralizeTest, LowerTierEntryInsideANewEntrysRegionIsSubsumed) {
  Z3Bridge z3;
  SpecializationCache cache({"seq"});
  auto narrow_bucket = Insert(cache, Tier::kBucketed, {Atom("seq <= 64", "a"), Atom("seq % 16 == 0", "b")});
  auto other_bucket = Insert(cache, Tier::kBucketed, {Atom("seq > 64", "a")});
  auto exact = Insert(cache, Tier::kStatic, {Atom("seq == 32", "dispatcher")});
  auto wide_bucket = Insert(cache, Tier::kBucketed, {Atom("seq <= 128", "a")});
  // The static entry is faster and the narrow bucket has more facts: both stay.
  EXPECT_TRUE(SubsumedEntries(Domain(), *wide_bucket, cache.entries(), z3).empty());

  auto same_region = Insert(cache, Tier::kBucketed, {Atom("seq < 129", "c")});
  EXPECT_EQ(SubsumedEntries(Domain(), *same_region, cache.entries(), z3),
            (std::vector<int64_t>{wide_bucket->id}));

  auto everything = Insert(cache, Tier::kPolymorphic, {});
  EXPECT_TRUE(SubsumedEntries(Domain(), *everything, cache.entries(), z3).empty());
  auto static_region = Insert(cache, Tier::kStatic, {Atom("seq <= 64", "d"), Atom("seq % 16 == 0", "d")});
  std::vector<int64_t> subsumed = SubsumedEntries(Domain(), *static_region, cache.entries(), z3);
  EXPECT_EQ(subsumed, (std::vector<int64_t>{narrow_bucket->id}));
  (void)other_bucket;
  (void)exact;
}

}  // namespace
}  // namespace shapeshift::runtime
