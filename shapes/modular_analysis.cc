#include "shapes/modular_analysis.h"

#include <limits>
#include <numeric>
#include <optional>
#include <string>

#include "shapes/sym_expr_visitor.h"

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

namespace {

// One node's congruence from its operands' (memoized by the analysis).
class NodeCongruence final : public SymExprVisitor<Congruence> {
 public:
  NodeCongruence(ModularAnalysis& analysis, const SymbolFacts& facts) : analysis_(analysis), facts_(facts) {}

 private:
  Congruence VisitConst(const SymExpr&, int64_t value) override { return Congruence::Exactly(value); }
  Congruence VisitSymbol(const SymExpr&, const std::string& name) override {
    SymbolFacts::Facts f = facts_.Get(name);
    if (f.range.IsPoint()) return Congruence::Exactly(f.range.lo);
    return f.congruence;
  }
  Congruence VisitAdd(const SymExpr&, absl::Span<const SymExpr> terms) override {
    Congruence sum = Congruence::Exactly(0);
    for (SymExpr op : terms) sum = AddCongruences(sum, analysis_.Of(op));
    return sum;
  }
  Congruence VisitMul(const SymExpr&, absl::Span<const SymExpr> factors) override {
    Congruence product = Congruence::Exactly(1);
    for (SymExpr op : factors) product = MulCongruences(product, analysis_.Of(op));
    return product;
  }
  Congruence VisitMin(const SymExpr&, const SymExpr& a, const SymExpr& b) override {
    return UnionCongruences(analysis_.Of(a), analysis_.Of(b));
  }
  Congruence VisitMax(const SymExpr&, const SymExpr& a, const SymExpr& b) override {
    return UnionCongruences(analysis_.Of(a), analysis_.Of(b));
  }
  Congruence VisitFloorDiv(const SymExpr&, const SymExpr& a, const SymExpr& b) override {
    std::optional<int64_t> d = b.AsConst();
    if (!d || *d <= 0) return Congruence::Unknown();
    Congruence x = analysis_.Of(a);
    if (x.modulus == 0) return Congruence::Exactly(FloorDivInt(x.residue, *d));
    // (d*k*i + r) // d == k*i + r // d  when d divides the modulus.
    if (x.modulus % *d != 0) return Congruence::Unknown();
    return Congruence::Make(x.modulus / *d, FloorDivInt(x.residue, *d));
  }
  Congruence VisitMod(const SymExpr&, const SymExpr& a, const SymExpr& b) override {
    std::optional<int64_t> d = b.AsConst();
    if (!d || *d <= 0) return Congruence::Unknown();
    Congruence x = analysis_.Of(a);
    if (x.modulus == 0) return Congruence::Exactly(FloorModInt(x.residue, *d));
    // x - d*q ≡ x (mod gcd(m, d)); exact when d divides m.
    int64_t g = std::gcd(x.modulus, *d);
    if (g == *d) return Congruence::Exactly(FloorModInt(x.residue, *d));
    return Congruence::Make(g, x.residue);
  }

  ModularAnalysis& analysis_;
  const SymbolFacts& facts_;
};

}  // namespace

Congruence ModularAnalysis::Compute(SymExpr e) { return NodeCongruence(*this, *facts_).Visit(e); }

}  // namespace shapeshift
