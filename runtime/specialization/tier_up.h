// TierUpModel: the `auto` policy's cost model — when does compiling a
// specialized artifact for a region of shapes repay its compile time?
//
// Why a model and not a threshold: a tier-up costs a compile (tens of ms to
// seconds) and pays back a fraction of every later request's latency in
// its region, so whether it is worth it depends on traffic, latency and
// how much faster the tier actually is — all measured here, none guessed
// once and for all.
//
// The model (per region; a region is one bucket of the BucketScheme, so at
// most one tier-up per bucket that saw traffic):
//  - traffic: requests counted per region and per exact shape in it; the
//    count so far predicts the traffic still to come (a region that saw n
//    requests is expected to see about n more).
//  - latency: an EWMA of the latency of the requests the region's current
//    best entry served (per region, and per exact shape).
//  - speed-up: per tier, the expected fraction of latency a tier-up saves —
//    a prior (TierUpOptions; bench/dispatch_bench and model runs measure
//    it) updated online from what each tier-up actually measured.
//  - compile time: an EWMA of observed compile times (the initial compile
//    seeds it).
//  Tier up when  requests × latency × speed-up  >  estimated compile time,
//  and the region saw at least `min_requests`. The tier is static (that one
//  shape) when one exact shape carries at least `static_dominance` of the
//  region's traffic, else bucketed (the whole bucket).
//  - verdict: a tier-up serves `probation_requests` requests; its mean
//    latency is compared with the latency it replaced (the shape's, for a
//    static tier-up). Below `min_measured_speedup` it is removed (an entry
//    subsumed with no speed benefit) and its region is never retried.
//
// The model never compiles or times anything itself: the Dispatcher feeds it
// latencies and compile times (from an injectable clock, so tests are
// deterministic) and runs the tier-ups it asks for on its background thread.
//
// Thread-safety: every method may be called concurrently (one mutex).
#ifndef SHAPESHIFT_RUNTIME_SPECIALIZATION_TIER_UP_H_
#define SHAPESHIFT_RUNTIME_SPECIALIZATION_TIER_UP_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "runtime/specialization/policy.h"
#include "runtime/specialization/recompile_event.h"
#include "runtime/specialization/shape_key.h"

namespace shapeshift::runtime {

struct TierUpOptions {
  // Expected fraction of a request's latency a tier-up saves (priors).
  // Measured on the quiet 2-core machine (2026-11-30, `build/bench/dispatch_bench
  // --benchmark_filter=BM_RunTier --benchmark_repetitions=3`, medians): one
  // BERT-style request at batch 1 × seq 100 takes 4.22 ms polymorphic,
  // 4.08 ms bucketed (65..128), 3.75 ms static — 3% and 11%.
  double bucketed_speedup_prior = 0.03;
  double static_speedup_prior = 0.11;
  int64_t min_requests = 32;           // a region is not tiered up before this
  double static_dominance = 0.9;       // one shape's share of a region for a static tier-up
  int probation_requests = 8;          // requests a tier-up serves before its verdict
  double min_measured_speedup = 0.02;  // a tier-up saving less is removed
  double latency_ewma_weight = 0.1;    // weight of each new latency sample
  double compile_ewma_weight = 0.5;    // weight of each new compile time
  double speedup_learning_weight = 0.5;  // weight of a measured speed-up on the prior
  double compile_ms_prior = 0;         // until a compile is observed; 0 = tier up on traffic alone
  int max_tier_ups = 64;               // across all regions
};

// A background compile the model asks for.
struct TierUpJob {
  Tier tier = Tier::kBucketed;
  std::vector<int64_t> region;   // the region key (bucket bounds lo0, hi0, lo1, hi1, ...)
  std::vector<int64_t> trigger;  // slot values to compile for
  TierUpCost cost;               // the numbers that decided it (for the event)
};

// What one served request asks of the dispatcher.
struct TierUpOutcome {
  std::optional<TierUpJob> compile;
  int64_t remove_entry = 0;  // an entry that measured no gain (0 = none)
};

class TierUpModel {
 public:
  explicit TierUpModel(TierUpOptions options);

  // One request of `region` with slot values `shape`, served in
  // `latency_ms` by entry `entry_id`.
  TierUpOutcome Record(absl::Span<const int64_t> region, absl::Span<const int64_t> shape, int64_t entry_id,
                       double latency_ms);
  // A compile finished in `ms` (any trigger): updates the compile estimate.
  void ObserveCompile(double ms);
  // The tier-up for `region` is in the cache as `entry_id` (its probation
  // starts), or failed (the region is not retried).
  void TierUpReady(absl::Span<const int64_t> region, int64_t entry_id);
  void TierUpFailed(absl::Span<const int64_t> region);
  // `region` already has a specialized entry (re-created from the persistent
  // cache): it is not tiered up again.
  void AlreadySpecialized(absl::Span<const int64_t> region);

  // The current expected speed-up of `tier` (prior, updated online).
  double ExpectedSpeedup(Tier tier) const;
  double EstimatedCompileMs() const;
  int64_t tier_ups() const;   // compiles asked for
  int64_t reverted() const;   // tier-ups removed for no gain

 private:
  struct ShapeStats {
    int64_t requests = 0;
    double latency_ms = 0;  // EWMA; valid when requests > 0
  };
  enum class State { kObserving, kCompiling, kProbation, kKept, kRejected };
  struct Region {
    int64_t requests = 0;
    int64_t baseline_requests = 0;  // requests served by entries other than the tier-up
    double latency_ms = 0;          // EWMA over those
    ShapeKeyMap<ShapeStats> shapes;  // capped (see .cc)
    State state = State::kObserving;
    Tier tier = Tier::kBucketed;  // of the tier-up
    std::vector<int64_t> shape;   // a static tier-up's shape
    double baseline_ms = 0;       // the latency the tier-up replaces
    int64_t entry_id = 0;
    int probation_seen = 0;
    double probation_ms = 0;  // sum
  };
  // Probation bookkeeping for a request the tier-up served; may revert it.
  void Judge(Region& r, double latency_ms, TierUpOutcome& out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::optional<TierUpJob> Decide(absl::Span<const int64_t> region_key, Region& r, absl::Span<const int64_t> shape,
                                  const ShapeStats& s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const TierUpOptions options_;
  mutable absl::Mutex mu_;
  ShapeKeyMap<Region> regions_ ABSL_GUARDED_BY(mu_);
  double speedup_[3] ABSL_GUARDED_BY(mu_);  // by Tier
  double compile_ms_ ABSL_GUARDED_BY(mu_);
  bool compile_observed_ ABSL_GUARDED_BY(mu_) = false;
  int64_t tier_ups_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t reverted_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace shapeshift::runtime

#endif  // SHAPESHIFT_RUNTIME_SPECIALIZATION_TIER_UP_H_
