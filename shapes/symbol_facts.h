// SymbolFacts: what the cheap analyses know about each symbol — an inclusive
// interval and a congruence — built from declared ranges and from simple
// assumed facts (`seq <= 128`, `seq % 16 == 0`).
//
// This is the knowledge base that range and modular analysis read. Facts it
// cannot express (relations between symbols, disjunctions) are simply not
// recorded here; the Z3 bridge sees them instead, so dropping them only costs
// precision, never soundness.
#ifndef SHAPESHIFT_SHAPES_SYMBOL_FACTS_H_
#define SHAPESHIFT_SHAPES_SYMBOL_FACTS_H_

#include <cstdint>
#include <limits>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "shapes/predicate.h"

namespace shapeshift {

// An inclusive integer interval. Bounds are int64: every value an expression
// can evaluate to without an overflow error lies in int64, so the full int64
// range means "nothing known".
struct Interval {
  int64_t lo = std::numeric_limits<int64_t>::min();
  int64_t hi = std::numeric_limits<int64_t>::max();

  static Interval Everything() { return {}; }
  static Interval Point(int64_t v) { return {v, v}; }
  bool IsEmpty() const { return lo > hi; }
  bool IsPoint() const { return lo == hi; }
  bool Contains(int64_t v) const { return lo <= v && v <= hi; }
  friend bool operator==(const Interval& a, const Interval& b) {
    return a.lo == b.lo && a.hi == b.hi;
  }
};

// x ≡ residue (mod modulus). modulus == 0 means x == residue exactly;
// modulus == 1 means nothing is known. For modulus > 0, 0 <= residue < modulus.
struct Congruence {
  int64_t modulus = 1;
  int64_t residue = 0;

  static Congruence Unknown() { return {}; }
  static Congruence Exactly(int64_t v) { return {0, v}; }
  // Normalizes the residue into [0, modulus).
  static Congruence Make(int64_t modulus, int64_t residue);
  friend bool operator==(const Congruence& a, const Congruence& b) {
    return a.modulus == b.modulus && a.residue == b.residue;
  }
};

class SymbolFacts {
 public:
  struct Facts {
    Interval range;
    Congruence congruence;
  };

  void Declare(absl::string_view name, int64_t lo, int64_t hi);
  // Records what `fact` says about single symbols (conjunctions of
  // `sym op const` and `sym % k == 0`); ignores what it cannot express.
  void Assume(const Predicate& fact);

  // Facts for `name`; everything-unknown for symbols never mentioned. The
  // range is tightened to the congruence (lo rounded up, hi down).
  Facts Get(absl::string_view name) const;
  // True when some symbol's facts admit no value: the facts contradict.
  bool contradictory() const { return contradictory_; }

 private:
  void Tighten(const std::string& name, Interval range);
  void AddCongruence(const std::string& name, int64_t modulus);

  absl::flat_hash_map<std::string, Facts> facts_;
  bool contradictory_ = false;
};

}  // namespace shapeshift

#endif  // SHAPESHIFT_SHAPES_SYMBOL_FACTS_H_
