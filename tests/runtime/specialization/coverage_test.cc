// Cache coverage: Z3 proves the entries cover the declared domain, or
// returns a real shape no entry serves.
#include "runtime/specialization/coverage.h"

#include "gtest/gtest.h"
#include "runtime/specialization/dispatcher.h"
#include "tests/runtime/runtime_test_util.h"

namespace shapeshift::runtime {
namespace {

GuardAtom Atom(const std::string& text) { return GuardAtom{ParsePredicate(text).value(), Provenance{"t", "", "r"}}; }

TEST(CoverageTest, GapBetweenBucketsIsAWitness) {
  SpecializationCache cache({"seq"});
  ASSERT_TRUE(cache.Insert(Tier::kBucketed, {Atom("seq <= 128")}, nullptr).ok());
  ASSERT_TRUE(cache.Insert(Tier::kBucketed, {Atom("seq > 128"), Atom("seq % 16 == 0")}, nullptr).ok());
  Z3Bridge z3;
  CoverageResult r = ProveCacheCoverage(cache, ParsePredicate("1 <= seq && seq <= 512").value(), z3);
  ASSERT_EQ(r.verdict, Verdict::kRefuted) << r.detail;
  const int64_t seq = r.witness.at("seq");
  EXPECT_GT(seq, 128);
  EXPECT_NE(seq % 16, 0);
  std::vector<int64_t> v = {seq};
  EXPECT_EQ(cache.Find(v), nullptr);
}

std::unique_ptr<Dispatcher> Make(SpecializationPolicy policy) {
  testing::BuiltModel model = testing::AddRelu();  // batch 1..8, seq 1..64
  DispatcherOptions options;
  options.policy = policy;
  absl::StatusOr<std::unique_ptr<Dispatcher>> d =
      Dispatcher::Create(std::move(model.graph), std::move(model.env), options);
  EXPECT_TRUE(d.ok()) << d.status();
  return d.ok() ? *std::move(d) : nullptr;
}

TEST(CoverageTest, PolymorphicEntryCoversTheDomain) {
  std::unique_ptr<Dispatcher> d = Make(SpecializationPolicy::kPolymorphic);
  ASSERT_NE(d, nullptr);
  Z3Bridge z3;
  EXPECT_EQ(ProveCacheCoverage(d->cache(), d->env().DomainPredicate(), z3).verdict, Verdict::kProven);
}

TEST(CoverageTest, StaticEntriesLeaveAShapeThatWouldCompile) {
  std::unique_ptr<Dispatcher> d = Make(SpecializationPolicy::kStatic);
  ASSERT_NE(d, nullptr);
  for (int64_t seq : {3, 4}) {
    std::vector<Tensor> in = {testing::RandomF32({1, seq, 8}, 1), testing::RandomF32({1, seq, 8}, 2)};
    std::vector<TensorView> views = {TensorView::Of(in[0]), TensorView::Of(in[1])};
    ASSERT_TRUE(d->Acquire(views).ok());
  }
  Z3Bridge z3;
  CoverageResult r = ProveCacheCoverage(d->cache(), d->env().DomainPredicate(), z3);
  ASSERT_EQ(r.verdict, Verdict::kRefuted) << r.detail;
  std::vector<int64_t> v;
  for (const std::string& slot : d->slots()) v.push_back(r.witness.at(slot));
  EXPECT_EQ(d->cache().Find(v), nullptr);
  EXPECT_GE(r.witness.at("batch"), 1);
  EXPECT_LE(r.witness.at("batch"), 8);
  EXPECT_GE(r.witness.at("seq"), 1);
  EXPECT_LE(r.witness.at("seq"), 64);
}

}  // namespace
}  // namespace shapeshift::runtime
