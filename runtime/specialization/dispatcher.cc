#include "runtime/specialization/dispatcher.h"

#include <chrono>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/specialization/generalize.h"
#include "shapes/z3_bridge.h"

namespace shapeshift::runtime {
namespace {

// Requests bind at most this many symbols without allocating.
constexpr size_t kInlineSlots = 16;
// At the limit, the error lists this many entries' failing atoms.
constexpr size_t kEntriesInLimitError = 4;

std::string Origin(const Provenance& p) {
  return absl::StrCat(p.pass, p.node.empty() ? "" : absl::StrCat(" at node '", p.node, "'"), ": ", p.reason);
}

AtomRecord Record(const GuardAtom& atom) { return AtomRecord{atom.predicate.ToString(), atom.provenance}; }

std::string ValuesText(absl::Span<const std::string> slots, absl::Span<const int64_t> values) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < slots.size() && i < values.size(); ++i) parts.push_back(absl::StrCat(slots[i], "=", values[i]));
  return absl::StrJoin(parts, " ");
}

}  // namespace

Dispatcher::Dispatcher(std::unique_ptr<Graph> graph, std::unique_ptr<ShapeEnv> env, DispatcherOptions options,
                       std::vector<std::string> slots, std::vector<Binding> bindings)
    : graph_(std::move(graph)),
      env_(std::move(env)),
      options_(std::move(options)),
      bindings_(std::move(bindings)),
      cache_(std::move(slots)) {}

Dispatcher::~Dispatcher() = default;

absl::StatusOr<std::unique_ptr<Dispatcher>> Dispatcher::Create(std::unique_ptr<Graph> graph,
                                                               std::unique_ptr<ShapeEnv> env,
                                                               DispatcherOptions options) {
  if (graph == nullptr || env == nullptr) return absl::InvalidArgumentError("Dispatcher needs a graph and a ShapeEnv");
  if (options.recompile_limit < 0) return absl::InvalidArgumentError("recompile limit must be >= 0");
  // A symbol is bound by the first input dim that is exactly that symbol
  // (the same rule Program::Run uses).
  std::vector<std::string> slots;
  std::vector<Binding> bindings;
  absl::flat_hash_set<std::string> bound;
  for (size_t i = 0; i < graph->inputs().size(); ++i) {
    const std::vector<SymExpr>& shape = graph->inputs()[i]->type().shape;
    for (size_t k = 0; k < shape.size(); ++k) {
      if (!shape[k].IsSymbol() || !bound.insert(shape[k].symbol_name()).second) continue;
      const SymbolInfo* info = env->FindSymbol(shape[k].symbol_name());
      if (info == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat("input '", graph->inputs()[i]->name(), "' dim ", k,
                                                       ": symbol '", shape[k].symbol_name(), "' is not declared"));
      }
      slots.push_back(info->name);
      bindings.push_back({static_cast<int>(i), static_cast<int>(k), info->min, info->max});
    }
  }
  if (slots.size() > kInlineSlots) {
    return absl::UnimplementedError(absl::StrCat("the dispatcher binds at most ", kInlineSlots,
                                                 " dynamic dims; the model has ", slots.size()));
  }
  std::unique_ptr<Dispatcher> d(
      new Dispatcher(std::move(graph), std::move(env), std::move(options), std::move(slots), std::move(bindings)));
  if (d->options_.policy == SpecializationPolicy::kPolymorphic || d->options_.policy == SpecializationPolicy::kAuto) {
    {
      absl::MutexLock lock(&d->mu_);
      d->initial_claimed_ = true;
    }
    absl::StatusOr<std::shared_ptr<const CacheEntry>> entry =
        d->CompileEntry(Tier::kPolymorphic, RecompileTrigger::kInitial, {}, {});
    if (!entry.ok()) return entry.status();
  }
  return d;
}

absl::Status Dispatcher::Bind(absl::Span<const TensorView> inputs, absl::Span<int64_t> values) const {
  const std::vector<Value*>& declared = graph_->inputs();
  if (inputs.size() != declared.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected ", declared.size(), " inputs, got ", inputs.size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].shape.size() != declared[i]->type().shape.size()) {
      return absl::InvalidArgumentError(absl::StrCat("input '", declared[i]->name(), "': expected rank ",
                                                     declared[i]->type().shape.size(), ", got ",
                                                     inputs[i].shape.size()));
    }
  }
  for (size_t s = 0; s < bindings_.size(); ++s) {
    const Binding& b = bindings_[s];
    const int64_t v = inputs[b.input].shape[b.dim];
    if (v < b.min || v > b.max) {
      return absl::OutOfRangeError(absl::StrCat("input '", declared[b.input]->name(), "' dim ", b.dim, " (",
                                                cache_.slots()[s], ") = ", v, " is outside the declared range ",
                                                b.min, "..", b.max));
    }
    values[s] = v;
  }
  return absl::OkStatus();
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

std::string Dispatcher::CompileKey(Tier tier, absl::Span<const int64_t> values) const {
  if (tier == Tier::kPolymorphic) return TierName(tier);
  return absl::StrCat(TierName(tier), ":", absl::StrJoin(values, ","));
}

absl::StatusOr<std::shared_ptr<const CacheEntry>> Dispatcher::Acquire(absl::Span<const TensorView> inputs) {
  int64_t storage[kInlineSlots];
  absl::Span<int64_t> values(storage, bindings_.size());
  if (absl::Status s = Bind(inputs, values); !s.ok()) return s;
  if (std::shared_ptr<const CacheEntry> hit = cache_.Find(values)) return hit;

  mu_.Lock();
  for (;;) {
    if (std::shared_ptr<const CacheEntry> hit = cache_.Find(values)) {
      mu_.Unlock();
      return hit;
    }
    const bool initial = !initial_claimed_;
    const Tier tier = PolicyTier();
    const std::string key = CompileKey(tier, values);
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
        CompileEntry(tier, initial ? RecompileTrigger::kInitial : RecompileTrigger::kMiss, values, misses);
    mu_.Lock();
    flight->done = true;
    flight->status = entry.status();
    in_flight_.erase(key);
    compile_done_.SignalAll();
    mu_.Unlock();
    return entry;
  }
}

absl::StatusOr<std::vector<Tensor>> Dispatcher::Run(absl::Span<const TensorView> inputs, ExecutionContext& context) {
  absl::StatusOr<std::shared_ptr<const CacheEntry>> entry = Acquire(inputs);
  if (!entry.ok()) return entry.status();
  return (*entry)->artifact->program->Run(inputs, context);
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
      const GuardAtom& atom = m.entry->guards[a];
      failing.push_back(absl::StrCat(atom.predicate.ToString(), " [asked by ", Origin(atom.provenance), "]"));
    }
    reasons.push_back(absl::StrCat("entry #", m.entry->id, " (", TierName(m.entry->tier),
                                   ") fails ", absl::StrJoin(failing, ", ")));
  }
  if (misses.size() > kEntriesInLimitError) reasons.push_back(absl::StrCat(misses.size() - kEntriesInLimitError, " more"));
  return absl::ResourceExhaustedError(absl::StrCat(
      "recompile limit (", options_.recompile_limit, ") reached and no compiled entry serves ",
      ValuesText(cache_.slots(), values), " (no polymorphic entry covers it): ", absl::StrJoin(reasons, "; ")));
}

absl::StatusOr<std::shared_ptr<const CacheEntry>> Dispatcher::CompileEntry(Tier tier, RecompileTrigger trigger,
                                                                           absl::Span<const int64_t> values,
                                                                           const std::vector<EntryMiss>& misses) {
  const std::vector<std::string>& slots = cache_.slots();
  Assignment at;
  for (size_t i = 0; i < values.size(); ++i) at[slots[i]] = values[i];

  // A fresh copy of the model whose env specializes under the tier's policy,
  // with the trigger's values as hints.
  auto artifact = std::make_shared<SpecializedArtifact>();
  artifact->graph = graph_->Clone();
  artifact->env = std::make_unique<ShapeEnv>();
  for (SymbolInfo info : env_->symbols()) {
    info.policy = SymbolPolicyFor(tier);
    if (auto it = at.find(info.name); it != at.end() && tier != Tier::kPolymorphic) info.hint = it->second;
    absl::StatusOr<SymExpr> declared = artifact->env->DeclareSymbol(info);
    if (!declared.ok()) return declared.status();
  }
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::unique_ptr<Program>> program =
      Program::Compile(*artifact->graph, *artifact->env, options_.compile);
  const double compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!program.ok()) {
    return absl::Status(program.status().code(), absl::StrCat("compiling a ", TierName(tier), " entry for ",
                                                              ValuesText(slots, values), ": ",
                                                              program.status().message()));
  }
  artifact->program = *std::move(program);

  // Pins first, so that the questions they imply are the atoms dropped.
  std::vector<GuardAtom> guards;
  if (tier == Tier::kStatic) {
    for (size_t i = 0; i < values.size(); ++i) {
      guards.push_back({Predicate::Eq(SymExpr::Symbol(slots[i]), SymExpr(values[i])),
                        Provenance{"dispatcher", "", "static policy pins every dim"}});
    }
  }
  for (const GuardAtom& g : artifact->env->guards()) guards.push_back(g);
  Z3Bridge z3(options_.z3_timeout_ms);
  absl::StatusOr<std::vector<GuardAtom>> kept = DropImpliedAtoms(env_->DomainPredicate(), std::move(guards), z3);
  if (!kept.ok()) return kept.status();
  for (const GuardAtom& g : *kept) {
    absl::StatusOr<bool> holds = g.predicate.Evaluate(at);
    if (!at.empty() && (!holds.ok() || !*holds)) {
      return absl::InternalError(absl::StrCat("the ", TierName(tier), " compile for ", ValuesText(slots, values),
                                              " recorded a guard that rejects that input: ", g.predicate.ToString(),
                                              " [asked by ", Origin(g.provenance), "]"));
    }
  }

  // A compile whose guards all turned out implied serves the whole domain:
  // whatever it was asked to specialize to, it is the polymorphic artifact.
  const Tier entry_tier = kept->empty() ? Tier::kPolymorphic : tier;

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
      if (in_core.insert(absl::StrCat(r.atom, "\n", Origin(r.provenance))).second) event.unsat_core.push_back(r);
    }
  }
  event.new_tier = entry_tier;
  for (const GuardAtom& g : *kept) event.new_guards.push_back(Record(g));
  event.compile_ms = compile_ms;

  absl::StatusOr<std::shared_ptr<const CacheEntry>> entry =
      cache_.Insert(entry_tier, *std::move(kept), std::move(artifact));
  if (!entry.ok()) return entry.status();
  event.new_entry_id = (*entry)->id;
  int64_t removed = 0;
  for (int64_t id : SubsumedEntries(env_->DomainPredicate(), **entry, cache_.entries(), z3)) {
    removed += cache_.Remove(id) ? 1 : 0;
  }
  {
    absl::MutexLock lock(&mu_);
    ++stats_.compiles;
    stats_.entries_removed += removed;
    if (trigger == RecompileTrigger::kMiss) ++stats_.misses;
    event.sequence = static_cast<int64_t>(events_.size()) + 1;
    // Appended under the lock so the log's lines are in sequence order.
    if (options_.log != nullptr && !options_.log->Append(event).ok()) ++stats_.log_errors;
    events_.push_back(std::move(event));
  }
  return entry;
}

DispatcherStats Dispatcher::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

std::vector<RecompileEvent> Dispatcher::events() const {
  absl::MutexLock lock(&mu_);
  return events_;
}

}  // namespace shapeshift::runtime
