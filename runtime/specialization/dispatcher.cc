#include "runtime/specialization/dispatcher.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/dtype.h"
#include "runtime/specialization/entry_compiler.h"
#include "runtime/specialization/generalize.h"
#include "shapes/z3_bridge.h"

namespace shapeshift::runtime {
namespace {

// At the limit, the error lists this many entries' failing atoms.
constexpr size_t kEntriesInLimitError = 4;

AtomRecord Record(const GuardAtom& atom) { return AtomRecord{atom.predicate.ToString(), atom.provenance}; }

std::string AtomText(const GuardAtom& atom) {
  return absl::StrCat(atom.predicate.ToString(), " [asked by ", ProvenanceText(atom.provenance), "]");
}

// The atom a failed GuardProgram verdict over `atoms` points at.
std::string FailedAtomText(const std::vector<GuardAtom>& atoms, const GuardVerdict& verdict) {
  return verdict.failed_atom < atoms.size() ? AtomText(atoms[verdict.failed_atom]) : "(bad slot count)";
}

std::string ValuesText(absl::Span<const std::string> slots, absl::Span<const int64_t> values) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < slots.size() && i < values.size(); ++i) parts.push_back(absl::StrCat(slots[i], "=", values[i]));
  return absl::StrJoin(parts, " ");
}

}  // namespace

namespace {

// The chain of `layers` that exist; null when none does.
std::unique_ptr<persist::TieredEntryStore> Chain(std::vector<persist::TieredEntryStore::Layer> layers) {
  std::erase_if(layers, [](const persist::TieredEntryStore::Layer& l) { return l.store == nullptr; });
  if (layers.empty()) return nullptr;
  return std::make_unique<persist::TieredEntryStore>(std::move(layers));
}

}  // namespace

Dispatcher::Dispatcher(std::unique_ptr<persist::ArtifactCache> disk, std::unique_ptr<persist::RemoteCache> remote,
                       std::unique_ptr<Graph> graph, std::unique_ptr<ShapeEnv> env, DispatcherOptions options,
                       std::vector<std::string> slots, InputBinder binder,
                       std::optional<GuardProgram> model_guards, std::vector<SymbolInfo> slot_symbols)
    : disk_(std::move(disk)),
      remote_(std::move(remote)),
      front_(options.front_store),
      kernels_(std::make_unique<persist::MemoryEntryStore>("this dispatcher's kernels")),
      objects_(Chain({{front_.get(), options.front_store_writable},
                      {kernels_.get(), true},
                      {disk_.get(), true},
                      {remote_.get(), true}})),
      manifests_(Chain({{front_.get(), false}, {disk_.get(), true}})),
      object_store_(objects_ != nullptr ? std::make_unique<persist::ArtifactObjectStore>(objects_.get()) : nullptr),
      graph_(std::move(graph)),
      env_(std::move(env)),
      options_([&] {
        if (object_store_ != nullptr) options.compile.object_store = object_store_.get();
        options.compile.packed_weights = packed_weights_.get();
        return std::move(options);
      }()),
      binder_(std::move(binder)),
      model_guards_(std::move(model_guards)),
      cache_(std::move(slots)),
      buckets_(options_.buckets, slot_symbols),
      tier_up_(options_.policy == SpecializationPolicy::kAuto ? std::make_unique<TierUpModel>(options_.tier_up)
                                                              : nullptr) {
  if (tier_up_ != nullptr) tier_up_thread_ = std::thread([this] { TierUpLoop(); });
}

Dispatcher::~Dispatcher() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    tier_up_wake_.SignalAll();
  }
  if (tier_up_thread_.joinable()) tier_up_thread_.join();
}

int64_t Dispatcher::NowNs() const {
  if (options_.clock_ns) return options_.clock_ns();
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

absl::StatusOr<std::unique_ptr<Dispatcher>> Dispatcher::Create(std::unique_ptr<Graph> graph,
                                                               std::unique_ptr<ShapeEnv> env,
                                                               DispatcherOptions options) {
  if (graph == nullptr || env == nullptr) return absl::InvalidArgumentError("Dispatcher needs a graph and a ShapeEnv");
  if (options.recompile_limit < 0) return absl::InvalidArgumentError("recompile limit must be >= 0");
  // The one binding rule (input_binder.h), also every Program's.
  absl::StatusOr<InputBinder> binder = InputBinder::Create(*graph, *env);
  if (!binder.ok()) return binder.status();
  std::vector<std::string> slots = binder->symbol_names();
  std::vector<SymbolInfo> slot_symbols;
  for (const std::string& name : slots) slot_symbols.push_back(*env->FindSymbol(name));
  // Guards already recorded on the model's env (answers someone asked of it
  // before any compile) hold for every entry: checked once per request,
  // right after binding, before any entry is chosen or compiled.
  std::optional<GuardProgram> model_guards;
  if (!env->guards().empty()) {
    std::vector<Predicate> atoms;
    for (const GuardAtom& g : env->guards()) atoms.push_back(g.predicate);
    absl::StatusOr<GuardProgram> compiled = GuardProgram::Compile(atoms, slots);
    if (!compiled.ok()) {
      return absl::Status(compiled.status().code(), absl::StrCat("the model's guards: ", compiled.status().message()));
    }
    model_guards = *std::move(compiled);
  }
  std::unique_ptr<persist::ArtifactCache> disk;
  if (!options.cache_dir.empty()) {
    persist::ArtifactCacheOptions cache_options;
    cache_options.warnings = options.cache_warnings;
    absl::StatusOr<std::unique_ptr<persist::ArtifactCache>> opened =
        persist::ArtifactCache::Open(options.cache_dir, cache_options);
    if (!opened.ok()) return opened.status();
    disk = *std::move(opened);
  }
  std::unique_ptr<persist::RemoteCache> remote;
  if (!options.remote_cache.url.empty()) {
    absl::StatusOr<std::unique_ptr<persist::RemoteCache>> opened = persist::RemoteCache::Open(options.remote_cache);
    if (!opened.ok()) return opened.status();
    remote = *std::move(opened);
  }
  std::unique_ptr<Dispatcher> d(new Dispatcher(std::move(disk), std::move(remote), std::move(graph), std::move(env),
                                               std::move(options), std::move(slots), *std::move(binder),
                                               std::move(model_guards), std::move(slot_symbols)));
  if (d->manifests_ != nullptr || d->remote_ != nullptr) d->LoadManifest();
  const std::vector<std::shared_ptr<const CacheEntry>> loaded = d->cache_.entries();
  const bool serves_everything = std::any_of(loaded.begin(), loaded.end(), [](const auto& e) { return e->guards.empty(); });
  if (!loaded.empty()) {
    absl::MutexLock lock(&d->mu_);
    d->initial_claimed_ = true;  // a model's first compile was in an earlier process
  }
  if (!serves_everything && (d->options_.policy == SpecializationPolicy::kPolymorphic ||
                             d->options_.policy == SpecializationPolicy::kAuto)) {
    {
      absl::MutexLock lock(&d->mu_);
      d->initial_claimed_ = true;
    }
    absl::StatusOr<std::shared_ptr<const CacheEntry>> entry =
        d->CompileEntry(EntrySpec{}, RecompileTrigger::kInitial, {});
    if (!entry.ok()) return entry.status();
  }
  return d;
}

Tier Dispatcher::PolicyTier() const {
  switch (options_.policy) {
    case SpecializationPolicy::kStatic:
      return Tier::kStatic;
    case SpecializationPolicy::kBucketed:
      return Tier::kBucketed;
    case SpecializationPolicy::kPolymorphic:
    case SpecializationPolicy::kAuto:
      return Tier::kPolymorphic;
  }
  return Tier::kPolymorphic;
}

EntrySpec Dispatcher::SpecFor(Tier tier, absl::Span<const int64_t> values) const {
  EntrySpec spec;
  spec.tier = tier;
  if (tier == Tier::kPolymorphic) return spec;
  spec.trigger.assign(values.begin(), values.end());
  if (tier != Tier::kBucketed) return spec;
  for (size_t i = 0; i < values.size(); ++i) {
    spec.buckets.push_back(buckets_.BucketOf(i, values[i]));
    spec.bucket_reasons.push_back(buckets_.Describe(i, spec.buckets.back()));
  }
  return spec;
}

std::string Dispatcher::CompileKey(const EntrySpec& spec) const {
  if (spec.tier == Tier::kPolymorphic) return TierName(spec.tier);
  if (spec.tier == Tier::kStatic) return absl::StrCat(TierName(spec.tier), ":", absl::StrJoin(spec.trigger, ","));
  std::vector<std::string> bounds;
  for (const Bucket& b : spec.buckets) bounds.push_back(absl::StrCat(b.lo, "..", b.hi));
  return absl::StrCat(TierName(spec.tier), ":", absl::StrJoin(bounds, ","));
}

absl::Status Dispatcher::Bind(absl::Span<const TensorView> inputs, absl::Span<int64_t> values) const {
  // Everything a request can get wrong without any artifact's help is
  // refused here, before a policy could spend a compile (or, at the
  // recompile limit, answer with the limit instead of the real problem).
  if (absl::Status s = binder_.Bind(inputs, values); !s.ok()) return s;
  if (model_guards_.has_value()) {
    const GuardVerdict verdict = model_guards_->Evaluate(values);
    if (!verdict.pass) {
      return absl::FailedPreconditionError(
          absl::StrCat("the request violates a guard of the model: ", FailedAtomText(env_->guards(), verdict)));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const CacheEntry>> Dispatcher::Acquire(absl::Span<const TensorView> inputs) {
  SlotValues storage(binder_.symbols().size());
  absl::Span<int64_t> values(storage.data(), storage.size());
  if (absl::Status s = Bind(inputs, values); !s.ok()) return s;
  return Serve(values);
}

absl::StatusOr<std::shared_ptr<const CacheEntry>> Dispatcher::Serve(absl::Span<const int64_t> values) {
  requests_.fetch_add(1, std::memory_order_relaxed);
  if (buckets_.options().kind == BucketKind::kLearned) {
    for (size_t i = 0; i < values.size(); ++i) buckets_.Observe(i, values[i]);
  }
  const auto find_start = std::chrono::steady_clock::now();
  std::shared_ptr<const CacheEntry> found = cache_.Find(values);
  guard_eval_ns_.fetch_add(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - find_start).count(),
      std::memory_order_relaxed);
  if (found != nullptr) {
    hits_.fetch_add(1, std::memory_order_relaxed);
    return found;
  }

  mu_.Lock();
  for (;;) {
    if (std::shared_ptr<const CacheEntry> hit = cache_.Find(values)) {
      mu_.Unlock();
      return hit;
    }
    const bool initial = !initial_claimed_;
    const EntrySpec spec = SpecFor(PolicyTier(), values);
    const std::string key = CompileKey(spec);
    if (auto it = in_flight_.find(key); it != in_flight_.end()) {
      ++stats_.shared_compiles;
      std::shared_ptr<InFlight> flight = it->second;
      while (!flight->done) compile_done_.Wait(&mu_);
      if (!flight->status.ok()) {
        mu_.Unlock();
        return flight->status;
      }
      continue;
    }
    if (!initial && miss_compiles_started_ >= options_.recompile_limit) {
      absl::StatusOr<std::shared_ptr<const CacheEntry>> served = AtLimit(values);
      mu_.Unlock();
      return served;
    }
    if (initial) {
      initial_claimed_ = true;
    } else {
      ++miss_compiles_started_;
    }
    auto flight = std::make_shared<InFlight>();
    in_flight_[key] = flight;
    mu_.Unlock();
    std::vector<EntryMiss> misses = cache_.ExplainMiss(values);
    absl::StatusOr<std::shared_ptr<const CacheEntry>> entry =
        CompileEntry(spec, initial ? RecompileTrigger::kInitial : RecompileTrigger::kMiss, misses);
    mu_.Lock();
    flight->done = true;
    flight->status = entry.status();
    in_flight_.erase(key);
    compile_done_.SignalAll();
    mu_.Unlock();
    // The entry is run without the program's own checks (RunBound): it must
    // serve the request it was compiled for, or the request is refused.
    if (entry.ok()) {
      const GuardVerdict verdict = (*entry)->guard_program.Evaluate(values);
      if (!verdict.pass) {
        return absl::FailedPreconditionError(absl::StrCat(
            "the ", TierName((*entry)->tier), " entry compiled for ", ValuesText(cache_.slots(), values),
            " does not serve it: it fails ", FailedAtomText((*entry)->guards, verdict)));
      }
    }
    return entry;
  }
}

absl::StatusOr<std::vector<Tensor>> Dispatcher::Run(absl::Span<const TensorView> inputs, ExecutionContext& context,
                                                    absl::Span<const BoundCache> caches) {
  const int64_t start = NowNs();
  SlotValues storage(binder_.symbols().size());
  absl::Span<int64_t> values(storage.data(), storage.size());
  if (absl::Status s = Bind(inputs, values); !s.ok()) return s;
  absl::StatusOr<std::shared_ptr<const CacheEntry>> entry = Serve(values);
  if (!entry.ok()) return entry.status();
  // Bound once: the entry's guards (checked by Serve) imply the program's
  // ranges and guards, so the program only evaluates sizes and runs.
  const std::vector<int>& program_slots = (*entry)->program_slots;
  SlotValues program_storage(program_slots.size());
  for (size_t i = 0; i < program_slots.size(); ++i) program_storage[i] = values[program_slots[i]];
  absl::StatusOr<std::vector<Tensor>> out = (*entry)->artifact->program->RunBound(
      inputs, absl::MakeConstSpan(program_storage.data(), program_storage.size()), context, caches);
  if (!out.ok()) return out;
  const int64_t latency_ns = NowNs() - start;
  int64_t unset = -1;
  first_request_ns_.compare_exchange_strong(unset, latency_ns, std::memory_order_relaxed);
  if (tier_up_ != nullptr) RecordForTierUp(values, (*entry)->id, static_cast<double>(latency_ns) / 1e6);
  return out;
}

absl::StatusOr<std::shared_ptr<const CacheEntry>> Dispatcher::AtLimit(absl::Span<const int64_t> values) {
  std::vector<EntryMiss> misses = cache_.ExplainMiss(values);
  for (const EntryMiss& m : misses) {
    if (m.entry->tier == Tier::kPolymorphic && m.failing.empty()) {
      ++stats_.limit_fallbacks;
      return m.entry;
    }
  }
  ++stats_.limit_errors;
  std::vector<std::string> reasons;
  for (size_t i = 0; i < misses.size() && i < kEntriesInLimitError; ++i) {
    const EntryMiss& m = misses[i];
    std::vector<std::string> failing;
    for (size_t a : m.failing) {
      failing.push_back(AtomText(m.entry->guards[a]));
    }
    reasons.push_back(absl::StrCat("entry #", m.entry->id, " (", TierName(m.entry->tier),
                                   ") fails ", absl::StrJoin(failing, ", ")));
  }
  if (misses.size() > kEntriesInLimitError) reasons.push_back(absl::StrCat(misses.size() - kEntriesInLimitError, " more"));
  return absl::ResourceExhaustedError(absl::StrCat(
      "recompile limit (", options_.recompile_limit, ") reached and no compiled entry serves ",
      ValuesText(cache_.slots(), values), " (no polymorphic entry covers it): ", absl::StrJoin(reasons, "; ")));
}

absl::StatusOr<std::shared_ptr<const CacheEntry>> Dispatcher::CompileEntry(const EntrySpec& spec,
                                                                           RecompileTrigger trigger,
                                                                           const std::vector<EntryMiss>& misses,
                                                                           std::optional<TierUpCost> cost) {
  const std::vector<std::string>& slots = cache_.slots();
  const std::vector<int64_t>& values = spec.trigger;
  Assignment at;
  for (size_t i = 0; i < values.size(); ++i) at[slots[i]] = values[i];
  Z3Bridge z3(options_.z3_timeout_ms);
  // With a remote cache, another replica may be compiling (or have compiled)
  // this entry: wait for it, or take the lease (dispatcher_remote.cc).
  RemoteClaim claim = ClaimRemote(spec);
  const int64_t start = NowNs();
  absl::StatusOr<CompiledEntry> compiled =
      CompileSpecializedEntry(*graph_, *env_, slots, spec, options_.compile, z3);
  if (!compiled.ok()) {
    FinishRemote(claim, spec, nullptr);
    return compiled.status();
  }
  const int64_t llvm_compiles = compiled->artifact->program->stats().llvm_compiles;
  // Another replica's entry whose every kernel came from the stores is a
  // load, not a compile: no event, no compile counted.
  if (claim.published && llvm_compiles == 0) {
    absl::StatusOr<std::shared_ptr<const CacheEntry>> entry =
        cache_.Insert(compiled->tier, std::move(compiled->guards), std::move(compiled->artifact), spec,
                      std::move(compiled->serves));
    if (!entry.ok()) return entry.status();
    int64_t removed = 0;
    for (int64_t id : SubsumedEntries(env_->DomainPredicate(), **entry, cache_.entries(), z3)) {
      removed += cache_.Remove(id) ? 1 : 0;
    }
    {
      absl::MutexLock lock(&mu_);
      ++stats_.cache_loads;
      ++stats_.remote_loads;
      stats_.entries_removed += removed;
    }
    if (disk_ != nullptr) SaveManifest();
    return entry;
  }
  if (tier_up_ != nullptr) tier_up_->ObserveCompile(static_cast<double>(NowNs() - start) / 1e6);
  const Tier entry_tier = compiled->tier;

  RecompileEvent event;
  event.timestamp = RecompileTimestampNow();
  event.trigger = trigger;
  event.policy = options_.policy;
  for (size_t i = 0; i < values.size(); ++i) event.symbols.push_back({slots[i], values[i]});
  absl::flat_hash_set<std::string> in_core;
  for (const EntryMiss& m : misses) {
    TriedEntry tried{m.entry->id, m.entry->tier, {}, {}};
    std::vector<Predicate> atoms;
    for (const GuardAtom& g : m.entry->guards) {
      tried.guards.push_back(g.predicate.ToString());
      atoms.push_back(g.predicate);
    }
    for (size_t a : m.failing) tried.failing.push_back(Record(m.entry->guards[a]));
    event.tried.push_back(std::move(tried));
    if (m.failing.empty()) continue;
    // The event's core: the union of each tried entry's minimal core.
    UnsatCoreResult core = z3.UnsatCore(atoms, at);
    const std::vector<size_t>& indices = core.verdict == Verdict::kProven ? core.core : m.failing;
    for (size_t a : indices) {
      AtomRecord r = Record(m.entry->guards[a]);
      if (in_core.insert(absl::StrCat(r.atom, "\n", ProvenanceText(r.provenance))).second) event.unsat_core.push_back(r);
    }
  }
  event.new_tier = entry_tier;
  for (const GuardAtom& g : compiled->guards) event.new_guards.push_back(Record(g));
  event.compile_ms = compiled->compile_ms;
  event.cost = cost;

  absl::StatusOr<std::shared_ptr<const CacheEntry>> entry =
      cache_.Insert(entry_tier, std::move(compiled->guards), std::move(compiled->artifact), spec,
                    std::move(compiled->serves));
  FinishRemote(claim, spec, entry.ok() ? *entry : nullptr);
  if (!entry.ok()) return entry.status();
  event.new_entry_id = (*entry)->id;
  int64_t removed = 0;
  for (int64_t id : SubsumedEntries(env_->DomainPredicate(), **entry, cache_.entries(), z3)) {
    removed += cache_.Remove(id) ? 1 : 0;
  }
  {
    absl::MutexLock lock(&mu_);
    ++stats_.compiles;
    stats_.llvm_compiles += llvm_compiles;
    ++stats_.compiles_by_tier[static_cast<int>(entry_tier)];
    ++stats_.compiles_by_trigger[static_cast<int>(trigger)];
    stats_.compile_ms_total += event.compile_ms;
    stats_.entries_removed += removed;
    if (trigger == RecompileTrigger::kMiss) ++stats_.misses;
    event.sequence = static_cast<int64_t>(events_.size()) + 1;
    // Appended under the lock so the log's lines are in sequence order.
    if (options_.log != nullptr && !options_.log->Append(event).ok()) ++stats_.log_errors;
    events_.push_back(std::move(event));
  }
  if (disk_ != nullptr) SaveManifest();
  return entry;
}

DispatcherStats Dispatcher::stats() const {
  DispatcherStats s;
  {
    absl::MutexLock lock(&mu_);
    s = stats_;
  }
  s.packed_weight_copies = packed_weights_->copies();
  s.packed_weight_bytes = packed_weights_->bytes();
  return s;
}

std::vector<RecompileEvent> Dispatcher::events() const {
  absl::MutexLock lock(&mu_);
  return events_;
}

SpecializationMetrics Dispatcher::Metrics() const {
  const DispatcherStats s = stats();
  SpecializationMetrics m;
  m.requests = requests_.load(std::memory_order_relaxed);
  m.hits = hits_.load(std::memory_order_relaxed);
  m.hit_rate = m.requests > 0 ? static_cast<double>(m.hits) / static_cast<double>(m.requests) : 0;
  m.misses = s.misses;
  m.compiles = s.compiles;
  m.compiles_polymorphic = s.compiles_by_tier[static_cast<int>(Tier::kPolymorphic)];
  m.compiles_bucketed = s.compiles_by_tier[static_cast<int>(Tier::kBucketed)];
  m.compiles_static = s.compiles_by_tier[static_cast<int>(Tier::kStatic)];
  m.compiles_initial = s.compiles_by_trigger[static_cast<int>(RecompileTrigger::kInitial)];
  m.compiles_miss = s.compiles_by_trigger[static_cast<int>(RecompileTrigger::kMiss)];
  m.compiles_tier_up = s.compiles_by_trigger[static_cast<int>(RecompileTrigger::kTierUp)];
  m.compile_ms_total = s.compile_ms_total;
  m.guard_eval_ms_total = static_cast<double>(guard_eval_ns_.load(std::memory_order_relaxed)) / 1e6;
  const int64_t first = first_request_ns_.load(std::memory_order_relaxed);
  m.first_request_ms = first < 0 ? 0 : static_cast<double>(first) / 1e6;
  m.tier_ups = s.tier_ups;
  m.tier_ups_reverted = s.tier_ups_reverted;
  m.limit_fallbacks = s.limit_fallbacks;
  m.limit_errors = s.limit_errors;
  m.entries = static_cast<int64_t>(cache_.size());
  m.cache_loads = s.cache_loads;
  m.cache_errors = s.cache_errors + (disk_ != nullptr ? disk_->stats().rejected : 0);
  m.llvm_compiles = s.llvm_compiles;
  m.remote_loads = s.remote_loads;
  m.remote_waits = s.remote_waits;
  m.remote_wait_timeouts = s.remote_wait_timeouts;
  if (remote_ != nullptr) {
    const persist::RemoteCacheStats r = remote_->stats();
    m.remote_hits = r.hits;
    m.remote_misses = r.misses;
    m.remote_refused = r.refused;
    m.remote_errors = r.errors;
    m.remote_too_large = r.too_large;
    m.remote_bytes_read = r.bytes_read;
    m.remote_bytes_written = r.bytes_written;
  }
  return m;
}

}  // namespace shapeshift::runtime
