#include "shapes/modular_analysis.h"

#include <limits>
#include <numeric>
#include <optional>

namespace shapeshift {
namespace {

using Wide = __int128;

Wide GcdWide(Wide a, Wide b) {
  if (a < 0) a = -a;
  if (b < 0) b = -b;
  while (b != 0) {
    Wide t = a % b;
    a = b;
    b = t;
  }
  return a;
}

// Builds a congruence from 128-bit parts; moduli that do not fit int64 are
// weakened to "unknown", which is always sound.
Congruence FromWide(Wide modulus, Wide residue) {
  constexpr Wide kMax = std::numeric_limits<int64_t>::max();
  if (modulus < 0) modulus = -modulus;
  if (modulus == 0) {
    if (residue > kMax || residue < -kMax - 1) return Congruence::Unknown();
    return Congruence::Exactly(static_cast<int64_t>(residue));
  }
  if (modulus > kMax) return Congruence::Unknown();
  Wide r = ((residue % modulus) + modulus) % modulus;
  return Congruence::Make(static_cast<int64_t>(modulus), static_cast<int64_t>(r));
}

Congruence AddCongruences(Congruence a, Congruence b) {
  return FromWide(GcdWide(a.modulus, b.modulus), Wide{a.residue} + b.residue);
}

// (m1*i + r1)(m2*j + r2) = m1*m2*i*j + m1*r2*i + m2*r1*j + r1*r2.
Congruence MulCongruences(Congruence a, Congruence b) {
  Wide m = GcdWide(GcdWide(Wide{a.modulus} * b.modulus, Wide{a.modulus} * b.residue),
                   Wide{b.modulus} * a.residue);
  return FromWide(m, Wide{a.residue} * b.residue);
}

// Both values are in one of the two classes: the classes' common refinement.
Congruence UnionCongruences(Congruence a, Congruence b) {
  Wide m = GcdWide(GcdWide(a.modulus, b.modulus), Wide{a.residue} - b.residue);
  return FromWide(m, a.residue);
}

}  // namespace

Congruence ModularAnalysis::Of(SymExpr e) {
  if (auto c = e.AsConst()) return Congruence::Exactly(*c);
  auto it = memo_.find(e);
  if (it != memo_.end()) return it->second;
  Congruence r = Compute(e);
  memo_.emplace(e, r);
  return r;
}

Congruence ModularAnalysis::Compute(SymExpr e) {
  switch (e.kind()) {
    case ExprKind::kConst:
      return Congruence::Exactly(*e.AsConst());
    case ExprKind::kSymbol: {
      SymbolFacts::Facts f = facts_->Get(e.symbol_name());
      if (f.range.IsPoint()) return Congruence::Exactly(f.range.lo);
      return f.congruence;
    }
    case ExprKind::kAdd: {
      Congruence sum = Congruence::Exactly(0);
      for (SymExpr op : e.operands()) sum = AddCongruences(sum, Of(op));
      return sum;
    }
    case ExprKind::kMul: {
      Congruence product = Congruence::Exactly(1);
      for (SymExpr op : e.operands()) product = MulCongruences(product, Of(op));
      return product;
    }
    case ExprKind::kMin:
    case ExprKind::kMax:
      return UnionCongruences(Of(e.operands()[0]), Of(e.operands()[1]));
    case ExprKind::kFloorDiv:
    case ExprKind::kMod:
      break;
  }
  std::optional<int64_t> d = e.operands()[1].AsConst();
  if (!d || *d <= 0) return Congruence::Unknown();
  Congruence a = Of(e.operands()[0]);
  if (a.modulus == 0) {
    return Congruence::Exactly(e.kind() == ExprKind::kMod ? FloorModInt(a.residue, *d)
                                                          : FloorDivInt(a.residue, *d));
  }
  if (e.kind() == ExprKind::kFloorDiv) {
    // (d*k*i + r) // d == k*i + r // d  when d divides the modulus.
    if (a.modulus % *d != 0) return Congruence::Unknown();
    return Congruence::Make(a.modulus / *d, FloorDivInt(a.residue, *d));
  }
  // x - d*q ≡ x (mod gcd(m, d)); exact when d divides m.
  int64_t g = std::gcd(a.modulus, *d);
  if (g == *d) return Congruence::Exactly(FloorModInt(a.residue, *d));
  return Congruence::Make(g, a.residue);
}

}  // namespace shapeshift
