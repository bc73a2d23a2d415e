// SpecializationCache: the compiled artifacts of one model, each keyed by the
// guard set under which it is valid, tried most specific first.
//
// Why keyed by guards and not by shape: an artifact is valid wherever the
// questions its compile asked have the same answers, which is usually a
// whole region of shapes (a bucket, or the entire domain), not one shape.
// The guards are the key; a request's symbol values find the first entry
// whose guards pass. Most specific first (static, then bucketed, then
// polymorphic; within a tier, more atoms first) so a request is served by
// the fastest artifact that is valid for it.
//
// The hot path (Find) binds nothing and allocates nothing: the caller passes
// the symbol values in slot order, each entry's guards are a GuardProgram
// compiled over the same slots, and the result is a shared_ptr copy (an
// atomic increment). Exact-shape entries (the static tier: every slot
// pinned) are the most specific possible — their region is one point — so
// they come first and are found by one hash probe on the values, however
// many shapes a static workload has compiled; the other entries are
// evaluated in order. The slow path (ExplainMiss) re-evaluates the atoms one
// by one to list every failing atom with its provenance.
//
// Thread-safety: all methods may be called concurrently. Readers take no
// lock: the entries live in an immutable snapshot that writers (Insert,
// Remove: rare, serialized by a mutex) copy, change and publish atomically,
// so Find costs an atomic shared_ptr load instead of a reader lock. Entries
// are immutable and reference counted, so a request keeps running on an
// entry that was since removed.
#ifndef SHAPESHIFT_RUNTIME_SPECIALIZATION_SPECIALIZATION_CACHE_H_
#define SHAPESHIFT_RUNTIME_SPECIALIZATION_SPECIALIZATION_CACHE_H_

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
#include "runtime/program.h"
#include "runtime/specialization/entry_spec.h"
#include "runtime/specialization/policy.h"
#include "runtime/specialization/shape_key.h"
#include "shapes/guard_program.h"
#include "shapes/shape_env.h"
#include "shapes/symbol_facts.h"

namespace shapeshift::runtime {

// One compiled Program with the graph and ShapeEnv it points into (Program
// requires both to outlive it; members are destroyed program first).
struct SpecializedArtifact {
  std::unique_ptr<Graph> graph;
  std::unique_ptr<ShapeEnv> env;
  std::unique_ptr<Program> program;
};

struct CacheEntry {
  int64_t id = 0;
  Tier tier = Tier::kPolymorphic;
  std::vector<GuardAtom> guards;  // a conjunction; empty = the whole domain
  GuardProgram guard_program;     // `guards` over the cache's slots
  // For an exact-shape entry (static, one `slot == c` pin per slot): the
  // pinned values in slot order; empty otherwise.
  std::vector<int64_t> exact_shape;
  std::shared_ptr<const SpecializedArtifact> artifact;
  // Per symbol the artifact's program binds (Program::bound_symbols()), the
  // cache slot holding its value: a request bound once by the dispatcher
  // runs with Program::RunBound. Fewer than the slots when a static entry's
  // pinned dims became constants.
  std::vector<int> program_slots;
  EntrySpec spec;  // what the compile was asked for (recompiles the same entry)
  // Per slot, the widest interval around the trigger where every guard
  // holds (generalize.h ServedIntervals); the declared ranges for an
  // ahead-of-time entry; empty when not computed.
  std::vector<Interval> serves;
};

// Why one entry rejected a request.
struct EntryMiss {
  std::shared_ptr<const CacheEntry> entry;
  std::vector<size_t> failing;  // indices into entry->guards, in order
};

class SpecializationCache {
 public:
  // `slots`: the model's symbols in the order requests bind them.
  explicit SpecializationCache(std::vector<std::string> slots);

  const std::vector<std::string>& slots() const { return slots_; }

  // Adds an entry; its guards may only mention slot symbols (an error names
  // the atom otherwise). Returns the new entry (its id is assigned here).
  absl::StatusOr<std::shared_ptr<const CacheEntry>> Insert(Tier tier, std::vector<GuardAtom> guards,
                                                           std::shared_ptr<const SpecializedArtifact> artifact,
                                                           EntrySpec spec = {}, std::vector<Interval> serves = {});
  // Removes an entry (e.g. subsumed by another); false when absent.
  bool Remove(int64_t id);

  // The most specific entry whose guards pass, or nullptr.
  std::shared_ptr<const CacheEntry> Find(absl::Span<const int64_t> slot_values) const;
  // Every entry (most specific first) with all of its atoms that fail at
  // `slot_values`; entries that pass are listed with no failing atoms.
  std::vector<EntryMiss> ExplainMiss(absl::Span<const int64_t> slot_values) const;
  // A snapshot of the entries, most specific first.
  std::vector<std::shared_ptr<const CacheEntry>> entries() const;
  size_t size() const;

 private:
  // What Find reads, published whole.
  struct Snapshot {
    std::vector<std::shared_ptr<const CacheEntry>> entries;  // most specific first
    // Exact-shape entries by their values (the oldest per shape).
    ShapeKeyMap<std::shared_ptr<const CacheEntry>> exact;
  };

  const std::vector<std::string> slots_;
  absl::Mutex mu_;  // serializes writers
  std::atomic<std::shared_ptr<const Snapshot>> snapshot_;
  int64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace shapeshift::runtime

#endif  // SHAPESHIFT_RUNTIME_SPECIALIZATION_SPECIALIZATION_CACHE_H_
