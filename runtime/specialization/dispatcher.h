// Dispatcher: serves each request from the SpecializationCache, compiling a
// new entry (under the specialization policy) when none serves it — and
// recording why, as a RecompileEvent.
//
// Why it exists: the polymorphic artifact serves the whole declared domain,
// but the policy may ask for specialized ones (static: one per distinct
// shape; bucketed: one per region of shapes the compile's questions carve
// out). Whatever the policy, three things must hold: (1) a request never
// runs on an artifact whose guards fail; (2) concurrent requests that need
// the same compile share it (single-flight), so a burst of new shapes does
// not become a burst of identical compiles; (3) the number of recompiles is
// bounded, and what happens at the bound is explicit — the request is
// served by the polymorphic entry if one covers it, otherwise it fails with
// an error saying the limit was reached. Never a silent fallback.
//
// How a specialized compile is made: the model's (unoptimized) graph is
// compiled by CompileSpecializedEntry (entry_compiler.h: the tier's env,
// bucket bounds or pinned dims, the passes' questions as guards, Z3
// generalization); entries the new one subsumes are removed
// (generalize.h). An entry left with no guards is polymorphic, whatever tier
// was asked for.
//
// When compiles happen, per policy:
//  - polymorphic: one polymorphic compile in Create (the "initial" event);
//    it serves the whole domain, so no request misses.
//  - auto: the same initial compile, then tier-ups: every served request
//    feeds the cost model (tier_up.h) its bucket, shape and latency; when a
//    tier-up pays, it is compiled on the dispatcher's one background
//    thread ("tier-up" event with the cost model's numbers) while requests
//    keep running on the best entry that is ready. A tier-up that measures
//    no gain is removed again and its region is not retried.
//  - static / bucketed: the first request compiles (the "initial" event,
//    with its symbol values); each later request no entry serves is a
//    "miss" event. Bucketed compiles are for the request's bucket
//    (bucket.h), shared by concurrent requests of the same bucket.
//
// Thread-safety: Acquire and Run may be called from any number of threads.
#ifndef SHAPESHIFT_RUNTIME_SPECIALIZATION_DISPATCHER_H_
#define SHAPESHIFT_RUNTIME_SPECIALIZATION_DISPATCHER_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "graph/graph.h"
#include "graph/tensor.h"
#include "runtime/compile_options.h"
#include "runtime/execution_context.h"
#include "runtime/input_binder.h"
#include "runtime/kv_binding.h"
#include "runtime/persist/artifact_cache.h"
#include "runtime/packed_weight_cache.h"
#include "runtime/persist/artifact_object_store.h"
#include "runtime/persist/entry_store.h"
#include "runtime/persist/remote_cache.h"
#include "runtime/specialization/bucket.h"
#include "runtime/specialization/entry_spec.h"
#include "runtime/specialization/metrics.h"
#include "runtime/specialization/policy.h"
#include "runtime/specialization/recompile_event.h"
#include "runtime/specialization/specialization_cache.h"
#include "runtime/specialization/tier_up.h"
#include "runtime/tensor_view.h"
#include "shapes/guard_program.h"
#include "shapes/shape_env.h"

namespace shapeshift::runtime {

struct ManifestEntry;  // manifest.h

struct DispatcherOptions {
  SpecializationPolicy policy = SpecializationPolicy::kAuto;
  // Compiles triggered by misses (the initial compile is not counted).
  int recompile_limit = 64;
  CompileOptions compile;        // forwarded to every Program::Compile
  RecompileLogWriter* log = nullptr;  // not owned; events are also kept in events()
  unsigned z3_timeout_ms = 2000;  // per solver call while generalizing/explaining
  BucketOptions buckets;          // the bucketed tier's regions (bucketed policy and auto tier-ups)
  TierUpOptions tier_up;          // the auto policy's cost model
  // Nanoseconds of a monotonic clock, for the latencies and compile times
  // the cost model sees (tests inject a fake one); steady_clock when empty.
  std::function<int64_t()> clock_ns;
  // Persistent cache directory (`--cache-dir`); empty = off. Kernels' machine
  // code goes to its object store, and a manifest of the entries (per model,
  // compile options, policy and bucket scheme: manifest.h) lets the next
  // Dispatcher re-create them in Create without LLVM work — counted as
  // cache loads, not compiles, with no events. A corrupted manifest is
  // reported on `cache_warnings`, counted, ignored and rebuilt.
  std::string cache_dir;
  std::ostream* cache_warnings = &std::cerr;
  // Remote compile cache shared by replicas (`--remote-cache`, remote_cache.h);
  // an empty url = off. Behind the local cache for objects; its entry records
  // are loaded in Create like the manifest's, and every compile takes a lease
  // first, so replicas that miss the same entry compile it once
  // (dispatcher_remote.cc).
  persist::RemoteCacheOptions remote_cache;
  // Entries in front of every other store, shared with the caller: a loaded
  // AOT bundle's manifest and objects (read-only), or, writable, the store a
  // bundle compile collects every object into (runtime/bundle/).
  std::shared_ptr<persist::EntryStore> front_store;
  bool front_store_writable = false;
};

struct DispatcherStats {
  int64_t compiles = 0;         // every compile, initial included
  int64_t misses = 0;           // compiles triggered by requests no entry served
  int64_t shared_compiles = 0;  // requests that waited on another request's compile
  int64_t limit_fallbacks = 0;  // requests served by the polymorphic entry at the limit
  int64_t limit_errors = 0;     // requests refused at the limit
  int64_t entries_removed = 0;  // entries subsumed by a newer one (generalize.h)
  int64_t log_errors = 0;       // events the recompile log failed to write (still in events())
  int64_t tier_ups = 0;          // tier-up compiles that produced an entry
  int64_t tier_up_errors = 0;    // tier-up compiles that failed (the region is not retried)
  int64_t tier_ups_reverted = 0; // tier-up entries removed for measuring no gain
  // Compiles by the new entry's tier and by trigger; total compile time.
  int64_t compiles_by_tier[3] = {0, 0, 0};
  int64_t compiles_by_trigger[3] = {0, 0, 0};
  double compile_ms_total = 0;
  int64_t cache_loads = 0;   // entries re-created from the persistent cache in Create
  int64_t cache_errors = 0;  // manifests found corrupted or entries that failed to re-create
  int64_t llvm_compiles = 0;         // kernels LLVM compiled for entries (0 when every object was stored)
  int64_t remote_loads = 0;          // of cache_loads: entries another replica compiled (remote records)
  int64_t remote_waits = 0;          // compiles this process waited for another replica to finish
  int64_t remote_wait_timeouts = 0;  // waits that ran out (compiled locally instead)
  // Packed short-request weight copies held for all entries together, one
  // per weight and packing however many entries read it
  // (packed_weight_cache.h).
  int64_t packed_weight_copies = 0;
  int64_t packed_weight_bytes = 0;
};

class Dispatcher {
 public:
  // `graph` and `env`: the model as imported or built, not yet optimized
  // (every compile optimizes its own clone). An error when the initial
  // polymorphic compile fails.
  static absl::StatusOr<std::unique_ptr<Dispatcher>> Create(std::unique_ptr<Graph> graph,
                                                            std::unique_ptr<ShapeEnv> env,
                                                            DispatcherOptions options);
  // Stops the tier-up thread (a tier-up being compiled is finished first;
  // queued ones are dropped).
  ~Dispatcher();

  // The entry that serves `inputs` (compiling one when the policy says so).
  // Errors: a wrong input count or rank, a dim outside its declared range,
  // a failed compile, or the recompile limit (see top of file).
  absl::StatusOr<std::shared_ptr<const CacheEntry>> Acquire(absl::Span<const TensorView> inputs);
  // Acquire, then run the entry's Program; under `auto` the request's
  // latency feeds the cost model (which may queue a tier-up).
  // `caches`: KV pairs bound to caller buffers (runtime/kv_binding.h), for
  // whichever entry serves the request.
  absl::StatusOr<std::vector<Tensor>> Run(absl::Span<const TensorView> inputs, ExecutionContext& context,
                                          absl::Span<const BoundCache> caches = {});
  // Blocks until no tier-up is queued or compiling (tests and trace
  // replays that want a deterministic cache; requests never need it).
  void WaitForTierUps();

  // The symbol each slot holds, in binding order (the cache's slots).
  const std::vector<std::string>& slots() const { return cache_.slots(); }
  const SpecializationCache& cache() const { return cache_; }
  // The model's symbols and declared ranges (the domain every entry is
  // specialized within).
  const ShapeEnv& env() const { return *env_; }
  // The model as given to Create (every compile optimizes its own clone).
  const Graph& model() const { return *graph_; }
  DispatcherStats stats() const;
  std::vector<RecompileEvent> events() const;
  SpecializationMetrics Metrics() const;
  const BucketScheme& buckets() const { return buckets_; }
  // The auto policy's cost model; nullptr under the other policies.
  const TierUpModel* tier_up_model() const { return tier_up_.get(); }

 private:
  // Requests bind up to this many symbols without allocating (more on the
  // heap: a model may have any number of dynamic dims).
  static constexpr size_t kInlineSlots = 16;
  using SlotValues = absl::InlinedVector<int64_t, kInlineSlots>;

  Dispatcher(std::unique_ptr<persist::ArtifactCache> disk, std::unique_ptr<persist::RemoteCache> remote,
             std::unique_ptr<Graph> graph,
             std::unique_ptr<ShapeEnv> env, DispatcherOptions options, std::vector<std::string> slots,
             InputBinder binder, std::optional<GuardProgram> model_guards, std::vector<SymbolInfo> slot_symbols);

  // The binder's checks, then the model env's own guards (model_guards_).
  absl::Status Bind(absl::Span<const TensorView> inputs, absl::Span<int64_t> values) const;

  // The entry for bound `values` (fast path: Find; else compile or wait).
  absl::StatusOr<std::shared_ptr<const CacheEntry>> Serve(absl::Span<const int64_t> values);
  // The tier every compile gets under the policy.
  Tier PolicyTier() const;
  // What a compile of `tier` for `values` is asked for (buckets filled in).
  EntrySpec SpecFor(Tier tier, absl::Span<const int64_t> values) const;
  // Single-flight key: requests with equal keys share one compile.
  std::string CompileKey(const EntrySpec& spec) const;
  // Compiles, generalizes and inserts an entry; records the event.
  absl::StatusOr<std::shared_ptr<const CacheEntry>> CompileEntry(const EntrySpec& spec, RecompileTrigger trigger,
                                                                 const std::vector<EntryMiss>& misses,
                                                                 std::optional<TierUpCost> cost = std::nullopt);
  // At the recompile limit: the polymorphic entry if it serves `values`,
  // else an error naming the limit and why each entry rejects the input.
  absl::StatusOr<std::shared_ptr<const CacheEntry>> AtLimit(absl::Span<const int64_t> values)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Feeds one served request to the cost model; queues a tier-up or removes
  // a tier-up that measured no gain.
  void RecordForTierUp(absl::Span<const int64_t> values, int64_t entry_id, double latency_ms);
  void TierUpLoop();
  int64_t NowNs() const;
  // Re-creates the entries the persistent cache's manifest lists, and the
  // remote cache's entry records (in Create, before any request).
  void LoadManifest();
  // One listed entry through the same compile with the object store; false
  // (warned, counted) when it fails. `where` names the manifest or record.
  bool RecreateEntry(const ManifestEntry& m, const std::string& where, bool remote);
  // Rewrites the manifest with the cache's current entries.
  void SaveManifest();
  void CacheWarning(const std::string& text);
  // The remote half (dispatcher_remote.cc): before a compile, wait for
  // another replica that holds the entry's lease, or take it; after, publish
  // the entry's record and release the lease.
  struct RemoteClaim {
    bool leased = false;     // this process compiles and publishes
    bool published = false;  // another replica's record exists: objects are remote
    bool waited = false;
    std::unique_ptr<persist::RemoteCache::LeaseKeeper> keeper;  // renews the lease while compiling
  };
  RemoteClaim ClaimRemote(const EntrySpec& spec);
  void FinishRemote(RemoteClaim& claim, const EntrySpec& spec, const std::shared_ptr<const CacheEntry>& entry);

  // The persistent cache (null when cache_dir is empty), the remote cache
  // (null when off) and a bundle's entries (null when none); declared before
  // options_, whose compile options point at the object store. Objects are
  // looked up preloaded → this dispatcher's kernels → disk → remote;
  // manifests preloaded → disk (the remote keeps one record per entry
  // instead).
  std::unique_ptr<persist::ArtifactCache> disk_;
  std::unique_ptr<persist::RemoteCache> remote_;
  std::shared_ptr<persist::EntryStore> front_;
  // Every kernel object this dispatcher's compiles made, by object key: a
  // later compile (a tier-up, a miss, a bucket) links a kernel it already
  // has instead of compiling it again, with or without a cache directory.
  std::unique_ptr<persist::MemoryEntryStore> kernels_;
  std::unique_ptr<persist::TieredEntryStore> objects_;
  std::unique_ptr<persist::TieredEntryStore> manifests_;
  std::unique_ptr<persist::ArtifactObjectStore> object_store_;
  // Every packed weight copy this dispatcher's compiles made: a bucket or a
  // tier packs nothing the polymorphic entry already packed.
  std::unique_ptr<PackedWeightCache> packed_weights_ = std::make_unique<PackedWeightCache>();
  std::string manifest_key_;
  absl::Mutex manifest_mu_;  // one manifest write at a time, latest last

  const std::unique_ptr<Graph> graph_;
  const std::unique_ptr<ShapeEnv> env_;
  const DispatcherOptions options_;
  const InputBinder binder_;  // slot i of the cache is binder_.symbols()[i]
  // The model env's recorded guards over the slots; absent when it has none.
  const std::optional<GuardProgram> model_guards_;
  SpecializationCache cache_;
  BucketScheme buckets_;
  const std::unique_ptr<TierUpModel> tier_up_;  // auto only

  // Hot-path counters (relaxed atomics: no lock per request).
  std::atomic<int64_t> requests_{0};
  std::atomic<int64_t> hits_{0};
  std::atomic<int64_t> guard_eval_ns_{0};
  std::atomic<int64_t> first_request_ns_{-1};  // -1 until the first request completes

  mutable absl::Mutex mu_;
  absl::CondVar compile_done_;
  // One compile in progress; requests with its key wait for it and share its
  // outcome (a failed compile fails them all, once, with the same error).
  struct InFlight {
    bool done = false;
    absl::Status status;
  };
  absl::flat_hash_map<std::string, std::shared_ptr<InFlight>> in_flight_ ABSL_GUARDED_BY(mu_);
  int64_t miss_compiles_started_ ABSL_GUARDED_BY(mu_) = 0;
  bool initial_claimed_ ABSL_GUARDED_BY(mu_) = false;
  DispatcherStats stats_ ABSL_GUARDED_BY(mu_);
  std::vector<RecompileEvent> events_ ABSL_GUARDED_BY(mu_);

  // The tier-up thread and its queue (auto only).
  absl::CondVar tier_up_wake_;
  absl::CondVar tier_up_idle_;
  std::deque<TierUpJob> tier_up_queue_ ABSL_GUARDED_BY(mu_);
  bool tier_up_running_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread tier_up_thread_;
};

}  // namespace shapeshift::runtime

#endif  // SHAPESHIFT_RUNTIME_SPECIALIZATION_DISPATCHER_H_
