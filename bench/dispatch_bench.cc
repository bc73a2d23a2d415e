// Dispatch overhead (issue 5: < 1 µs per request): what the Dispatcher does
// per request before the artifact runs — bind the input dims to the
// symbols, check the declared ranges, evaluate the guard programs and look
// the entry up — against a realistic cache: the polymorphic entry, 8
// bucketed tier-ups (one per power-of-two bucket of seq at batch 1) and 3
// static tier-ups (shapes that dominate their bucket). The cache is built
// the way a server builds it: the auto policy's cost model tiers up from
// traffic (with a prior that makes every region pay, and no removal for
// lack of gain, so the cache is the same on every run).
//
// Run: build-*/bench/dispatch_bench (results: bench/RESULTS.md). Compare
// the three lookups: a static hit (one hash probe), a bucketed hit (static
// probe, then guard programs in order), and a request only the polymorphic
// entry serves (every specialized entry's guards are evaluated first).
//
// BM_RunTier/{0,1,2} measure what the tiers buy: one BERT-style request
// (examples/models/bert.h defaults, batch 1, seq 100) run by the
// polymorphic, the bucketed (65..128) and the static (seq == 100) artifact.
// Their ratios are the measurements behind TierUpOptions' speed-up priors
// (run on a quiet machine).
#include <cstdio>
#include <memory>
#include <vector>

#include "benchmark/benchmark.h"
#include "graph/graph.h"
#include "graph/shape_inference.h"
#include "graph/tensor.h"
#include "examples/models/bert.h"
#include "runtime/specialization/dispatcher.h"
#include "runtime/specialization/entry_compiler.h"

namespace shapeshift::runtime {
namespace {

// relu(x + y) over [batch 1..8, seq 1..128, 8]: the dispatch path does not
// depend on what the artifact computes, and this compiles fast.
std::unique_ptr<Dispatcher> MakeDispatcher() {
  auto graph = std::make_unique<Graph>(17);
  auto env = std::make_unique<ShapeEnv>();
  SymExpr batch = *env->DeclareSymbol({"batch", 1, 8});
  SymExpr seq = *env->DeclareSymbol({"seq", 1, 128});
  Value* x = graph->AddInput("x", TensorType(DType::kF32, {batch, seq, 8}));
  Value* y = graph->AddInput("y", TensorType(DType::kF32, {batch, seq, 8}));
  Node* add = graph->AddNode("Add", {x, y}, 1);
  if (!InferNode(*add, *env, 17).ok()) return nullptr;
  Node* relu = graph->AddNode("Relu", {add->output(0)}, 1);
  if (!InferNode(*relu, *env, 17).ok()) return nullptr;
  graph->AddOutput(relu->output(0));
  DispatcherOptions options;
  options.policy = SpecializationPolicy::kAuto;
  options.tier_up.min_requests = 2;
  options.tier_up.bucketed_speedup_prior = 1e6;  // every region pays
  options.tier_up.static_speedup_prior = 1e6;
  options.tier_up.min_measured_speedup = -1e9;  // keep every tier-up
  absl::StatusOr<std::unique_ptr<Dispatcher>> d =
      Dispatcher::Create(std::move(graph), std::move(env), options);
  return d.ok() ? *std::move(d) : nullptr;
}

struct Request {
  std::vector<Tensor> tensors;
  std::vector<TensorView> views;
  Request(int64_t batch, int64_t seq) {
    tensors.push_back(*Tensor::Zeros(DType::kF32, {batch, seq, 8}));
    tensors.push_back(*Tensor::Zeros(DType::kF32, {batch, seq, 8}));
    for (const Tensor& t : tensors) views.push_back(TensorView::Of(t));
  }
};

// Traffic that tiers up 8 seq buckets at batch 1 (several lengths each, so
// no shape dominates) and 3 dominant shapes at other batch sizes.
Dispatcher& Shared() {
  static Dispatcher* d = [] {
    std::unique_ptr<Dispatcher> made = MakeDispatcher();
    if (made == nullptr) {
      std::fprintf(stderr, "dispatch_bench: building the model failed\n");
      std::abort();
    }
    ExecutionContext ctx;
    auto serve = [&](int64_t batch, int64_t seq) {
      Request r(batch, seq);
      if (!made->Run(r.views, ctx).ok()) std::abort();
    };
    for (int round = 0; round < 3; ++round) {
      for (int64_t seq : {1, 2, 3, 4, 5, 8, 9, 16, 17, 32, 33, 64, 65, 128}) serve(1, seq);
      for (auto [batch, seq] : {std::pair<int64_t, int64_t>{2, 100}, {3, 50}, {6, 10}}) serve(batch, seq);
      made->WaitForTierUps();
    }
    std::fprintf(stderr, "dispatch_bench: %zu cache entries\n", made->cache().size());
    return made.release();
  }();
  return *d;
}

void AcquireLoop(benchmark::State& state, int64_t batch, int64_t seq, Tier want) {
  Dispatcher& d = Shared();
  Request r(batch, seq);
  absl::StatusOr<std::shared_ptr<const CacheEntry>> first = d.Acquire(r.views);
  if (!first.ok() || (*first)->tier != want) {
    state.SkipWithError("the request is not served by the expected tier");
    return;
  }
  for (auto _ : state) {
    absl::StatusOr<std::shared_ptr<const CacheEntry>> e = d.Acquire(r.views);
    benchmark::DoNotOptimize(e);
  }
  state.counters["entries"] = static_cast<double>(d.cache().size());
}

void BM_DispatchStaticHit(benchmark::State& state) { AcquireLoop(state, 2, 100, Tier::kStatic); }
BENCHMARK(BM_DispatchStaticHit);

void BM_DispatchBucketedHit(benchmark::State& state) { AcquireLoop(state, 1, 100, Tier::kBucketed); }
BENCHMARK(BM_DispatchBucketedHit);

void BM_DispatchPolymorphicFallthrough(benchmark::State& state) { AcquireLoop(state, 8, 77, Tier::kPolymorphic); }
BENCHMARK(BM_DispatchPolymorphicFallthrough);

// One BERT model compiled for each tier (built once, on first use).
struct TierArtifacts {
  ImportedModel model;
  std::vector<CompiledEntry> by_tier;  // indexed by Tier
};

const TierArtifacts& Tiers() {
  static const TierArtifacts* t = [] {
    examples::BertConfig config;
    absl::StatusOr<ImportedModel> model = examples::BuildBert(config);
    if (!model.ok()) {
      std::fprintf(stderr, "dispatch_bench: %s\n", std::string(model.status().message()).c_str());
      std::abort();
    }
    auto* out = new TierArtifacts{*std::move(model), {}};
    const std::vector<std::string> slots = {"batch", "seq"};
    BucketScheme buckets({}, {*out->model.env->FindSymbol("batch"), *out->model.env->FindSymbol("seq")});
    Z3Bridge z3;
    for (Tier tier : {Tier::kPolymorphic, Tier::kBucketed, Tier::kStatic}) {
      EntrySpec spec;
      spec.tier = tier;
      if (tier != Tier::kPolymorphic) spec.trigger = {1, 100};
      if (tier == Tier::kBucketed) {
        for (size_t i = 0; i < slots.size(); ++i) {
          spec.buckets.push_back(buckets.BucketOf(i, spec.trigger[i]));
          spec.bucket_reasons.push_back(buckets.Describe(i, spec.buckets.back()));
        }
      }
      absl::StatusOr<CompiledEntry> entry =
          CompileSpecializedEntry(*out->model.graph, *out->model.env, slots, spec, CompileOptions{}, z3);
      if (!entry.ok()) {
        std::fprintf(stderr, "dispatch_bench: %s\n", std::string(entry.status().message()).c_str());
        std::abort();
      }
      out->by_tier.push_back(*std::move(entry));
    }
    return out;
  }();
  return *t;
}

void BM_RunTier(benchmark::State& state) {
  const CompiledEntry& entry = Tiers().by_tier[state.range(0)];
  std::vector<Tensor> inputs = examples::MakeBertInputs(examples::BertConfig{}, 1, 100, 7);
  std::vector<TensorView> views;
  for (const Tensor& t : inputs) views.push_back(TensorView::Of(t));
  ExecutionContext ctx;
  for (auto _ : state) {
    absl::StatusOr<std::vector<Tensor>> out = entry.artifact->program->Run(views, ctx);
    if (!out.ok()) {
      state.SkipWithError(std::string(out.status().message()).c_str());
      return;
    }
    benchmark::DoNotOptimize(out);
  }
  state.SetLabel(TierName(static_cast<Tier>(state.range(0))));
}
BENCHMARK(BM_RunTier)->DenseRange(0, 2)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace shapeshift::runtime

BENCHMARK_MAIN();
