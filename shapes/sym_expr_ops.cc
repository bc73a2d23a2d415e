// Building SymExprs: + - * through the canonical polynomial form, and
// FloorDiv / Mod / Min / Max with local simplifications. Every rewrite here
// is exact under floor semantics for all integer values of the symbols
// (including negative ones), so it never needs range information; rewrites
// that need ranges belong to range analysis.
#include <optional>
#include <utility>

#include "shapes/internal/expr_node.h"
#include "shapes/internal/polynomial.h"
#include "shapes/sym_expr.h"

namespace shapeshift {

using internal::AddPolynomials;
using internal::FromPolynomial;
using internal::MulPolynomials;
using internal::Polynomial;
using internal::ToPolynomial;

namespace {

SymExpr Unexpanded(ExprKind kind, SymExpr a, SymExpr b) {
  return SymExprFactory::Make(kind, {a, b}, /*canonical=*/false);
}

// Splits `a` into the terms whose coefficient is a multiple of `divisor`
// (divided by it) and the remaining terms.
struct DivisibleSplit {
  Polynomial quotient;
  Polynomial rest;
};
DivisibleSplit SplitDivisibleTerms(SymExpr a, int64_t divisor) {
  DivisibleSplit split;
  for (const auto& [mono, coeff] : ToPolynomial(a)) {
    if (coeff % divisor == 0) {
      split.quotient[mono] = coeff / divisor;
    } else {
      split.rest[mono] = coeff;
    }
  }
  return split;
}

bool BothPositiveConsts(SymExpr a, SymExpr b) {
  return a.IsConst() && b.IsConst() && *a.AsConst() > 0 && *b.AsConst() > 0;
}

}  // namespace

SymExpr operator+(SymExpr a, SymExpr b) {
  if (auto c = a.AsConst(); c && *c == 0) return b;
  if (auto c = b.AsConst(); c && *c == 0) return a;
  std::optional<Polynomial> sum = AddPolynomials(ToPolynomial(a), ToPolynomial(b));
  if (!sum) return Unexpanded(ExprKind::kAdd, a, b);
  return FromPolynomial(*sum);
}

SymExpr operator*(SymExpr a, SymExpr b) {
  if (auto c = a.AsConst(); c && *c == 1) return b;
  if (auto c = b.AsConst(); c && *c == 1) return a;
  std::optional<Polynomial> product = MulPolynomials(ToPolynomial(a), ToPolynomial(b));
  if (!product) return Unexpanded(ExprKind::kMul, a, b);
  return FromPolynomial(*product);
}

SymExpr operator-(SymExpr a) { return SymExpr(-1) * a; }
SymExpr operator-(SymExpr a, SymExpr b) { return a + (-b); }

SymExpr FloorDiv(SymExpr a, SymExpr b) {
  std::optional<int64_t> d = b.AsConst();
  if (!d || *d == 0) return SymExprFactory::Make(ExprKind::kFloorDiv, {a, b});
  if (*d == 1) return a;
  if (*d == -1) return -a;
  if (auto n = a.AsConst()) return FloorDivInt(*n, *d);
  // (d*q + r) // d == q + r // d for every integer q.
  DivisibleSplit split = SplitDivisibleTerms(a, *d);
  if (!split.quotient.empty()) {
    SymExpr quotient = FromPolynomial(split.quotient);
    return quotient + FloorDiv(FromPolynomial(split.rest), b);
  }
  // (x // c1) // c2 == x // (c1*c2) for positive c1, c2.
  if (a.kind() == ExprKind::kFloorDiv && BothPositiveConsts(a.operands()[1], b)) {
    int64_t combined;
    if (!__builtin_mul_overflow(*a.operands()[1].AsConst(), *d, &combined)) {
      return FloorDiv(a.operands()[0], combined);
    }
  }
  return SymExprFactory::Make(ExprKind::kFloorDiv, {a, b});
}

SymExpr Mod(SymExpr a, SymExpr b) {
  std::optional<int64_t> d = b.AsConst();
  if (!d || *d == 0) return SymExprFactory::Make(ExprKind::kMod, {a, b});
  if (*d == 1 || *d == -1) return 0;
  if (auto n = a.AsConst()) return FloorModInt(*n, *d);
  // (d*q + r) % d == r % d.
  DivisibleSplit split = SplitDivisibleTerms(a, *d);
  if (!split.quotient.empty()) return Mod(FromPolynomial(split.rest), b);
  // (x % (k*c)) % c == x % c for positive c and k*c.
  if (a.kind() == ExprKind::kMod && BothPositiveConsts(a.operands()[1], b) &&
      *a.operands()[1].AsConst() % *d == 0) {
    return Mod(a.operands()[0], b);
  }
  return SymExprFactory::Make(ExprKind::kMod, {a, b});
}

namespace {

// Min and Max: equal operands collapse, a constant difference decides, and
// operands are ordered so min(a, b) and min(b, a) are one object.
SymExpr MinOrMax(ExprKind kind, SymExpr a, SymExpr b) {
  if (a == b) return a;
  const bool is_min = kind == ExprKind::kMin;
  if (auto diff = (a - b).AsConst()) {
    return (*diff <= 0) == is_min ? a : b;
  }
  if (b < a) std::swap(a, b);
  return SymExprFactory::Make(kind, {a, b});
}

}  // namespace

SymExpr Min(SymExpr a, SymExpr b) { return MinOrMax(ExprKind::kMin, a, b); }
SymExpr Max(SymExpr a, SymExpr b) { return MinOrMax(ExprKind::kMax, a, b); }

SymExpr CeilDiv(SymExpr a, SymExpr b) { return FloorDiv(a + b - 1, b); }

}  // namespace shapeshift
