#include "shapes/analysis_prover.h"

namespace shapeshift {
namespace {

// The interval of a - b from the two sides' intervals (in 128 bits).
struct WideInterval {
  __int128 lo, hi;
};
WideInterval Difference(Interval a, Interval b) {
  return {__int128{a.lo} - b.hi, __int128{a.hi} - b.lo};
}

// Decides `d op 0` from an interval of d.
std::optional<bool> DecideSign(PredKind kind, __int128 lo, __int128 hi) {
  switch (kind) {
    case PredKind::kEq:
      if (lo == 0 && hi == 0) return true;
      if (lo > 0 || hi < 0) return false;
      return std::nullopt;
    case PredKind::kNe:
      if (lo > 0 || hi < 0) return true;
      if (lo == 0 && hi == 0) return false;
      return std::nullopt;
    case PredKind::kLt:
      if (hi < 0) return true;
      if (lo >= 0) return false;
      return std::nullopt;
    case PredKind::kLe:
      if (hi <= 0) return true;
      if (lo > 0) return false;
      return std::nullopt;
    case PredKind::kGt:
      if (lo > 0) return true;
      if (hi <= 0) return false;
      return std::nullopt;
    case PredKind::kGe:
      if (lo >= 0) return true;
      if (hi < 0) return false;
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

}  // namespace

std::optional<bool> AnalysisProver::Prove(const Predicate& p) {
  if (facts_->contradictory()) return std::nullopt;  // vacuous: let Z3 report it
  switch (p.kind()) {
    case PredKind::kTrue:
      return true;
    case PredKind::kFalse:
      return false;
    case PredKind::kNot: {
      std::optional<bool> v = Prove(p.children()[0]);
      if (!v) return std::nullopt;
      return !*v;
    }
    case PredKind::kAnd:
    case PredKind::kOr: {
      const bool is_and = p.kind() == PredKind::kAnd;
      bool all_decided = true;
      for (const Predicate& c : p.children()) {
        std::optional<bool> v = Prove(c);
        if (!v) {
          all_decided = false;
        } else if (*v != is_and) {
          return !is_and;  // a false conjunct / a true disjunct decides
        }
      }
      if (all_decided) return is_and;
      return std::nullopt;
    }
    case PredKind::kDivisible:
      return ProveDivisible(p.lhs(), *p.rhs().AsConst());
    default:
      return ProveComparison(p);
  }
}

std::optional<bool> AnalysisProver::ProveComparison(const Predicate& p) {
  // The difference's own bounds see cancellations; the sides' bounds see
  // what the difference's canonical form loses (e.g. through min/max).
  // The difference is only trusted when no bound in it saturated: it is not
  // itself evaluated by the predicate, so it may overflow where the sides
  // do not.
  SymExpr diff = p.lhs() - p.rhs();
  Interval d = ranges_.Bounds(diff);
  if (!ranges_.Saturated(diff)) {
    if (std::optional<bool> v = DecideSign(p.kind(), d.lo, d.hi)) return v;
  }
  WideInterval w = Difference(ranges_.Bounds(p.lhs()), ranges_.Bounds(p.rhs()));
  if (std::optional<bool> v = DecideSign(p.kind(), w.lo, w.hi)) return v;
  if (p.kind() == PredKind::kEq || p.kind() == PredKind::kNe) {
    Congruence c = congruences_.Of(diff);
    if (c.modulus != 1 && c.residue != 0) return p.kind() == PredKind::kNe;
  }
  return std::nullopt;
}

std::optional<bool> AnalysisProver::ProveDivisible(SymExpr e, int64_t divisor) {
  if (divisor < 0) divisor = -divisor;  // sign does not change divisibility
  if (divisor <= 0) return std::nullopt;
  Congruence c = congruences_.Of(e);
  if (c.modulus == 0) return FloorModInt(c.residue, divisor) == 0;
  if (c.modulus % divisor == 0) return c.residue % divisor == 0;
  Interval r = ranges_.Bounds(e);
  if (r.IsPoint()) return FloorModInt(r.lo, divisor) == 0;
  // No multiple of the divisor inside [lo, hi]: floor(hi/k) < ceil(lo/k).
  const __int128 k = divisor;
  auto floor_div = [](__int128 a, __int128 b) {
    __int128 q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;  // b > 0 here
  };
  if (floor_div(r.hi, k) < -floor_div(-__int128{r.lo}, k)) return false;
  return std::nullopt;
}

}  // namespace shapeshift
