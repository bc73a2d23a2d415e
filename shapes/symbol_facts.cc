#include "shapes/symbol_facts.h"

#include <algorithm>
#include <numeric>

namespace shapeshift {

Congruence Congruence::Make(int64_t modulus, int64_t residue) {
  if (modulus < 0) modulus = -modulus;  // callers never pass INT64_MIN
  if (modulus == 0) return {0, residue};
  return {modulus, FloorModInt(residue, modulus)};
}

void SymbolFacts::Declare(absl::string_view name, int64_t lo, int64_t hi) {
  Tighten(std::string(name), Interval{lo, hi});
}

void SymbolFacts::Tighten(const std::string& name, Interval range) {
  Facts& f = facts_[name];
  f.range.lo = std::max(f.range.lo, range.lo);
  f.range.hi = std::min(f.range.hi, range.hi);
  if (f.range.IsEmpty() || Get(name).range.IsEmpty()) contradictory_ = true;
}

void SymbolFacts::AddCongruence(const std::string& name, int64_t modulus) {
  Facts& f = facts_[name];
  Congruence& c = f.congruence;
  if (c.modulus == 1) {
    c = Congruence::Make(modulus, 0);
  } else if (c.modulus > 0 && c.residue == 0) {
    // x ≡ 0 (mod m1) and x ≡ 0 (mod m2)  <=>  x ≡ 0 (mod lcm); keep the
    // stronger fact if the lcm would overflow.
    int64_t g = std::gcd(c.modulus, modulus);
    int64_t lcm;
    if (!__builtin_mul_overflow(c.modulus / g, modulus, &lcm)) c.modulus = lcm;
  }
  if (Get(name).range.IsEmpty()) contradictory_ = true;
}

void SymbolFacts::Assume(const Predicate& fact) {
  if (fact.kind() == PredKind::kAnd) {
    for (const Predicate& c : fact.children()) Assume(c);
    return;
  }
  if (fact.kind() == PredKind::kFalse) {
    contradictory_ = true;
    return;
  }
  if (!fact.IsAtom() || !fact.lhs().IsSymbol()) return;
  const std::string& name = fact.lhs().symbol_name();
  std::optional<int64_t> c = fact.rhs().AsConst();
  if (!c) return;
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  switch (fact.kind()) {
    case PredKind::kEq:
      Tighten(name, Interval::Point(*c));
      return;
    case PredKind::kLt:
      if (*c == kMin) {
        contradictory_ = true;
      } else {
        Tighten(name, {kMin, *c - 1});
      }
      return;
    case PredKind::kLe:
      Tighten(name, {kMin, *c});
      return;
    case PredKind::kGt:
      if (*c == kMax) {
        contradictory_ = true;
      } else {
        Tighten(name, {*c + 1, kMax});
      }
      return;
    case PredKind::kGe:
      Tighten(name, {*c, kMax});
      return;
    case PredKind::kNe: {
      Interval r = Get(name).range;
      if (r.lo == *c && r.lo != kMax) Tighten(name, {r.lo + 1, kMax});
      if (r.hi == *c && r.hi != kMin) Tighten(name, {kMin, r.hi - 1});
      return;
    }
    case PredKind::kDivisible:
      if (*c > 0) AddCongruence(name, *c);
      return;
    default:
      return;
  }
}

SymbolFacts::Facts SymbolFacts::Get(absl::string_view name) const {
  auto it = facts_.find(name);
  if (it == facts_.end()) return Facts{};
  Facts f = it->second;
  const Congruence& c = f.congruence;
  if (c.modulus > 1 && !f.range.IsEmpty()) {
    // Round lo up and hi down to the nearest values ≡ residue (mod modulus),
    // in 128-bit arithmetic so extreme bounds cannot overflow.
    __int128 lo = f.range.lo, hi = f.range.hi, m = c.modulus, r = c.residue;
    __int128 lo_off = ((r - lo) % m + m) % m;
    __int128 hi_off = ((hi - r) % m + m) % m;
    lo += lo_off;
    hi -= hi_off;
    if (lo > hi) {
      f.range = {1, 0};
    } else {
      f.range = {static_cast<int64_t>(lo), static_cast<int64_t>(hi)};
    }
  }
  return f;
}

}  // namespace shapeshift
