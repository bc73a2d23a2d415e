// Session: the public C++ API — one facade over the Dispatcher for every
// policy. Compile a model, serve requests of any shape in its declared
// domain, and say why each compile happened.
//
//   // One polymorphic artifact, compiled once, never specialized:
//   auto session = Session::Create(ModelSource::OnnxFile("bert.onnx"),
//                                  CompileOptions{.dims = {{"batch", {1, 8}}, {"seq", {1, 512}}}});
//   // Any policy (auto tier-ups, buckets, static), a recompile log, caches:
//   auto served = Session::Create(ModelSource::OnnxFile("bert.onnx"),
//       SessionOptions{.compile = {.dims = {{"seq", {1, 512}}}}, .policy = SpecializationPolicy::kStatic,
//                      .recompile_log = "recompiles.jsonl"});
//   auto outputs = (*session)->Run({TensorView{DType::kI64, shape, ids.data()}, ...});
//   (*session)->stats().compiles;   // 1 for the polymorphic session
//
// The polymorphic session is the specializing one under
// SpecializationPolicy::kPolymorphic: the same binder (input_binder.h: the
// symbol values are produced once per request), the same guard-keyed cache
// and the same context pool; it compiles once, in Create, and stats().compiles
// stays 1. A request whose dims fall outside the declared ranges is an error
// naming the input, dim and range — never a silent recompile or a fallback.
//
// Run is thread-safe: each call borrows an ExecutionContext (arena) from the
// session's one pool, so concurrent requests never share scratch memory and
// steady-state requests allocate only their output tensors.
#ifndef SHAPESHIFT_RUNTIME_SESSION_H_
#define SHAPESHIFT_RUNTIME_SESSION_H_

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
#include "runtime/step_profile.h"
#include "runtime/program.h"
#include "runtime/specialization/bucket.h"
#include "runtime/specialization/dispatcher.h"
#include "runtime/specialization/metrics.h"
#include "runtime/specialization/policy.h"
#include "runtime/specialization/recompile_event.h"
#include "runtime/specialization/tier_up.h"
#include "runtime/tensor_view.h"
#include "shapes/shape_env.h"

namespace shapeshift::runtime {

// Where a model comes from: an ONNX file, ONNX bytes, or a graph already
// built (examples/ builders) or imported by the caller, with the ShapeEnv
// declaring its dims. `name` names the model in errors ("compiling NAME: ...").
class ModelSource {
 public:
  static ModelSource OnnxFile(std::string path);
  static ModelSource OnnxBytes(std::string bytes, std::string name = "<bytes>");
  static ModelSource Built(std::unique_ptr<Graph> graph, std::unique_ptr<ShapeEnv> env,
                           std::string name = "<built model>");

 private:
  friend class Session;
  enum class Kind { kOnnxFile, kOnnxBytes, kBuilt };
  Kind kind_ = Kind::kBuilt;
  std::string text_;  // the path, or the bytes
  std::string name_;  // for messages
  std::unique_ptr<Graph> graph_;
  std::unique_ptr<ShapeEnv> env_;
};

struct SessionOptions {
  CompileOptions compile;  // declared ranges (`--dim`; replace a built model's), print-after, device, ...
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
  // Keeps the model's large constants in an unlinked file under this
  // directory (`--weights-dir`; graph/constant_spill.h), resident only while
  // read: once a GEMM's packed copy exists its plain weights' pages are given
  // back, so a served model holds about one copy of its weights (an ONNX
  // source's initializers are imported straight into the file). Turns on
  // compile.long_rows_on_panels (the packed copy then serves every request).
  // Empty = off; a directory that cannot take the file (tmpfs, unwritable)
  // keeps the weights in memory and says so in weights().note.
  std::string weights_dir;
};

// Where the session's weights live (SessionOptions::weights_dir).
struct WeightsPlacement {
  std::string dir;        // empty: in memory
  int64_t constants = 0;  // moved to the file
  int64_t bytes = 0;
  std::string note;       // why they stayed in memory although a directory was given
};

struct SessionStats {
  int64_t compiles = 0;    // every compile, the initial one included (1 for a polymorphic session)
  int64_t recompiles = 0;  // compiles after the initial one: misses and tier-ups
  int64_t requests = 0;    // successful Run calls
  size_t entries = 0;      // artifacts in the cache now
  DispatcherStats dispatcher;
  ProgramStats program;    // the polymorphic entry's Program (zeros when there is none)
};

class Session {
 public:
  static absl::StatusOr<std::unique_ptr<Session>> Create(ModelSource model, const SessionOptions& options);
  // The polymorphic session: SessionOptions{.compile = options, .policy = kPolymorphic}.
  static absl::StatusOr<std::unique_ptr<Session>> Create(ModelSource model, const CompileOptions& options = {});
  ~Session();

  // Inputs in graph-input order (see graph().inputs()).
  absl::StatusOr<std::vector<Tensor>> Run(absl::Span<const TensorView> inputs);
  absl::StatusOr<std::vector<Tensor>> Run(const std::vector<Tensor>& inputs);
  // With KV pairs bound to caller buffers (kv_binding.h; KvCache owns and
  // grows such buffers): the bound presents are appended in place.
  absl::StatusOr<std::vector<Tensor>> Run(absl::Span<const TensorView> inputs, absl::Span<const BoundCache> caches);

  // The reference interpreter on the model as imported (no pass has run on
  // it): the oracle tests compare Run against.
  absl::StatusOr<std::vector<Tensor>> RunReference(const std::vector<Tensor>& inputs) const;

  SessionStats stats() const;
  // Hit rate, compiles by tier/trigger, compile and guard time, first-request
  // latency, tier-ups, limit fallbacks, cache loads (metrics.h formats it).
  SpecializationMetrics Metrics() const { return dispatcher_->Metrics(); }
  // Blocks until the auto policy's background tier-ups are done.
  void WaitForTierUps() { dispatcher_->WaitForTierUps(); }
  std::vector<RecompileEvent> events() const { return dispatcher_->events(); }
  const Dispatcher& dispatcher() const { return *dispatcher_; }

  // The model as imported or built (its inputs and outputs are a request's).
  const Graph& graph() const { return dispatcher_->model(); }
  // Its symbols and declared ranges.
  const ShapeEnv& env() const { return dispatcher_->env(); }
  // The polymorphic entry's Program (compiled in Create under the
  // polymorphic and auto policies; kept alive by the session), or null when
  // the policy compiled none.
  const Program* program() const;
  const WeightsPlacement& weights() const { return weights_; }
  // Times every step of the requests that start after this call into
  // `profile` (step_profile.h; `run --profile`); null: off again. CPU
  // programs only.
  void ProfileSteps(std::shared_ptr<StepProfile> profile);

 private:
  Session() = default;
  std::unique_ptr<ExecutionContext> AcquireContext();
  void ReleaseContext(std::unique_ptr<ExecutionContext> context);

  std::unique_ptr<RecompileLogWriter> log_;  // outlives the dispatcher that appends to it
  std::unique_ptr<Dispatcher> dispatcher_;
  std::shared_ptr<const CacheEntry> polymorphic_;  // null when Create compiled none
  WeightsPlacement weights_;
  std::atomic<int64_t> requests_{0};
  absl::Mutex mu_;
  std::vector<std::unique_ptr<ExecutionContext>> idle_contexts_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<StepProfile> step_profile_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shapeshift::runtime

#endif  // SHAPESHIFT_RUNTIME_SESSION_H_
