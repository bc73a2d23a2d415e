// Guard generalization: after every compile, the new entry's guard set is
// reduced to the atoms that matter before it becomes a cache key.
//
// Why: a compile records every question a pass asked, and many are implied
// by the declared ranges or by another atom (once `seq == 37` is pinned,
// `seq <= 64` says nothing more). Implied atoms cost dispatch time on every
// request and clutter every explanation, so Z3 drops them; a contradictory
// set (no input could pass) is a compiler bug and an error, never an entry.
//
// Widening (ServedIntervals): the interval of each symbol around the trigger
// where every kept atom still holds. Which atoms it widens over decides
// soundness: a bucketed compile declares the bucket as the symbol's range,
// and facts the passes proved from that narrowed range were never recorded
// as questions, so the bucket bounds stay among the atoms and the result
// never leaves the bucket (see README, "Widening").
#ifndef SHAPESHIFT_RUNTIME_SPECIALIZATION_GENERALIZE_H_
#define SHAPESHIFT_RUNTIME_SPECIALIZATION_GENERALIZE_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "runtime/specialization/specialization_cache.h"
#include "shapes/predicate.h"
#include "shapes/shape_env.h"
#include "shapes/z3_bridge.h"

namespace shapeshift::runtime {

// The atoms of `atoms` not implied by `domain` and the atoms kept before
// them (greedy, in order: put the atoms that should survive first). When Z3
// cannot decide, every atom is kept (sound: the set only gets stricter).
// An error when the atoms contradict each other within the domain.
absl::StatusOr<std::vector<GuardAtom>> DropImpliedAtoms(const Predicate& domain, std::vector<GuardAtom> atoms,
                                                        Z3Bridge& z3);

// The ids of `entries` made redundant by `added`: an entry F is subsumed
// when every input it serves is also served by `added` (the domain and F's
// guards imply each of added's atoms) and F is no faster — a lower tier, or
// the same tier with exactly the same region. Removing them only saves
// dispatch time; a request already holding one keeps it (entries are
// reference counted). Undecided implications keep the entry.
std::vector<int64_t> SubsumedEntries(const Predicate& domain, const CacheEntry& added,
                                     absl::Span<const std::shared_ptr<const CacheEntry>> entries, Z3Bridge& z3);

// For each slot, the widest interval [lo, hi] around `at`'s value, within the
// declared range of `ranges` (one per slot), on which every atom of `guards`
// holds with the other slots fixed at their `at` values (Z3 optimize). A
// slot the solver cannot widen gets the single point. `at` empty (the
// ahead-of-time compile): the declared ranges.
std::vector<Interval> ServedIntervals(const std::vector<GuardAtom>& guards, const std::vector<std::string>& slots,
                                      absl::Span<const int64_t> at, const std::vector<Interval>& ranges,
                                      Z3Bridge& z3);

}  // namespace shapeshift::runtime

#endif  // SHAPESHIFT_RUNTIME_SPECIALIZATION_GENERALIZE_H_
