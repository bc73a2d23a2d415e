// SpecializingSession: the Session-like facade over the Dispatcher — a model
// plus a specialization policy, a recompile limit and a recompile log.
//
// Why a second facade: `Session` (runtime/session.h) compiles exactly once
// and never specializes; this class is what `--policy` and `--recompile-log`
// plug into, so callers choose between one polymorphic artifact and the
// tiers without knowing about caches or events. It owns the model template,
// the Dispatcher, the log writer and a pool of ExecutionContexts.
//
//   auto s = SpecializingSession::CreateFromOnnxFile("bert.onnx",
//       {.compile = {.dims = {{"seq", {1, 512}}}}, .policy = SpecializationPolicy::kStatic,
//        .recompile_log = "recompiles.jsonl"});
//   auto outputs = (*s)->Run(inputs);
//   (*s)->stats().dispatcher.compiles;   // how many artifacts were compiled
//
// Thread-safety: Run may be called concurrently (see Dispatcher).
#ifndef SHAPESHIFT_RUNTIME_SPECIALIZATION_SPECIALIZING_SESSION_H_
#define SHAPESHIFT_RUNTIME_SPECIALIZATION_SPECIALIZING_SESSION_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "graph/graph.h"
#include "graph/tensor.h"
#include "runtime/compile_options.h"
#include "runtime/execution_context.h"
#include "runtime/specialization/bucket.h"
#include "runtime/specialization/dispatcher.h"
#include "runtime/specialization/metrics.h"
#include "runtime/specialization/policy.h"
#include "runtime/specialization/recompile_event.h"
#include "runtime/specialization/tier_up.h"
#include "runtime/tensor_view.h"
#include "shapes/shape_env.h"

namespace shapeshift::runtime {

struct SpecializingSessionOptions {
  CompileOptions compile;  // declared ranges (`--dim`), print-after, vector width
  SpecializationPolicy policy = SpecializationPolicy::kAuto;
  int recompile_limit = 64;
  // JSON-lines recompile log (`--recompile-log`); when empty, the
  // SHAPESHIFT_RECOMPILE_LOG environment variable, if set.
  std::string recompile_log;
  BucketOptions buckets;   // bucketed tier regions (power-of-two or learned)
  TierUpOptions tier_up;   // the auto policy's cost model
  // Persistent cache directory (`--cache-dir`; the CLI's default is
  // persist::DefaultCacheDir()); empty = off. See DispatcherOptions.
  std::string cache_dir;
  // Remote compile cache shared by replicas (`--remote-cache`); empty url =
  // off. See DispatcherOptions::remote_cache.
  persist::RemoteCacheOptions remote_cache;
  // Entries in front of the caches (a bundle's; runtime/bundle/bundle.h
  // fills them). See DispatcherOptions::front_store.
  std::shared_ptr<persist::EntryStore> front_store;
  bool front_store_writable = false;
};

struct SpecializingSessionStats {
  DispatcherStats dispatcher;
  int64_t requests = 0;  // successful Run calls
  size_t entries = 0;    // artifacts in the cache now
};

class SpecializingSession {
 public:
  static absl::StatusOr<std::unique_ptr<SpecializingSession>> CreateFromOnnxFile(
      const std::string& path, const SpecializingSessionOptions& options);
  // A built model (examples/ builders, or a model the caller imported);
  // `options.compile.dims` replace the builder's ranges, unknown names are an
  // error. `model_name` names the model in errors ("compiling NAME: ...").
  static absl::StatusOr<std::unique_ptr<SpecializingSession>> CreateFromBuilt(
      std::unique_ptr<Graph> graph, std::unique_ptr<ShapeEnv> env, const SpecializingSessionOptions& options,
      const std::string& model_name = "<built model>");
  ~SpecializingSession();

  absl::StatusOr<std::vector<Tensor>> Run(absl::Span<const TensorView> inputs);
  absl::StatusOr<std::vector<Tensor>> Run(const std::vector<Tensor>& inputs);

  SpecializingSessionStats stats() const;
  // Hit rate, compiles by tier/trigger, compile and guard time, first-request
  // latency, tier-ups, limit fallbacks, cache loads (metrics.h formats it).
  SpecializationMetrics Metrics() const { return dispatcher_->Metrics(); }
  // Blocks until the auto policy's background tier-ups are done.
  void WaitForTierUps() { dispatcher_->WaitForTierUps(); }
  std::vector<RecompileEvent> events() const { return dispatcher_->events(); }
  const Dispatcher& dispatcher() const { return *dispatcher_; }

 private:
  SpecializingSession() = default;
  static absl::StatusOr<std::unique_ptr<SpecializingSession>> Create(std::unique_ptr<Graph> graph,
                                                                     std::unique_ptr<ShapeEnv> env,
                                                                     const SpecializingSessionOptions& options,
                                                                     const std::string& model_name);

  std::unique_ptr<RecompileLogWriter> log_;  // outlives the dispatcher that appends to it
  std::unique_ptr<Dispatcher> dispatcher_;
  std::atomic<int64_t> requests_{0};
  absl::Mutex mu_;
  std::vector<std::unique_ptr<ExecutionContext>> idle_contexts_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shapeshift::runtime

#endif  // SHAPESHIFT_RUNTIME_SPECIALIZATION_SPECIALIZING_SESSION_H_
