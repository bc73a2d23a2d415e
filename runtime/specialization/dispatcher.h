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
// cloned, a fresh ShapeEnv declares the same symbols with the tier's symbol
// policy and the trigger's values as hints, and the usual compile path
// (Program::Compile) runs on the copy. The questions passes asked become
// the entry's guards (env.guards(), with provenance); a static entry also
// pins every symbol (`seq == 37`, provenance "dispatcher"), since a static
// compiler serves one shape whatever its passes asked. Z3 then drops the
// implied atoms, and entries the new one subsumes are removed
// (generalize.h). An entry left with no guards is polymorphic, whatever tier
// was asked for.
//
// When compiles happen, per policy:
//  - polymorphic / auto: one polymorphic compile in Create (the "initial"
//    event); it serves the whole domain, so no request misses.
//  - static / bucketed: the first request compiles (the "initial" event,
//    with its symbol values); each later request no entry serves is a
//    "miss" event.
//
// Thread-safety: Acquire and Run may be called from any number of threads.
#ifndef SHAPESHIFT_RUNTIME_SPECIALIZATION_DISPATCHER_H_
#define SHAPESHIFT_RUNTIME_SPECIALIZATION_DISPATCHER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "graph/graph.h"
#include "graph/tensor.h"
#include "runtime/compile_options.h"
#include "runtime/execution_context.h"
#include "runtime/specialization/policy.h"
#include "runtime/specialization/recompile_event.h"
#include "runtime/specialization/specialization_cache.h"
#include "runtime/tensor_view.h"
#include "shapes/shape_env.h"

namespace shapeshift::runtime {

struct DispatcherOptions {
  SpecializationPolicy policy = SpecializationPolicy::kAuto;
  // Compiles triggered by misses (the initial compile is not counted).
  int recompile_limit = 64;
  CompileOptions compile;        // forwarded to every Program::Compile
  RecompileLogWriter* log = nullptr;  // not owned; events are also kept in events()
  unsigned z3_timeout_ms = 2000;  // per solver call while generalizing/explaining
};

struct DispatcherStats {
  int64_t compiles = 0;         // every compile, initial included
  int64_t misses = 0;           // compiles triggered by requests no entry served
  int64_t shared_compiles = 0;  // requests that waited on another request's compile
  int64_t limit_fallbacks = 0;  // requests served by the polymorphic entry at the limit
  int64_t limit_errors = 0;     // requests refused at the limit
  int64_t entries_removed = 0;  // entries subsumed by a newer one (generalize.h)
  int64_t log_errors = 0;       // events the recompile log failed to write (still in events())
};

class Dispatcher {
 public:
  // `graph` and `env`: the model as imported or built, not yet optimized
  // (every compile optimizes its own clone). An error when the initial
  // polymorphic compile fails.
  static absl::StatusOr<std::unique_ptr<Dispatcher>> Create(std::unique_ptr<Graph> graph,
                                                            std::unique_ptr<ShapeEnv> env,
                                                            DispatcherOptions options);
  ~Dispatcher();

  // The entry that serves `inputs` (compiling one when the policy says so).
  // Errors: a wrong input count or rank, a dim outside its declared range,
  // a failed compile, or the recompile limit (see top of file).
  absl::StatusOr<std::shared_ptr<const CacheEntry>> Acquire(absl::Span<const TensorView> inputs);
  // Acquire, then run the entry's Program.
  absl::StatusOr<std::vector<Tensor>> Run(absl::Span<const TensorView> inputs, ExecutionContext& context);

  // The symbol each slot holds, in binding order (the cache's slots).
  const std::vector<std::string>& slots() const { return cache_.slots(); }
  const SpecializationCache& cache() const { return cache_; }
  // The model's symbols and declared ranges (the domain every entry is
  // specialized within).
  const ShapeEnv& env() const { return *env_; }
  DispatcherStats stats() const;
  std::vector<RecompileEvent> events() const;

 private:
  // Where each slot's value comes from: inputs[input].shape[dim].
  struct Binding {
    int input = 0;
    int dim = 0;
    int64_t min = 0;
    int64_t max = 0;
  };

  Dispatcher(std::unique_ptr<Graph> graph, std::unique_ptr<ShapeEnv> env, DispatcherOptions options,
             std::vector<std::string> slots, std::vector<Binding> bindings);

  absl::Status Bind(absl::Span<const TensorView> inputs, absl::Span<int64_t> values) const;
  // The tier every compile gets under the policy.
  Tier PolicyTier() const;
  // Single-flight key: requests with equal keys share one compile.
  std::string CompileKey(Tier tier, absl::Span<const int64_t> values) const;
  // Compiles, generalizes and inserts an entry for `values`; records the event.
  absl::StatusOr<std::shared_ptr<const CacheEntry>> CompileEntry(Tier tier, RecompileTrigger trigger,
                                                                 absl::Span<const int64_t> values,
                                                                 const std::vector<EntryMiss>& misses);
  // At the recompile limit: the polymorphic entry if it serves `values`,
  // else an error naming the limit and why each entry rejects the input.
  absl::StatusOr<std::shared_ptr<const CacheEntry>> AtLimit(absl::Span<const int64_t> values)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::unique_ptr<Graph> graph_;
  const std::unique_ptr<ShapeEnv> env_;
  const DispatcherOptions options_;
  const std::vector<Binding> bindings_;
  SpecializationCache cache_;

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
};

}  // namespace shapeshift::runtime

#endif  // SHAPESHIFT_RUNTIME_SPECIALIZATION_DISPATCHER_H_
