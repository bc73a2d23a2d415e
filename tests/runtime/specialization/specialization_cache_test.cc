// SpecializationCache: most-specific-first ordering, lookup, miss
// explanations and removal — on guard sets alone (no compiled programs).
#include "runtime/specialization/specialization_cache.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "shapes/predicate.h"

namespace shapeshift::runtime {
namespace {

GuardAtom Atom(const std::string& text, const std::string& pass = "test") {
  return GuardAtom{ParsePredicate(text).value(), Provenance{pass, "n1", "because"}};
}

std::shared_ptr<const CacheEntry> Insert(SpecializationCache& cache, Tier tier, std::vector<GuardAtom> guards) {
  absl::StatusOr<std::shared_ptr<const CacheEntry>> e = cache.Insert(tier, std::move(guards), nullptr);
  EXPECT_TRUE(e.ok()) << e.status();
  return e.ok() ? *e : nullptr;
}

TEST(SpecializationCacheTest, EntriesAreOrderedMostSpecificFirst) {
  SpecializationCache cache({"batch", "seq"});
  auto poly = Insert(cache, Tier::kPolymorphic, {});
  auto bucket_wide = Insert(cache, Tier::kBucketed, {Atom("seq <= 256")});
  auto exact = Insert(cache, Tier::kStatic, {Atom("seq == 37"), Atom("batch == 1")});
  auto bucket_narrow = Insert(cache, Tier::kBucketed, {Atom("seq <= 64"), Atom("seq % 16 == 0")});
  std::vector<int64_t> order;
  for (const auto& e : cache.entries()) order.push_back(e->id);
  EXPECT_EQ(order, (std::vector<int64_t>{exact->id, bucket_narrow->id, bucket_wide->id, poly->id}));
}

TEST(SpecializationCacheTest, FindReturnsTheMostSpecificPassingEntry) {
  SpecializationCache cache({"batch", "seq"});
  auto poly = Insert(cache, Tier::kPolymorphic, {});
  auto bucket = Insert(cache, Tier::kBucketed, {Atom("seq <= 64"), Atom("seq % 16 == 0")});
  auto exact = Insert(cache, Tier::kStatic, {Atom("seq == 32"), Atom("batch == 1")});
  std::vector<int64_t> v = {1, 32};
  EXPECT_EQ(cache.Find(v), exact);
  v = {2, 32};
  EXPECT_EQ(cache.Find(v), bucket);
  v = {2, 33};
  EXPECT_EQ(cache.Find(v), poly);
  ASSERT_TRUE(cache.Remove(poly->id));
  EXPECT_FALSE(cache.Remove(poly->id));
  EXPECT_EQ(cache.Find(v), nullptr);
  EXPECT_EQ(cache.size(), 2u);
}

TEST(SpecializationCacheTest, ExplainMissListsEveryFailingAtomPerEntry) {
  SpecializationCache cache({"batch", "seq"});
  auto bucket = Insert(cache, Tier::kBucketed, {Atom("seq <= 64", "memory-plan"), Atom("seq % 16 == 0", "codegen")});
  auto exact = Insert(cache, Tier::kStatic, {Atom("seq == 32"), Atom("batch == 1")});
  std::vector<int64_t> v = {2, 70};
  std::vector<EntryMiss> misses = cache.ExplainMiss(v);
  ASSERT_EQ(misses.size(), 2u);
  EXPECT_EQ(misses[0].entry, exact);
  EXPECT_EQ(misses[0].failing, (std::vector<size_t>{0, 1}));
  EXPECT_EQ(misses[1].entry, bucket);
  EXPECT_EQ(misses[1].failing, (std::vector<size_t>{0, 1}));
  EXPECT_EQ(misses[1].entry->guards[0].provenance.pass, "memory-plan");
  v = {2, 48};
  misses = cache.ExplainMiss(v);
  EXPECT_TRUE(misses[1].failing.empty());  // the bucket serves it
}

TEST(SpecializationCacheTest, ExactShapesComeFirstAndAreFoundByValue) {
  SpecializationCache cache({"batch", "seq"});
  auto wide_static = Insert(cache, Tier::kStatic, {Atom("seq <= 64"), Atom("batch == 1"), Atom("seq % 2 == 0")});
  std::vector<std::shared_ptr<const CacheEntry>> exact;
  for (int64_t seq = 1; seq <= 40; ++seq) {
    exact.push_back(Insert(cache, Tier::kStatic, {Atom("batch == 1"), Atom(absl::StrCat("seq == ", seq))}));
  }
  EXPECT_TRUE(wide_static->exact_shape.empty());
  EXPECT_EQ(exact[9]->exact_shape, (std::vector<int64_t>{1, 10}));
  EXPECT_EQ(cache.entries().front(), exact[0]);
  EXPECT_EQ(cache.entries().back(), wide_static);
  std::vector<int64_t> v = {1, 10};
  EXPECT_EQ(cache.Find(v), exact[9]);
  v = {1, 42};
  EXPECT_EQ(cache.Find(v), wide_static);
  v = {2, 10};
  EXPECT_EQ(cache.Find(v), nullptr);

  // A second entry for the same shape takes over when the first is removed.
  auto duplicate = Insert(cache, Tier::kStatic, {Atom("seq == 10"), Atom("batch == 1")});
  v = {1, 10};
  EXPECT_EQ(cache.Find(v), exact[9]);
  ASSERT_TRUE(cache.Remove(exact[9]->id));
  EXPECT_EQ(cache.Find(v), duplicate);
  ASSERT_TRUE(cache.Remove(duplicate->id));
  EXPECT_EQ(cache.Find(v), wide_static);
}

TEST(SpecializationCacheTest, GuardOnAnUnknownSymbolIsAnError) {
  SpecializationCache cache({"seq"});
  absl::StatusOr<std::shared_ptr<const CacheEntry>> e = cache.Insert(Tier::kBucketed, {Atom("batch <= 4")}, nullptr);
  EXPECT_FALSE(e.ok());
  EXPECT_EQ(cache.size(), 0u);
}

}  // namespace
}  // namespace shapeshift::runtime
