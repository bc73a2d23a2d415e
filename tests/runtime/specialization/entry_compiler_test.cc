// CompileSpecializedEntry: bucket bounds become guards (and the compile's
// range), static entries pin the graph, and widening (ServedIntervals)
// never lets an entry serve a shape it computes wrongly: at the edges of
// its interval it matches the interpreter, just outside them it rejects.
#include "runtime/specialization/entry_compiler.h"

#include "graph/interpreter.h"
#include "gtest/gtest.h"
#include "runtime/specialization/pin_dims.h"
#include "tests/runtime/runtime_test_util.h"

namespace shapeshift::runtime {
namespace {

using testing::BuiltModel;

EntrySpec BucketedSpec(const std::vector<std::string>& slots, const std::vector<SymbolInfo>& ranges,
                       std::vector<int64_t> trigger) {
  BucketScheme scheme({}, ranges);
  EntrySpec spec;
  spec.tier = Tier::kBucketed;
  spec.trigger = std::move(trigger);
  for (size_t i = 0; i < slots.size(); ++i) {
    spec.buckets.push_back(scheme.BucketOf(i, spec.trigger[i]));
    spec.bucket_reasons.push_back(scheme.Describe(i, spec.buckets.back()));
  }
  return spec;
}

// Runs `entry` on encoder inputs of length `seq` and compares with the
// interpreter on the original model.
void ExpectEncoderMatches(const CompiledEntry& entry, const Graph& model, int64_t seq) {
  std::vector<Tensor> in = testing::TokenInputs(1, seq, 50, static_cast<uint32_t>(seq));
  std::vector<TensorView> views;
  for (const Tensor& t : in) views.push_back(TensorView::Of(t));
  ExecutionContext ctx;
  absl::StatusOr<std::vector<Tensor>> got = entry.artifact->program->Run(views, ctx);
  ASSERT_TRUE(got.ok()) << "seq=" << seq << ": " << got.status();
  absl::StatusOr<std::vector<Tensor>> want = Interpret(model, in);
  ASSERT_TRUE(want.ok()) << want.status();
  EXPECT_LT(testing::MaxAbsDiff((*got)[0], (*want)[0]), 1e-3) << "seq=" << seq;
}

TEST(EntryCompilerTest, WidenedBucketedEntryIsCorrectAtItsEdgesAndRejectsBeyondThem) {
  BuiltModel model = testing::MiniEncoder(/*max_seq=*/256);  // batch 1..4, seq 1..256
  const std::vector<std::string> slots = {"batch", "seq"};
  const std::vector<SymbolInfo> ranges = {*model.env->FindSymbol("batch"), *model.env->FindSymbol("seq")};
  Z3Bridge z3;
  absl::StatusOr<CompiledEntry> entry = CompileSpecializedEntry(
      *model.graph, *model.env, slots, BucketedSpec(slots, ranges, {1, 100}), CompileOptions{}, z3);
  ASSERT_TRUE(entry.ok()) << entry.status();
  EXPECT_EQ(entry->tier, Tier::kBucketed);
  // Widening keeps the bucket bounds (facts proven from the bucket range
  // were not recorded), so the interval stays inside 65..128.
  ASSERT_EQ(entry->serves.size(), 2u);
  const Interval seq = entry->serves[1];
  EXPECT_LE(seq.lo, 100);
  EXPECT_GE(seq.hi, 100);
  EXPECT_GE(seq.lo, 65);
  EXPECT_LE(seq.hi, 128);
  EXPECT_EQ(entry->serves[0].lo, 1);
  EXPECT_EQ(entry->serves[0].hi, 1);

  SpecializationCache cache(slots);
  absl::StatusOr<std::shared_ptr<const CacheEntry>> inserted =
      cache.Insert(entry->tier, entry->guards, entry->artifact);
  ASSERT_TRUE(inserted.ok()) << inserted.status();
  for (int64_t edge : {seq.lo, seq.hi}) {
    EXPECT_NE(cache.Find(std::vector<int64_t>{1, edge}), nullptr) << edge;
    ExpectEncoderMatches(*entry, *model.graph, edge);
  }
  EXPECT_EQ(cache.Find(std::vector<int64_t>{1, seq.lo - 1}), nullptr);
  EXPECT_EQ(cache.Find(std::vector<int64_t>{1, seq.hi + 1}), nullptr);
  EXPECT_EQ(cache.Find(std::vector<int64_t>{2, 100}), nullptr);
}

TEST(EntryCompilerTest, BucketBoundsComeFirstWithTheirProvenance) {
  BuiltModel model = testing::AddRelu();  // batch 1..8, seq 1..64
  const std::vector<std::string> slots = {"batch", "seq"};
  const std::vector<SymbolInfo> ranges = {*model.env->FindSymbol("batch"), *model.env->FindSymbol("seq")};
  Z3Bridge z3;
  absl::StatusOr<CompiledEntry> entry = CompileSpecializedEntry(
      *model.graph, *model.env, slots, BucketedSpec(slots, ranges, {5, 40}), CompileOptions{}, z3);
  ASSERT_TRUE(entry.ok()) << entry.status();
  // batch <= 8 and seq <= 64 are the declared range's: dropped.
  ASSERT_EQ(entry->guards.size(), 2u);
  EXPECT_EQ(entry->guards[0].predicate.ToString(), "batch >= 5");
  EXPECT_EQ(entry->guards[1].predicate.ToString(), "seq >= 33");
  EXPECT_EQ(entry->guards[1].provenance.pass, "dispatcher");
  EXPECT_EQ(entry->guards[1].provenance.reason, "power-of-two bucket 33..64 of seq");
  // The compile's env declares the bucket as the range.
  EXPECT_EQ(entry->artifact->env->FindSymbol("seq")->min, 33);
  EXPECT_EQ(entry->artifact->env->FindSymbol("seq")->max, 64);
  EXPECT_EQ(entry->serves[1].lo, 33);
  EXPECT_EQ(entry->serves[1].hi, 64);
}

TEST(EntryCompilerTest, StaticEntryPinsEveryDimAndGuardsOnThePin) {
  BuiltModel model = testing::MiniEncoder(/*max_seq=*/64);
  const std::vector<std::string> slots = {"batch", "seq"};
  EntrySpec spec;
  spec.tier = Tier::kStatic;
  spec.trigger = {1, 37};
  Z3Bridge z3;
  absl::StatusOr<CompiledEntry> entry = CompileSpecializedEntry(*model.graph, *model.env, slots, spec, {}, z3);
  ASSERT_TRUE(entry.ok()) << entry.status();
  EXPECT_EQ(entry->tier, Tier::kStatic);
  ASSERT_EQ(entry->guards.size(), 2u);
  EXPECT_EQ(entry->guards[1].predicate.ToString(), "seq == 37");
  EXPECT_EQ(entry->guards[1].provenance.pass, "dispatcher");
  EXPECT_EQ(entry->guards[1].provenance.reason, "static tier pins seq");
  for (const Value* v : entry->artifact->graph->inputs()) {
    for (const SymExpr& d : v->type().shape) EXPECT_TRUE(d.AsConst().has_value()) << v->name();
  }
  EXPECT_EQ(entry->serves[1].lo, 37);
  EXPECT_EQ(entry->serves[1].hi, 37);
  ExpectEncoderMatches(*entry, *model.graph, 37);
}

TEST(EntryCompilerTest, ATriggerOutsideItsBucketIsAnError) {
  BuiltModel model = testing::AddRelu();
  EntrySpec spec;
  spec.tier = Tier::kBucketed;
  spec.trigger = {1, 40};
  spec.buckets = {{1, 1}, {1, 8}};
  spec.bucket_reasons = {"b", "s"};
  Z3Bridge z3;
  absl::StatusOr<CompiledEntry> entry =
      CompileSpecializedEntry(*model.graph, *model.env, {"batch", "seq"}, spec, {}, z3);
  ASSERT_FALSE(entry.ok());
  EXPECT_NE(entry.status().message().find("does not hold the trigger value 40"), std::string::npos) << entry.status();
}

TEST(PinDimsTest, EverySymbolicDimOfThePinnedSymbolBecomesConstant) {
  BuiltModel model = testing::MiniEncoder(/*max_seq=*/64);
  ASSERT_TRUE(PinDims(*model.graph, {{"seq", 9}}).ok());
  for (Node* n : model.graph->nodes()) {
    for (const Value* v : n->outputs()) {
      for (const SymExpr& d : v->type().shape) {
        EXPECT_EQ(d.Symbols().count("seq"), 0u) << v->name() << " still has " << d.ToString();
      }
    }
  }
  EXPECT_EQ(model.graph->inputs()[0]->type().shape[1].AsConst(), 9);
  EXPECT_FALSE(model.graph->inputs()[0]->type().shape[0].AsConst().has_value()) << "batch is not pinned";
}

}  // namespace
}  // namespace shapeshift::runtime
