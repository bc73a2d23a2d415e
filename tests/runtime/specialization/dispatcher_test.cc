// Dispatcher: compile counts per policy on a small built graph, miss →
// compile → hit, explained misses (failing atom on `seq` with provenance),
// single-flight under 8 threads, and the recompile limit.
#include "runtime/specialization/dispatcher.h"

#include <set>
#include <thread>
#include <vector>

#include "graph/interpreter.h"
#include "gtest/gtest.h"
#include "tests/runtime/runtime_test_util.h"

namespace shapeshift::runtime {
namespace {

using testing::AddRelu;
using testing::BuiltModel;
using testing::RandomF32;

std::unique_ptr<Dispatcher> Make(SpecializationPolicy policy, int limit = 64) {
  BuiltModel model = AddRelu();  // x, y [batch 1..8, seq 1..64, 8] -> relu(x + y)
  DispatcherOptions options;
  options.policy = policy;
  options.recompile_limit = limit;
  absl::StatusOr<std::unique_ptr<Dispatcher>> d =
      Dispatcher::Create(std::move(model.graph), std::move(model.env), options);
  EXPECT_TRUE(d.ok()) << d.status();
  return d.ok() ? *std::move(d) : nullptr;
}

std::vector<Tensor> Inputs(int64_t batch, int64_t seq) {
  return {RandomF32({batch, seq, 8}, 1), RandomF32({batch, seq, 8}, 2)};
}

std::vector<TensorView> Views(const std::vector<Tensor>& tensors) {
  std::vector<TensorView> v;
  for (const Tensor& t : tensors) v.push_back(TensorView::Of(t));
  return v;
}

// Runs one request and checks it against the interpreter on the model.
void RunAndCheck(Dispatcher& d, int64_t batch, int64_t seq) {
  std::vector<Tensor> in = Inputs(batch, seq);
  ExecutionContext ctx;
  absl::StatusOr<std::vector<Tensor>> out = d.Run(Views(in), ctx);
  ASSERT_TRUE(out.ok()) << out.status();
  BuiltModel reference = AddRelu();
  absl::StatusOr<std::vector<Tensor>> want = Interpret(*reference.graph, in);
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_EQ((*out)[0].shape(), (*want)[0].shape());
  const float* got = (*out)[0].data<float>();
  const float* expected = (*want)[0].data<float>();
  for (int64_t i = 0; i < (*want)[0].num_elements(); ++i) ASSERT_FLOAT_EQ(got[i], expected[i]) << i;
}

TEST(DispatcherTest, PolymorphicPolicyCompilesOnceForEveryLength) {
  std::unique_ptr<Dispatcher> d = Make(SpecializationPolicy::kPolymorphic);
  ASSERT_NE(d, nullptr);
  for (int64_t seq = 1; seq <= 20; ++seq) RunAndCheck(*d, 1, seq);
  DispatcherStats s = d->stats();
  EXPECT_EQ(s.compiles, 1);
  EXPECT_EQ(s.misses, 0);
  std::vector<RecompileEvent> events = d->events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].trigger, RecompileTrigger::kInitial);
  EXPECT_EQ(events[0].new_tier, Tier::kPolymorphic);
  EXPECT_TRUE(events[0].new_guards.empty());
}

TEST(DispatcherTest, StaticPolicyReplayOverTwentyLengthsExplainsEveryMiss) {
  std::unique_ptr<Dispatcher> d = Make(SpecializationPolicy::kStatic);
  ASSERT_NE(d, nullptr);
  for (int64_t seq = 1; seq <= 20; ++seq) RunAndCheck(*d, 1, seq);
  for (int64_t seq = 1; seq <= 20; ++seq) RunAndCheck(*d, 1, seq);  // every length now hits
  DispatcherStats s = d->stats();
  EXPECT_EQ(s.compiles, 20);
  EXPECT_EQ(s.misses, 19);
  std::vector<RecompileEvent> events = d->events();
  ASSERT_EQ(events.size(), 20u);
  EXPECT_EQ(events[0].trigger, RecompileTrigger::kInitial);
  for (size_t i = 1; i < events.size(); ++i) {
    const RecompileEvent& e = events[i];
    EXPECT_EQ(e.trigger, RecompileTrigger::kMiss);
    EXPECT_EQ(e.sequence, static_cast<int64_t>(i) + 1);
    ASSERT_EQ(e.tried.size(), i);  // every earlier static entry was tried
    for (const TriedEntry& t : e.tried) {
      ASSERT_EQ(t.failing.size(), 1u) << "batch == 1 passes; only the seq pin fails";
      EXPECT_EQ(t.failing[0].atom.rfind("seq == ", 0), 0u) << t.failing[0].atom;
      EXPECT_EQ(t.failing[0].provenance.pass, "dispatcher");
      EXPECT_EQ(t.failing[0].provenance.reason, "static tier pins seq");
    }
    ASSERT_FALSE(e.unsat_core.empty());
    for (const AtomRecord& a : e.unsat_core) EXPECT_EQ(a.atom.rfind("seq == ", 0), 0u) << a.atom;
    std::vector<std::string> guards;
    for (const AtomRecord& a : e.new_guards) guards.push_back(a.atom);
    EXPECT_EQ(guards, (std::vector<std::string>{"batch == 1", absl::StrCat("seq == ", i + 1)}));
  }
}

TEST(DispatcherTest, BucketedPolicyCompilesOncePerPowerOfTwoBucket) {
  std::unique_ptr<Dispatcher> d = Make(SpecializationPolicy::kBucketed);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->stats().compiles, 0);  // bucketed compiles at the first request
  std::set<std::pair<int64_t, int64_t>> buckets;  // (batch bucket hi, seq bucket hi)
  for (int64_t seq = 1; seq <= 20; ++seq) {
    const int64_t batch = 1 + seq % 3;
    RunAndCheck(*d, batch, seq);
    buckets.insert({PowerOfTwoBucket(batch, 1, 8).hi, PowerOfTwoBucket(seq, 1, 64).hi});
  }
  for (int64_t seq = 1; seq <= 20; ++seq) RunAndCheck(*d, 1 + seq % 3, seq);  // all hits now
  EXPECT_EQ(d->stats().compiles, static_cast<int64_t>(buckets.size()));
  EXPECT_EQ(d->stats().misses, static_cast<int64_t>(buckets.size()) - 1);
  // The request seq=20, batch=3 was compiled for buckets 3..4 and 17..32;
  // bounds the declared range implies (batch >= 1) are dropped.
  bool found = false;
  for (const RecompileEvent& e : d->events()) {
    if (e.symbols[1].value != 17) continue;  // the first request of seq bucket 17..32
    found = true;
    EXPECT_EQ(e.new_tier, Tier::kBucketed);
    std::vector<std::string> atoms;
    for (const AtomRecord& a : e.new_guards) {
      atoms.push_back(a.atom);
      EXPECT_EQ(a.provenance.pass, "dispatcher");
    }
    EXPECT_EQ(atoms, (std::vector<std::string>{"batch >= 3", "batch <= 4", "seq >= 17", "seq <= 32"}));
    EXPECT_EQ(e.new_guards[2].provenance.reason, "power-of-two bucket 17..32 of seq");
  }
  EXPECT_TRUE(found);
}

// One kernel store per dispatcher: an entry whose kernels an earlier entry
// already compiled links them (no LLVM work), with no cache directory.
TEST(DispatcherTest, ALaterEntryLinksTheKernelsAnEarlierOneCompiled) {
  std::unique_ptr<Dispatcher> d = Make(SpecializationPolicy::kBucketed);
  ASSERT_NE(d, nullptr);
  RunAndCheck(*d, 1, 3);   // buckets 1, 3..4
  RunAndCheck(*d, 1, 7);   // buckets 1, 5..8: the same elementwise kernel
  RunAndCheck(*d, 1, 40);  // buckets 1, 33..64
  ASSERT_EQ(d->stats().compiles, 3);
  const std::vector<std::shared_ptr<const CacheEntry>> entries = d->cache().entries();
  int64_t compiled = 0, linked = 0;
  for (const auto& e : entries) {
    const ProgramStats& p = e->artifact->program->stats();
    EXPECT_GT(p.kernels, 0);
    compiled += p.llvm_compiles;
    linked += p.kernels_from_store;
  }
  // Whatever the first compile needed LLVM for, the later two linked.
  EXPECT_GT(compiled, 0);
  EXPECT_EQ(linked, 2 * compiled);
  EXPECT_EQ(d->stats().llvm_compiles, compiled);
}

TEST(DispatcherTest, LearnedBucketsFollowTheObservedLengths) {
  BuiltModel model = AddRelu();  // batch 1..8, seq 1..64
  DispatcherOptions options;
  options.policy = SpecializationPolicy::kBucketed;
  options.buckets.kind = BucketKind::kLearned;
  options.buckets.learned_buckets = 2;
  options.buckets.learned_min_samples = 4;
  absl::StatusOr<std::unique_ptr<Dispatcher>> d =
      Dispatcher::Create(std::move(model.graph), std::move(model.env), options);
  ASSERT_TRUE(d.ok()) << d.status();
  for (int i = 0; i < 4; ++i) RunAndCheck(**d, 1, 10);  // too few samples: power-of-two 9..16
  RunAndCheck(**d, 1, 40);  // the median is 10: buckets 1..10 and 11..64
  std::vector<RecompileEvent> events = (*d)->events();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].new_guards.back().provenance.reason, "power-of-two bucket 9..16 of seq");
  std::vector<std::string> atoms;
  for (const AtomRecord& a : events[1].new_guards) atoms.push_back(a.atom);
  EXPECT_EQ(atoms, (std::vector<std::string>{"batch <= 1", "seq >= 11"}));
  EXPECT_EQ(events[1].new_guards.back().provenance.reason, "learned bucket 11..64 of seq");
  RunAndCheck(**d, 1, 64);
  EXPECT_EQ((*d)->stats().compiles, 2) << "64 is in the learned bucket 11..64";
}

TEST(DispatcherTest, StaticEntryPinsTheDimsInItsGraphAndMatchesThePolymorphicEntry) {
  std::unique_ptr<Dispatcher> poly = Make(SpecializationPolicy::kPolymorphic);
  std::unique_ptr<Dispatcher> pinned = Make(SpecializationPolicy::kStatic);
  ASSERT_NE(poly, nullptr);
  ASSERT_NE(pinned, nullptr);
  std::vector<Tensor> in = Inputs(2, 37);
  absl::StatusOr<std::shared_ptr<const CacheEntry>> entry = pinned->Acquire(Views(in));
  ASSERT_TRUE(entry.ok()) << entry.status();
  // The static artifact's graph no longer mentions the symbols.
  for (const Value* v : (*entry)->artifact->graph->inputs()) {
    EXPECT_EQ(v->type().shape[0].AsConst(), 2) << v->name();
    EXPECT_EQ(v->type().shape[1].AsConst(), 37) << v->name();
  }
  ExecutionContext a, b;
  absl::StatusOr<std::vector<Tensor>> got = pinned->Run(Views(in), a);
  absl::StatusOr<std::vector<Tensor>> want = poly->Run(Views(in), b);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_EQ((*got)[0].shape(), (*want)[0].shape());
  for (int64_t i = 0; i < (*want)[0].num_elements(); ++i) {
    ASSERT_EQ((*got)[0].data<float>()[i], (*want)[0].data<float>()[i]) << i;
  }
}

TEST(DispatcherTest, MissCompilesThenHits) {
  std::unique_ptr<Dispatcher> d = Make(SpecializationPolicy::kStatic);
  ASSERT_NE(d, nullptr);
  std::vector<Tensor> in = Inputs(2, 7);
  absl::StatusOr<std::shared_ptr<const CacheEntry>> first = d->Acquire(Views(in));
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<std::shared_ptr<const CacheEntry>> again = d->Acquire(Views(in));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*first, *again);
  EXPECT_EQ(d->stats().compiles, 1);
  std::vector<Tensor> other = Inputs(3, 7);
  absl::StatusOr<std::shared_ptr<const CacheEntry>> miss = d->Acquire(Views(other));
  ASSERT_TRUE(miss.ok()) << miss.status();
  EXPECT_NE(*miss, *first);
  EXPECT_EQ(d->stats().misses, 1);
  const RecompileEvent e = d->events().back();
  ASSERT_EQ(e.unsat_core.size(), 1u);
  EXPECT_EQ(e.unsat_core[0].atom, "batch == 2");
}

TEST(DispatcherTest, ConcurrentRequestsForOneShapeShareOneCompile) {
  std::unique_ptr<Dispatcher> d = Make(SpecializationPolicy::kStatic);
  ASSERT_NE(d, nullptr);
  constexpr int kThreads = 8;
  std::vector<std::thread> threads;
  std::vector<absl::Status> results(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Two rounds: all threads on one shape, then 4 distinct shapes.
      for (int64_t seq : {9, 10 + t % 4}) {
        std::vector<Tensor> in = Inputs(1, seq);
        ExecutionContext ctx;
        absl::StatusOr<std::vector<Tensor>> out = d->Run(Views(in), ctx);
        if (!out.ok()) {
          results[t] = out.status();
          return;
        }
        if ((*out)[0].shape() != std::vector<int64_t>{1, seq, 8}) {
          results[t] = absl::InternalError("wrong output shape");
          return;
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (const absl::Status& s : results) EXPECT_TRUE(s.ok()) << s;
  DispatcherStats s = d->stats();
  EXPECT_EQ(s.compiles, 5);  // seq 9, 10, 11, 12, 13: one compile each
  EXPECT_EQ(d->cache().size(), 5u);
  EXPECT_EQ(d->events().size(), 5u);
}

TEST(DispatcherTest, AFailedCompileIsAnErrorForEveryRequestThatNeededIt) {
  BuiltModel model = AddRelu();
  DispatcherOptions options;
  options.policy = SpecializationPolicy::kStatic;
  options.compile.print_after = {"no-such-pass"};  // every compile fails in the pipeline
  absl::StatusOr<std::unique_ptr<Dispatcher>> d =
      Dispatcher::Create(std::move(model.graph), std::move(model.env), options);
  ASSERT_TRUE(d.ok()) << d.status();
  constexpr int kThreads = 8;
  std::vector<std::thread> threads;
  std::vector<absl::Status> results(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<Tensor> in = Inputs(1, 9);
      results[t] = (*d)->Acquire(Views(in)).status();
    });
  }
  for (std::thread& th : threads) th.join();
  for (const absl::Status& s : results) {
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find("compiling a static entry for batch=1 seq=9"), std::string::npos) << s;
    EXPECT_NE(s.message().find("no-such-pass"), std::string::npos) << s;
  }
  EXPECT_EQ((*d)->stats().compiles, 0);
  EXPECT_TRUE((*d)->events().empty());
  EXPECT_EQ((*d)->cache().size(), 0u);
}

TEST(DispatcherTest, AtTheRecompileLimitTheErrorSaysSoAndNamesTheFailingGuards) {
  std::unique_ptr<Dispatcher> d = Make(SpecializationPolicy::kStatic, /*limit=*/2);
  ASSERT_NE(d, nullptr);
  for (int64_t seq : {5, 6, 7}) RunAndCheck(*d, 1, seq);  // initial + 2 misses
  std::vector<Tensor> in = Inputs(1, 8);
  ExecutionContext ctx;
  absl::StatusOr<std::vector<Tensor>> out = d->Run(Views(in), ctx);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(out.status().message().find("recompile limit (2) reached"), std::string::npos) << out.status();
  EXPECT_NE(out.status().message().find("seq=8"), std::string::npos) << out.status();
  EXPECT_NE(out.status().message().find("seq == 5 [asked by dispatcher: static tier pins seq]"),
            std::string::npos)
      << out.status();
  DispatcherStats s = d->stats();
  EXPECT_EQ(s.compiles, 3);
  EXPECT_EQ(s.limit_errors, 1);
  RunAndCheck(*d, 1, 6);  // shapes already compiled are still served
}

TEST(DispatcherTest, BadInputsAreErrorsNotCompiles) {
  std::unique_ptr<Dispatcher> d = Make(SpecializationPolicy::kStatic);
  ASSERT_NE(d, nullptr);
  std::vector<Tensor> in = Inputs(1, 65);  // seq is declared 1..64
  absl::StatusOr<std::shared_ptr<const CacheEntry>> e = d->Acquire(Views(in));
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_NE(e.status().message().find("seq"), std::string::npos) << e.status();
  std::vector<Tensor> one = {RandomF32({1, 4, 8}, 1)};
  EXPECT_FALSE(d->Acquire(Views(one)).ok());
  EXPECT_EQ(d->stats().compiles, 0);
}

TEST(DispatcherTest, EventsGoToTheRecompileLog) {
  const std::string path = ::testing::TempDir() + "/dispatcher_recompile_log.jsonl";
  std::remove(path.c_str());
  absl::StatusOr<std::unique_ptr<RecompileLogWriter>> log = RecompileLogWriter::Open(path);
  ASSERT_TRUE(log.ok()) << log.status();
  BuiltModel model = AddRelu();
  DispatcherOptions options;
  options.policy = SpecializationPolicy::kStatic;
  options.log = log->get();
  absl::StatusOr<std::unique_ptr<Dispatcher>> d =
      Dispatcher::Create(std::move(model.graph), std::move(model.env), options);
  ASSERT_TRUE(d.ok()) << d.status();
  for (int64_t seq : {3, 4}) RunAndCheck(**d, 1, seq);
  absl::StatusOr<std::vector<RecompileEvent>> events = ReadRecompileLog(path);
  ASSERT_TRUE(events.ok()) << events.status();
  ASSERT_EQ(events->size(), 2u);
  EXPECT_EQ((*events)[1].trigger, RecompileTrigger::kMiss);
  EXPECT_EQ((*events)[1].unsat_core[0].atom, "seq == 3");
  std::remove(path.c_str());
}

}  // namespace
}  // namespace shapeshift::runtime
